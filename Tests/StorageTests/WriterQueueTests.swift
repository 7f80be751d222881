import Foundation
import Synchronization
import Testing

@testable import Storage

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

/// An account's time holding the write lock, metered while others wait
/// for it (microseconds of a clock the test keeps).
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

    /// The meter's whole debt, repaid at the share's rate.
    static func fullDelay(_ meter: WriteShare) -> Int64 { Int64(Double(meter.burstMicros) / meter.share) }

    @Test func anAccountAloneIsNeverSlowed() {
        var meter = WriteShare()
        let end = Self.flood(&meter, account: 1, from: 0, for: 10_000_000)
        #expect(meter.delay(account: 1, now: end) == 0)
    }

    @Test func aFloodOverItsShareWaitsWhileAnotherAccountWaitsForTheLock() {
        var meter = WriteShare()
        meter.wrote(account: 2, started: 0, ended: 800, contended: true)
        let end = Self.flood(&meter, account: 1, from: 1_000, for: 1_000_000)
        // A second of lock time against a burst of 0.25 s and 0.4 s earned:
        // 0.35 s overspent, of which a burst is owed, repaid at the share's rate.
        let delay = meter.delay(account: 1, now: end)
        #expect(delay == Self.fullDelay(meter), "\(delay)")
        #expect(meter.delay(account: 1, now: end + delay / 2) > 0)
        #expect(meter.delay(account: 1, now: end + delay) == 0)
        #expect(meter.delay(account: 2, now: end) == 0, "the quiet account never waits")
    }

    /// Another account that writes without meeting a busy lock (a small
    /// push now and then) slows nobody: only waiting counts.
    @Test func anAccountThatNeverWaitedSlowsNobody() {
        var meter = WriteShare()
        var now: Int64 = 0
        for _ in 0..<20 {
            meter.wrote(account: 2, started: now, ended: now + 500)
            now = Self.flood(&meter, account: 1, from: now + 1_000, for: 500_000)
            #expect(meter.delay(account: 1, now: now) == 0)
        }
    }

    @Test func writesWithinTheShareNeverWait() {
        var meter = WriteShare()
        var now: Int64 = 1_000
        for _ in 0..<2_000 {
            // 3 ms of every 10: under a third of the time, with account 2 waiting each time.
            #expect(meter.delay(account: 1, now: now) == 0)
            meter.wrote(account: 1, started: now, ended: now + 3_000)
            meter.wrote(account: 2, started: now + 3_000, ended: now + 3_500, contended: true)
            now += 10_000
        }
    }

    @Test func theShareEndsWhenNoOtherAccountWaitedForAWindow() {
        var meter = WriteShare()
        meter.wrote(account: 2, started: 0, ended: 500, contended: true)
        let end = Self.flood(&meter, account: 1, from: 1_000, for: 6_000_000)
        #expect(meter.delay(account: 1, now: end) == 0)
    }

    @Test func writesOfNoAccountAreNeitherMeteredNorContending() {
        var meter = WriteShare()
        meter.wrote(account: nil, started: 0, ended: 5_000_000, contended: true)
        #expect(meter.delay(account: nil, now: 5_000_000) == 0)
        let end = Self.flood(&meter, account: 1, from: 5_000_000, for: 1_000_000)
        #expect(meter.delay(account: 1, now: end) == 0)
    }

    @Test func oneLongWriteOwesAtMostABurst() {
        var meter = WriteShare()
        meter.wrote(account: 1, started: 1_000, ended: 60_000_000)
        meter.wrote(account: 2, started: 60_000_000, ended: 60_000_500, contended: true)
        // A millisecond on, that millisecond is repaid.
        #expect(meter.delay(account: 1, now: 60_001_000) == Self.fullDelay(meter) - 1_000)
    }

    @Test func quietAccountsAreForgotten() {
        var meter = WriteShare()
        for account in 0..<1_000 { meter.wrote(account: Int64(account), started: 0, ended: 100) }
        #expect(meter.metered == 1_000)
        // Twenty seconds on: every account that owes nothing and wrote a
        // window ago is dropped at the next write.
        meter.wrote(account: 5_000, started: 20_000_000, ended: 20_000_100)
        #expect(meter.metered == 1)
    }

    /// The queue asks the meter before each write: an account over its
    /// share while another waited reads the clock (and sleeps) until it is
    /// within it again; one within it goes at once.
    @Test func theQueueWaitsForAnAccountOverItsShare() {
        var meter = WriteShare()
        meter.wrote(account: 2, started: 0, ended: 100, contended: true)
        meter.wrote(account: 1, started: 100, ended: 1_000_000)
        // Each read of the clock moves it 0.2 s on: past the write that
        // ended at 1 s, the meter refills 80 ms of lock time a read.
        let clock = Mutex<(now: Int64, reads: Int)>((0, 0))
        let queue = WriterQueue(share: meter) {
            clock.withLock { clock in
                clock.reads += 1
                clock.now += 200_000
                return clock.now
            }
        }
        func reads(_ account: Int64) -> Int {
            let before = clock.withLock { $0.reads }
            queue.inTurn(account: account) {}
            return clock.withLock { $0.reads } - before
        }
        #expect(reads(2) == 3, "one look at the meter, the write's start and end")
        #expect(reads(1) > 3, "account 1 waited until its meter was within its share")
        #expect(queue.metered == 2)
    }
}
