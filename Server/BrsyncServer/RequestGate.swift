import Synchronization

/// How many requests each credential (a bearer token) has in progress: one
/// device — or one stolen token — gets at most `limit` at once, so it
/// cannot take the server's workers from every other account. A client
/// syncs over one connection, one request at a time; a request past the
/// limit is answered 503 with `Retry-After` before any work.
public final class RequestGate: Sendable {
    public let limit: Int
    /// In-progress counts by credential; an entry leaves with its last request.
    private let counts = Mutex<[String: Int]>([:])

    /// - Parameter limit: requests in progress per credential (at least 1).
    public init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Takes a slot for `credential`; false when it has `limit` in progress.
    public func enter(_ credential: String) -> Bool {
        counts.withLock { counts in
            let current = counts[credential, default: 0]
            guard current < limit else { return false }
            counts[credential] = current + 1
            return true
        }
    }

    /// Gives back a slot taken by ``enter(_:)``.
    public func leave(_ credential: String) {
        counts.withLock { counts in
            let current = counts[credential, default: 0]
            counts[credential] = current > 1 ? current - 1 : nil
        }
    }

    /// Credentials with a request in progress (for tests and metrics).
    public var active: Int { counts.withLock { $0.count } }
}
