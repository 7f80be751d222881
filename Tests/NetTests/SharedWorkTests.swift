import Glibc
import Synchronization
import Testing

@testable import Net

/// A list worked through by the thread that made it and any that joins:
/// every item done once, the results in the items' order, whoever did them.
@Suite struct SharedWorkTests {
    /// Which thread did each item (the thread's id), and how many times.
    final class Tally: Sendable {
        let done = Mutex<[Int: Int]>([:])

        func note(_ item: Int) {
            done.withLock { $0[item, default: 0] += 1 }
        }
    }

    @Test func theOwnerAloneDoesEveryItemInOrder() {
        let tally = Tally()
        let work = SharedWork(Array(0..<1000), chunk: 7) { item in
            tally.note(item)
            return item * 2
        }
        #expect(work.results() == (0..<1000).map { $0 * 2 })
        #expect(tally.done.withLock { $0.count == 1000 && $0.values.allSatisfy { $0 == 1 } })
    }

    @Test func anEmptyListHasNoResultsAndDoesNotWait() {
        let work = SharedWork([Int]()) { $0 }
        #expect(work.results().isEmpty)
    }

    /// Two helpers join while the owner works (each item slowed, so all
    /// three take chunks): each item is done once, the results keep their
    /// order, and more than one thread did some.
    @Test func helpersOnOtherThreadsShareTheItemsAndTheOrderHolds() {
        let tally = Tally()
        let threads = Mutex<Set<UInt>>([])
        let work = SharedWork(Array(0..<400), chunk: 3) { item in
            tally.note(item)
            threads.withLock { _ = $0.insert(UInt(pthread_self())) }
            usleep(200)
            return "item \(item)"
        }
        let helpers = (0..<2).map { _ in ThreadJob { work.help() } }
        #expect(work.results() == (0..<400).map { "item \($0)" })
        for helper in helpers { helper.wait() }
        #expect(tally.done.withLock { $0.count == 400 && $0.values.allSatisfy { $0 == 1 } })
        #expect(threads.withLock { $0.count } > 1)
    }

    /// A job that shares nothing lets the waiting thread go at once; one
    /// that shares work has the waiting thread do part of it.
    @Test func anOfferIsTakenUpOrDeclined() {
        let declined = WorkOffer()
        let quiet = ThreadJob { () -> Int in
            declined.offer(nil)
            return 5
        }
        declined.help()
        #expect(quiet.wait() == 5)

        let offer = WorkOffer()
        let waiter = UInt(pthread_self())
        let byWaiter = Atomic<Int>(0)
        let job = ThreadJob { () -> [Int] in
            let work = SharedWork(Array(0..<300), chunk: 2) { item in
                if UInt(pthread_self()) == waiter { byWaiter.add(1, ordering: .relaxed) }
                usleep(200)
                return item + 1
            }
            offer.offer { work.help() }
            return work.results()
        }
        offer.help()
        #expect(job.wait() == (1...300).map { $0 })
        #expect(byWaiter.load(ordering: .relaxed) > 0)
    }
}
