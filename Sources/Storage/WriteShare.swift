/// How much of a SQLite store's one write lock each account may hold while
/// another account waits for it. Turns (``WriterQueue``) bound what a quiet
/// account's push waits for to one write of each other account, but a
/// flood's writes come back to back: a part of a large relay holds the lock
/// for 5–6 ms (nearly all of it the fsync of a commit), so a small push
/// nearly always arrived behind one. So an account's time holding the lock
/// is metered: it may hold it for `burst` at a stretch (a large import, a
/// key change's relay), and beyond that for `share` of the time while
/// another account's write had to wait behind another account's in the
/// last `contentionWindow`. An account over its share waits, holding
/// nothing, before it queues; the others find the lock free most of the
/// time. Only contention counts: an account that writes now and then
/// without meeting a busy lock slows nobody, a store that one account uses
/// is never slowed, and writes of no account (administration, purges) are
/// neither metered nor contending. One write owes at most a burst, so a
/// single long write (one large record) is not held to the share.
struct WriteShare: Sendable {
    /// The fraction of the time an account may hold the lock while others wait.
    let share: Double
    /// What an account may hold the lock for beyond its share, at a stretch.
    let burstMicros: Int64
    /// How recently another account must have waited for the share to apply.
    let contentionWindowMicros: Int64

    init(share: Double = 0.4, burstMicros: Int64 = 250_000, contentionWindowMicros: Int64 = 5_000_000) {
        precondition(share > 0 && share <= 1 && burstMicros > 0 && contentionWindowMicros > 0)
        self.share = share
        self.burstMicros = burstMicros
        self.contentionWindowMicros = contentionWindowMicros
    }

    private struct Meter {
        /// Lock time left to spend, in microseconds (negative: overspent).
        var left: Double
        /// When `left` was last brought up to date.
        var at: Int64
        /// When a write of the account last ended.
        var lastWrite: Int64
        /// When a write of the account last had to wait behind another account's.
        var contendedAt: Int64?
    }

    private var meters: [Int64: Meter] = [:]
    /// When the meters were last looked through for quiet accounts.
    private var sweptAt: Int64?

    /// Accounts metered now (quiet ones are forgotten).
    var metered: Int { meters.count }

    /// How long `account` waits before it queues, in microseconds: zero
    /// within its share, or while no other account waited recently.
    mutating func delay(account: Int64?, now: Int64) -> Int64 {
        guard let account, var meter = meters[account] else { return 0 }
        refill(&meter, now: now)
        meters[account] = meter
        guard meter.left < 0, othersContended(besides: account, now: now) else { return 0 }
        return Int64((-meter.left / share).rounded(.up))
    }

    /// Counts a write of `account` that held the lock from `started` to
    /// `ended`; `contended` when it had to wait behind another account's.
    mutating func wrote(account: Int64?, started: Int64, ended: Int64, contended: Bool = false) {
        guard let account else { return }
        var meter = meters[account] ?? Meter(left: Double(burstMicros), at: started, lastWrite: ended)
        refill(&meter, now: ended)
        // One long write owes at most a burst: the wait stays under burst / share.
        meter.left = max(-Double(burstMicros), meter.left - Double(max(0, ended - started)))
        meter.lastWrite = ended
        if contended { meter.contendedAt = started }
        meters[account] = meter
        forgetQuiet(now: ended)
    }

    private func refill(_ meter: inout Meter, now: Int64) {
        let elapsed = Double(max(0, now - meter.at))
        meter.left = min(Double(burstMicros), meter.left + elapsed * share)
        meter.at = max(meter.at, now)
    }

    private func othersContended(besides account: Int64, now: Int64) -> Bool {
        meters.contains { other in
            other.key != account && other.value.contendedAt.map { now - $0 < contentionWindowMicros } == true
        }
    }

    /// Drops the meters of accounts that have not written for a window and
    /// owe nothing (a full meter is what a new one starts with), so the
    /// table holds the accounts writing now, not every account ever; once a
    /// second at most.
    private mutating func forgetQuiet(now: Int64) {
        guard meters.count > 64, sweptAt.map({ now < $0 || now - $0 >= 1_000_000 }) ?? true else { return }
        sweptAt = now
        meters = meters.filter { _, meter in
            var meter = meter
            refill(&meter, now: now)
            return now - meter.lastWrite < contentionWindowMicros || meter.left < Double(burstMicros)
        }
    }
}
