import Foundation
import Synchronization
import Testing

@testable import BrsyncServer

/// Writers of a SQLite store take the write lock in turn, account by
/// account: within an account in the order they came; across accounts, a
/// small push waits for the write in progress and one write of each other
/// account waiting, never for every write a flood queued before it.
@Suite struct WriterQueueTests {
    /// Writers started one after the other (each queued before the next
    /// starts), the first holding the lock until all are queued; the order
    /// they wrote in.
    static func order(of writers: [(name: String, account: Int64?)]) -> [String] {
        let queue = WriterQueue()
        let order = Mutex<[String]>([])
        let release = DispatchSemaphore(value: 0)
        // Bounded (a minute at most), not timed: a loaded machine only waits longer.
        func waitUntil(_ count: Int) {
            for _ in 0..<60_000 where queue.queued < count { usleep(1_000) }
            #expect(queue.queued == count)
        }
        let group = DispatchGroup()
        // A thread each (not the global queue, whose threads a loaded
        // machine hands out late): every writer is queued when it says so.
        for (index, writer) in writers.enumerated() {
            group.enter()
            Thread {
                queue.inTurn(account: writer.account) {
                    order.withLock { $0.append(writer.name) }
                    if index == 0 { release.wait() }
                }
                group.leave()
            }.start()
            waitUntil(index + 1)
        }
        release.signal()
        #expect(group.wait(timeout: .now() + 60) == .success)
        #expect(queue.queued == 0)
        return order.withLock { $0 }
    }

    @Test func oneAccountsWritersGoInTheOrderTheyCame() {
        let writers: [(String, Int64?)] = [("first", 1), ("second", 1), ("third", 1), ("fourth", 1)]
        #expect(Self.order(of: writers) == ["first", "second", "third", "fourth"])
    }

    @Test func anotherAccountsWriteGoesBeforeAFloodQueuedAheadOfIt() {
        // Account 1 floods (one writing, three queued); account 2's one
        // write, and then the writes of no account, go next, then the flood.
        let writers: [(String, Int64?)] = [
            ("flood 1", 1), ("flood 2", 1), ("flood 3", 1), ("flood 4", 1), ("quiet", 2), ("admin", nil),
            ("flood 5", 1),
        ]
        #expect(
            Self.order(of: writers) == ["flood 1", "quiet", "admin", "flood 2", "flood 3", "flood 4", "flood 5"])
    }

    @Test func accountsWithWritesWaitingTakeTurns() {
        let writers: [(String, Int64?)] = [
            ("a1", 1), ("a2", 1), ("a3", 1), ("b1", 2), ("b2", 2), ("c1", 3), ("a4", 1),
        ]
        #expect(Self.order(of: writers) == ["a1", "b1", "c1", "a2", "b2", "a3", "a4"])
    }
}

/// An account's time holding the write lock, metered while others write
/// (microseconds of a clock the test keeps).
@Suite struct WriteShareTests {
    /// `account` writes back to back from `from` for `for`, in writes of `each`.
    static func flood(
        _ meter: inout WriteShare, account: Int64, from: Int64, for duration: Int64, each: Int64 = 5_000
    )
        -> Int64
    {
        var now = from
        while now < from + duration {
            meter.wrote(account: account, started: now, ended: now + each)
            now += each
        }
        return now
    }

    @Test func anAccountAloneIsNeverSlowed() {
        var meter = WriteShare()
        let end = Self.flood(&meter, account: 1, from: 0, for: 10_000_000)
        #expect(meter.delay(account: 1, now: end) == 0)
    }

    @Test func aFloodOverItsShareWaitsWhileAnotherAccountWrites() {
        var meter = WriteShare()
        meter.wrote(account: 2, started: 0, ended: 800)
        let end = Self.flood(&meter, account: 1, from: 1_000, for: 1_000_000)
        // A second of lock time against a burst of 0.25 s and 0.4 s earned:
        // 0.35 s overspent, of which a burst is owed, repaid at the share's rate.
        let delay = meter.delay(account: 1, now: end)
        #expect(delay == Int64(Double(meter.burstMicros) / meter.share), "\(delay)")
        #expect(meter.delay(account: 1, now: end + delay / 2) > 0)
        #expect(meter.delay(account: 1, now: end + delay) == 0)
        #expect(meter.delay(account: 2, now: end) == 0, "the quiet account never waits")
    }

    @Test func writesWithinTheShareNeverWait() {
        var meter = WriteShare()
        meter.wrote(account: 2, started: 0, ended: 500)
        var now: Int64 = 1_000
        for _ in 0..<2_000 {
            // 3 ms of every 10: a third of the time.
            #expect(meter.delay(account: 1, now: now) == 0)
            meter.wrote(account: 1, started: now, ended: now + 3_000)
            meter.wrote(account: 2, started: now + 4_000, ended: now + 4_500)
            now += 10_000
        }
    }

    @Test func theShareEndsWhenNoOtherAccountWroteForAWindow() {
        var meter = WriteShare()
        meter.wrote(account: 2, started: 0, ended: 500)
        let end = Self.flood(&meter, account: 1, from: 1_000, for: 11_000_000)
        #expect(meter.delay(account: 1, now: end) == 0)
    }

    @Test func writesOfNoAccountAreNeitherMeteredNorANeighbour() {
        var meter = WriteShare()
        meter.wrote(account: nil, started: 0, ended: 5_000_000)
        #expect(meter.delay(account: nil, now: 5_000_000) == 0)
        let end = Self.flood(&meter, account: 1, from: 5_000_000, for: 1_000_000)
        #expect(meter.delay(account: 1, now: end) == 0)
    }

    @Test func oneLongWriteOwesAtMostABurst() {
        var meter = WriteShare()
        meter.wrote(account: 2, started: 0, ended: 500)
        meter.wrote(account: 1, started: 1_000, ended: 60_000_000)
        meter.wrote(account: 2, started: 60_000_000, ended: 60_000_500)
        let delay = meter.delay(account: 1, now: 60_001_000)
        #expect(delay > 0 && delay <= Int64(Double(meter.burstMicros) / meter.share) + 1, "\(delay)")
    }

    @Test func manyQuietAccountsAreForgotten() {
        var meter = WriteShare()
        for account in 0..<1_000 { meter.wrote(account: Int64(account), started: 0, ended: 100) }
        // Twenty seconds on, one write: every account that owes nothing and
        // wrote a window ago is dropped, so none of them is a neighbour.
        meter.wrote(account: 5_000, started: 20_000_000, ended: 20_000_100)
        let end = Self.flood(&meter, account: 7, from: 20_000_200, for: 1_000_000)
        #expect(meter.delay(account: 7, now: end) > 0, "account 5,000 wrote a second ago")
        #expect(meter.delay(account: 7, now: end + 11_000_000) == 0)
    }
}
