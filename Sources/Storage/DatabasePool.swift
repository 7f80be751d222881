import Glibc
import SystemServices

/// One SQLite database in WAL mode, shared by a process's threads (as GRDB's
/// `DatabasePool`): its connections (``ConnectionPool``: each borrower has
/// one to itself; readers run beside the one writer), its one writer at a
/// time, taking turns by who it writes for (``WriterQueue``), the WAL
/// checkpoints on a thread of their own (``BackgroundCheckpointer``), and
/// what other processes commit (the WAL index's change counter,
/// ``WALIndexHeader``), which a write is told of.
public final class DatabasePool: Sendable {
    public let path: String
    private let connections: ConnectionPool
    /// Checkpoints the WAL off the writers' path (nil: SQLite's automatic checkpoint).
    private let checkpointer: BackgroundCheckpointer?
    /// The WAL index's header (nil: other processes' commits cannot be told).
    private let walIndex: WALIndexHeader?
    /// The WAL index's change counter after this process's last commit (or
    /// the last outside one it took in): another value means another
    /// process committed since.
    private let ownChange: Locked<UInt32?>
    /// Writers in turn (see ``WriterQueue``).
    private let writers: WriterQueue

    /// What a write is told of other processes' commits since this
    /// process's last write.
    public enum Outside: Sendable, Equatable {
        /// None: what this process read before is still the database's.
        case none
        /// Another process committed (a restore into the file, an
        /// administration command).
        case committed
        /// Cannot be told (no WAL index to read).
        case unknown
    }

    /// Opens `size` connections to the database at `path` (in WAL mode, its
    /// schema in place): `first` is one of them, the others opened with
    /// `busyTimeoutMilliseconds`; `configure` runs on each.
    public init(
        path: String, size: Int, first: Database, busyTimeoutMilliseconds: Int32,
        configure: (Database) throws -> Void
    ) throws {
        self.path = path
        let checkpointer = try? BackgroundCheckpointer(path: path)
        self.checkpointer = checkpointer
        let walIndex = WALIndexHeader(path: path)
        self.walIndex = walIndex
        ownChange = Locked(walIndex?.read()?.change)
        writers = WriterQueue()
        var handedFirst = false
        connections = try ConnectionPool(path: path, size: max(1, size)) {
            let database: Database
            if !handedFirst {
                handedFirst = true
                database = first
            } else {
                database = try Database(path: path, mode: .readWrite, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
            }
            try configure(database)
            checkpointer?.attach(database)
            return database
        }
    }

    /// Runs `body` with a connection, outside any transaction.
    /// - Throws: ``ConnectionPool/Closed`` once closed; what `body` throws.
    public func withConnection<T>(_ body: (Database) throws -> T) throws -> T {
        try connections.withConnection(body)
    }

    /// Runs `body` in a read transaction (one snapshot).
    public func read<T>(_ body: (Database) throws -> T) throws -> T {
        try connections.withConnection { database in try database.transaction(.deferred) { try body(database) } }
    }

    /// Runs `body` in a write transaction (`BEGIN IMMEDIATE`), committed
    /// when it returns, in `turn`'s turn (nil: a writer of no one's; see
    /// ``WriterQueue``). `body` is told whether another process committed
    /// since this process's last write.
    public func write<T>(turn: Int64?, _ body: (Database, Outside) throws -> T) throws -> T {
        try writers.inTurn(account: turn) {
            // Under the write lock no other process commits: what the counter
            // says before this transaction's commit is every commit so far.
            var before: UInt32?
            let result = try connections.withConnection { database in
                try database.transaction(.immediate) {
                    before = walIndex?.read()?.change
                    let outside: Outside =
                        before == nil ? .unknown : before != ownChange.withLock({ $0 }) ? .committed : .none
                    return try body(database, outside)
                }
            }
            let after = walIndex?.read()?.change
            // This commit alone (one more), or none: known; anything else, another process's right after it.
            ownChange.withLock { $0 = (after == before || (before.map { $0 &+ 1 } == after)) ? after : nil }
            return result
        }
    }

    /// Whether another process's commits can be told (``write(turn:_:)``
    /// says `.unknown` otherwise, and ``takeInOutsideCommit(_:)`` never runs).
    public var seesOutsideCommits: Bool { walIndex != nil }

    /// Runs `body` in the writers' turn (none of this process's writes under
    /// way) when another process committed since this process's last write
    /// or the last outside commit taken in; the next write is then told
    /// `.none` for it.
    public func takeInOutsideCommit(_ body: () -> Void) {
        writers.inTurn {
            guard let now = walIndex?.read()?.change, now != ownChange.withLock({ $0 }) else { return }
            ownChange.withLock { $0 = now }
            body()
        }
    }

    /// The WAL index's header now: moves with every commit of any process
    /// (nil: no WAL index).
    public func commitReading() -> WALIndexHeader.Reading? { walIndex?.read() }

    /// Closes every connection (each once its borrower is done) and stops
    /// the checkpoint thread; later borrowers are told ``ConnectionPool/Closed``.
    public func close() {
        walIndex?.close()
        connections.close()
        checkpointer?.stop()
    }
}
