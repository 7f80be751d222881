import Postgres
import SyncCore
import SystemServices

/// The server's store: accounts, devices with hashed tokens, records with
/// their fields, stamps and version vectors, a per-account change number
/// assigned at commit, each replica's stream and the timeline (epoch). What
/// the sync API, the server and `brsyncd`'s commands need of a store, written
/// once: every operation (in SyncStore+Sync.swift, +Accounts and +Memory) decides,
/// with ``SyncEngine`` for the merge and the pull's page, and maps outcomes
/// to answers and errors. A push is acknowledged only after its transaction
/// commits.
///
/// It holds one ``StoreDialect`` value, the database's way of running
/// transactions: SQLite (``init(sqlite:connections:busyTimeoutMilliseconds:clock:)``,
/// the embedded default) or PostgreSQL
/// (``init(postgres:connections:clock:)``, for deployments of several
/// `brsyncd` processes). The dialect runs its SQL in the transactions it
/// hands out (``StoreTransaction``), and nothing else.
public final class SyncStore: Sendable {
    /// The database, and its way of running the store's transactions.
    let dialect: any StoreDialect
    /// The server's wall clock in milliseconds (tests run it skewed).
    public let currentMillis: @Sendable () -> Int64
    /// The watches waiting for this store's accounts to change (`GET /v1/watch`).
    public let watches: WatchHub
    /// The epoch as this process knows it (the dialect's, shared).
    package let epochCache: EpochCache
    /// What pulls of this process last wrote (see ``Bookkeeping``).
    package let bookkeeping = Bookkeeping()
    /// Who may start a readable account's new timeline, and how often.
    public let timelineGate = TimelineGate()
    /// Devices authenticated lately, for no-change pulls (``TokenCache``).
    package let tokenCache = TokenCache()

    init(dialect: any StoreDialect, watches: WatchHub, clock: @escaping @Sendable () -> Int64) {
        self.dialect = dialect
        self.watches = watches
        currentMillis = clock
        epochCache = dialect.epochCache
    }

    /// Opens (or creates) the SQLite store at `path` (WAL). A store file that
    /// is not the one that last served (a file copy put back, a backup
    /// restored twice, the store moved to another machine) starts a new
    /// epoch: its change numbers may already have been handed out with
    /// other content.
    /// - Throws: ``ServerError`` when the file is not a brsyncd store, is from
    ///   a newer brsyncd (left untouched), or cannot be opened.
    public convenience init(
        sqlite path: String, connections: Int = 8, busyTimeoutMilliseconds: Int32 = 10_000,
        clock: @escaping @Sendable () -> Int64 = Clock.wallMillis
    ) throws {
        let watches = WatchHub()
        let dialect = try SQLiteDialect(
            path: path, connections: connections, busyTimeoutMilliseconds: busyTimeoutMilliseconds, watches: watches)
        self.init(dialect: dialect, watches: watches, clock: clock)
    }

    /// Connects to a PostgreSQL store and creates or upgrades its schema.
    /// Every connection the store opens first checks that the database is the
    /// one that served last (``DatabaseIdentity``): one restored from a
    /// backup, promoted from a standby or copied starts a new epoch.
    /// - Throws: ``ServerError`` when the database cannot be reached or was
    ///   made by a newer brsyncd.
    public convenience init(
        postgres configuration: PostgresConfiguration, connections: Int = 8,
        clock: @escaping @Sendable () -> Int64 = Clock.wallMillis
    ) throws {
        let watches = WatchHub()
        let dialect = try PostgresDialect(configuration, connections: connections, watches: watches)
        self.init(dialect: dialect, watches: watches, clock: clock)
    }

    /// The timeline's id (a new one after a detected rollback).
    public var epoch: String { epochCache.current }

    /// Starts hearing of other processes' changes, for ``watches`` (a
    /// serving brsyncd on PostgreSQL: `LISTEN`; on SQLite, the claim that
    /// this process alone serves the file and a watch of outside commits).
    public func startListening() throws { try dialect.startListening() }

    public func close() { dialect.close() }

    /// Runs `body` in a write transaction, in `account`'s turn (see
    /// ``StoreDialect/writing(account:readAhead:_:)``).
    package func writing<T>(
        account: Int64? = nil, readAhead: Store.ReadAhead? = nil, _ body: (any StoreTransaction) throws -> T
    ) throws -> T {
        try dialect.writing(account: account, readAhead: readAhead, body)
    }

    /// Runs `body` in a read transaction (one snapshot).
    package func reading<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        try dialect.reading(body)
    }

    /// Reads ahead the records a write of `account` will merge into (see
    /// ``StoreDialect/readAhead(account:keys:)``).
    package func readAhead(
        account: Int64, keys: [(collection: RecordCollection, key: String)]
    ) throws -> Store.ReadAhead? {
        try dialect.readAhead(account: account, keys: keys)
    }

    /// What changes when any process commits (``StoreDialect/commitState()``).
    package func commitState() -> CommitState? { dialect.commitState() }

    /// Wakes `account`'s watches in the other brsyncd processes sharing the
    /// database (``StoreDialect/notifyOtherProcesses(account:)``).
    package func notifyOtherProcesses(account: Int64) { dialect.notifyOtherProcesses(account: account) }

    /// Scrubs what deleting an account's records left behind, where the
    /// database can (``StoreDialect/scrubAfterEncrypting()``).
    package func scrubAfterEncrypting() { dialect.scrubAfterEncrypting() }

    /// The database a store keeps its data in.
    public enum Kind: Sendable {
        /// One SQLite file, served by one brsyncd.
        case sqlite
        /// A PostgreSQL database, shared by any number of brsyncd processes.
        case postgres
    }

    /// The database this store keeps its data in.
    public var kind: Kind { dialect is PostgresDialect ? .postgres : .sqlite }

    /// The SQLite dialect, when the store is one (its file's own operations:
    /// backup, and tests that reach behind the store's back).
    var sqlite: SQLiteDialect? { dialect as? SQLiteDialect }
    /// The PostgreSQL dialect, when the store is one.
    var postgres: PostgresDialect? { dialect as? PostgresDialect }

    /// Copies an SQLite store to `destination` with SQLite's online backup
    /// (safe while serving) and gives the copy a new epoch: a restored backup
    /// is another timeline, and clients re-sync fully when they see it.
    /// - Throws: ``ServerError/badRequest(_:)`` for a PostgreSQL store (its
    ///   backups are PostgreSQL's own tools': Deploy/OPERATIONS.md).
    public func backup(to destination: String) throws {
        guard let sqlite else {
            throw ServerError.badRequest(
                "a PostgreSQL store is backed up with pg_dump or pg_basebackup, not by brsyncd")
        }
        try sqlite.backup(to: destination)
    }
}

extension SyncStore {
    /// The server's wall clock as a stamp (sent with every answer, so clients
    /// learn the offset of their own clock). It is the wall clock, never a
    /// logical clock that pushed stamps move: no device, of this account or
    /// another, can move the time every client learns.
    public func clockStamp() -> HLCTimestamp {
        HLCTimestamp(wallMillis: currentMillis(), counter: 0, device: Store.serverDevice)
    }
}
