import SystemServices

/// How many requests each credential (a bearer token) has in progress: one
/// device — or one stolen token — gets at most `limit` at once, so it
/// cannot take the server's workers from every other account. A client
/// syncs over one connection, one request at a time; a request past the
/// limit is answered 503 with `Retry-After` before any work.
///
/// Every request enters and leaves: the counts are split over 64 stripes by
/// the credential's hash, each under a plain (non priority-inheriting)
/// mutex (``Locked``), so requests of different devices rarely meet, and those of one
/// device queue without a system call per lock (Swift's `Mutex`, a
/// priority-inheriting futex, took 28% of the server's time with 64
/// connections of one token).
public final class RequestGate: Sendable {
    public let limit: Int

    /// One stripe: the counts of the credentials that hash to it.
    private typealias Stripe = Locked<[String: Int]>

    private let stripes: [Stripe] = (0..<64).map { _ in Stripe([:]) }

    /// - Parameter limit: requests in progress per credential (at least 1).
    public init(limit: Int) {
        self.limit = max(1, limit)
    }

    private func stripe(_ credential: String) -> Stripe {
        stripes[Int(UInt(bitPattern: credential.hashValue) % UInt(stripes.count))]
    }

    /// Takes a slot for `credential`; false when it has `limit` in progress.
    public func enter(_ credential: String) -> Bool {
        let limit = limit
        return stripe(credential).withLock { counts in
            let current = counts[credential, default: 0]
            guard current < limit else { return false }
            counts[credential] = current + 1
            return true
        }
    }

    /// Gives back a slot taken by ``enter(_:)``.
    public func leave(_ credential: String) {
        stripe(credential).withLock { counts in
            let current = counts[credential, default: 0]
            counts[credential] = current > 1 ? current - 1 : nil
        }
    }

    /// Credentials with a request in progress (for tests and metrics).
    public var active: Int { stripes.reduce(0) { total, stripe in total + stripe.withLock { $0.count } } }
}
