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
