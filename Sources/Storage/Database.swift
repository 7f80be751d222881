import CSQLite

/// One SQLite connection: prepared statements cached by SQL text, typed
/// binding, transactions, WAL and a busy timeout.
///
/// Not thread-safe: one connection belongs to one thread at a time (SQLite's
/// own rule for a connection opened with `SQLITE_OPEN_NOMUTEX`).
public final class Database {
    public enum Mode: Sendable {
        case readOnly
        case readWrite
        case readWriteCreate
    }

    let handle: OpaquePointer
    public let path: String
    private var statements: [String: Statement] = [:]
    /// The statements used last, newest first, looked at before
    /// `statements`: a pull runs a few long statements thousands of times,
    /// and hashing their SQL text each time cost more than binding it (a
    /// static SQL text compares equal to itself by storage, at once).
    private var recent: [(sql: String, statement: Statement)] = []
    private static let recentCount = 4
    /// Takes this connection's WAL checkpoints (see ``BackgroundCheckpointer/attach(_:)``);
    /// held so its hook's context lives as long as the connection.
    var checkpointer: BackgroundCheckpointer?

    /// Opens the database at `path`.
    /// - Parameters:
    ///   - busyTimeoutMilliseconds: how long a statement waits for another
    ///     connection's lock before failing with `SQLITE_BUSY` (default 5 s).
    /// - Throws: ``DatabaseError`` (`SQLITE_CANTOPEN` for a missing file without create).
    public init(
        path: String, mode: Mode = .readWriteCreate, busyTimeoutMilliseconds: Int32 = 5000
    ) throws(DatabaseError) {
        _ = Self.configureOnce
        var connection: OpaquePointer?
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        switch mode {
        case .readOnly: flags |= SQLITE_OPEN_READONLY
        case .readWrite: flags |= SQLITE_OPEN_READWRITE
        case .readWriteCreate: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        }
        let status = sqlite3_open_v2(path, &connection, flags, nil)
        guard status == SQLITE_OK, let connection else {
            let error = DatabaseError(connection: connection, code: status)
            sqlite3_close_v2(connection)
            throw error
        }
        handle = connection
        self.path = path
        sqlite3_busy_timeout(connection, busyTimeoutMilliseconds)
        sqlite3_extended_result_codes(connection, 1)
    }

    /// Process-wide settings, before the first connection (sqlite3_config rule).
    private static let configureOnce: Void = {
        _ = brsync_sqlite_disable_memory_statistics()
    }()

    deinit {
        recent.removeAll()
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements with no parameters and no result rows.
    public func execute(_ sql: String) throws(DatabaseError) {
        let status = sqlite3_exec(handle, sql, nil, nil, nil)
        guard status == SQLITE_OK else { throw DatabaseError(connection: handle, code: status, sql: sql) }
    }

    /// A prepared statement for `sql`, cached and reset for reuse.
    public func statement(_ sql: String) throws(DatabaseError) -> Statement {
        for entry in recent where entry.sql == sql {
            entry.statement.reset()
            return entry.statement
        }
        let statement: Statement
        if let cached = statements[sql] {
            cached.reset()
            statement = cached
        } else {
            statement = try Statement(database: self, sql: sql)
            statements[sql] = statement
        }
        if recent.count == Self.recentCount { recent.removeLast() }
        recent.insert((sql, statement), at: 0)
        return statement
    }

    /// Runs `sql` with `arguments` and returns nothing.
    public func run(_ sql: String, _ arguments: [DatabaseValue] = []) throws(DatabaseError) {
        let statement = try statement(sql)
        try statement.bind(arguments)
        while try statement.step() {}
    }

    /// Runs `sql` with `arguments` and maps every row.
    public func query<T>(_ sql: String, _ arguments: [DatabaseValue] = [], _ map: (Row) throws -> T) throws -> [T] {
        let statement = try statement(sql)
        try statement.bind(arguments)
        var results: [T] = []
        while try statement.step() {
            results.append(try map(Row(statement: statement)))
        }
        return results
    }

    /// Runs `sql` and hands each row to `body` until it returns false (the
    /// rows after are never read: a caller that stops early holds no more
    /// than it took).
    public func forEachRow(_ sql: String, _ arguments: [DatabaseValue] = [], _ body: (Row) throws -> Bool) throws {
        let statement = try statement(sql)
        try statement.bind(arguments)
        defer { statement.reset() }
        while try statement.step() {
            guard try body(Row(statement: statement)) else { return }
        }
    }

    /// The first row mapped, or nil.
    public func queryFirst<T>(_ sql: String, _ arguments: [DatabaseValue] = [], _ map: (Row) throws -> T) throws -> T? {
        let statement = try statement(sql)
        try statement.bind(arguments)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return try map(Row(statement: statement))
    }

    /// The first column of the first row, or nil.
    public func scalar(_ sql: String, _ arguments: [DatabaseValue] = []) throws -> DatabaseValue? {
        try queryFirst(sql, arguments) { $0[0] }
    }

    public enum TransactionKind: String, Sendable {
        case deferred = "DEFERRED"
        case immediate = "IMMEDIATE"
        case exclusive = "EXCLUSIVE"
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    public func transaction<T>(_ kind: TransactionKind = .immediate, _ body: () throws -> T) throws -> T {
        try execute("BEGIN \(kind.rawValue)")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Rows changed by the last statement.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// `PRAGMA user_version`: the schema version.
    public var userVersion: Int {
        get throws { try scalar("PRAGMA user_version")?.intValue ?? 0 }
    }

    /// Copies this database into `destination` with SQLite's online backup, safe
    /// while other connections write.
    public func backup(to destination: Database) throws(DatabaseError) {
        guard let backup = sqlite3_backup_init(destination.handle, "main", handle, "main") else {
            throw DatabaseError(connection: destination.handle, code: sqlite3_errcode(destination.handle))
        }
        var status: Int32
        repeat {
            status = sqlite3_backup_step(backup, 256)
            if status == SQLITE_BUSY || status == SQLITE_LOCKED { sqlite3_sleep(10) }
        } while status == SQLITE_OK || status == SQLITE_BUSY || status == SQLITE_LOCKED
        let finish = sqlite3_backup_finish(backup)
        guard status == SQLITE_DONE, finish == SQLITE_OK else {
            throw DatabaseError(connection: destination.handle, code: status == SQLITE_DONE ? finish : status)
        }
    }
}
