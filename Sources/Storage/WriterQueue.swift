import Glibc
import SystemServices

/// Writers of one SQLite store take its one write lock in turn, account by
/// account. SQLite's own wait is a sleep-and-retry loop that favours no one:
/// under a flood of large pushes from one account, another account's small
/// push could lose every retry for seconds. A plain queue (first come, first
/// served) still put a quiet account's push behind every large write another
/// account had queued (four 7 MB relays: 80 ms became 390 ms). So each
/// account has its queue, and the lock goes round the accounts with writers
/// waiting, one write each: a write waits for the one in progress and for
/// at most one write of each other account waiting, however many each has
/// queued. An account goes to the back of the round when its write ends,
/// not when it starts, so one that arrives meanwhile goes before its next.
/// Writes of no account (administration, purges) take their turn as one
/// more account. (An account is any Int64 its owner names a turn by:
/// brsyncd's accounts, through ``DatabasePool/write(turn:_:)``.) Beyond turns, an account's time holding the lock is
/// metered while others write (``WriteShare``).
final class WriterQueue: Sendable {
    private struct State {
        var nextTicket: UInt64 = 0
        /// Tickets waiting, by account, in arrival order.
        var waiting: [Int64?: [UInt64]] = [:]
        /// The accounts whose first waiting write goes next, in order: each
        /// account with writes waiting, apart from the one writing now.
        var round: [Int64?] = []
        /// The account writing now; nil (outer) when the lock is free.
        var writing: Int64??
        /// Writers queued, the one writing included.
        var count = 0
        var share: WriteShare
    }

    private let state: Locked<State>
    private let now: @Sendable () -> Int64

    /// - Parameter share: the accounts' meter; `now`: monotonic microseconds.
    init(share: WriteShare = WriteShare(), now: @escaping @Sendable () -> Int64 = { Clock.monotonicMicros() }) {
        state = Locked(State(share: share))
        self.now = now
    }

    /// Writers in the queue, the one writing included.
    var queued: Int { state.withLock { $0.count } }

    /// Accounts whose time holding the lock is metered now.
    var metered: Int { state.withLock { $0.share.metered } }

    /// Runs `body` in `account`'s turn (nil: a write of no account).
    func inTurn<T>(account: Int64? = nil, _ body: () throws -> T) rethrows -> T {
        // Over its share: waits holding nothing, in steps (the meter fills meanwhile).
        for _ in 0..<100 {
            let delay = state.withLock { $0.share.delay(account: account, now: now()) }
            guard delay > 0 else { break }
            usleep(UInt32(min(delay, 100_000)))
        }
        let (ticket, contended) = state.withLock { state in
            // Behind another account's write, or its writes queued: this one contends.
            let contended =
                account != nil
                && state.count > state.waiting[account, default: []].count
                    + (state.writing == .some(account) ? 1 : 0)
            let ticket = state.nextTicket
            state.nextTicket += 1
            state.count += 1
            let idle = state.waiting[account, default: []].isEmpty
            state.waiting[account, default: []].append(ticket)
            // A writing account joins the round again when its write ends.
            if idle, state.writing != .some(account) { state.round.append(account) }
            return (ticket, contended)
        }
        _ = state.wait { state -> Bool? in
            guard state.writing == nil, let next = state.round.first, state.waiting[next]?.first == ticket else {
                return nil
            }
            state.round.removeFirst()
            state.waiting[next]?.removeFirst()
            if state.waiting[next]?.isEmpty == true { state.waiting[next] = nil }
            state.writing = .some(next)
            return true
        }
        let started = now()
        defer {
            let ended = now()
            state.withLock { state in
                state.share.wrote(account: account, started: started, ended: ended, contended: contended)
                state.writing = nil
                state.count -= 1
                if state.waiting[account]?.isEmpty == false { state.round.append(account) }
            }
            state.wakeAll()
        }
        return try body()
    }
}
