/// The stores a brsyncd server can run on; the server, sync and CLI tests
/// run on each.
public enum StoreKind: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    /// A fresh database in the test process's throw-away cluster (``PostgresCluster``).
    case postgres
    public var description: String { rawValue }
}
