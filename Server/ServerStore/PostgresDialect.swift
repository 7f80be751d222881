import Glibc
import Model
import Net
import Postgres
import SyncCore
import Synchronization
import SystemServices

/// The store's PostgreSQL dialect, for deployments of several `brsyncd` processes
/// behind a load balancer (docs/server.md, "Several `brsyncd` on PostgreSQL"). Nothing in it
/// assumes one process: a push locks its account's row (pushes of an account
/// are serialised, so change numbers commit in order and a pull never skips
/// one that commits later), the epoch lives in the database, and the
/// tombstone purge runs in one process at a time (an advisory lock). The
/// decisions and the merge are ``SyncEngine``'s, as for SQLite.
///
/// SQL is kept to what PostgreSQL and CockroachDB both accept (no
/// PostgreSQL-only types or functions beyond advisory locks, which the purge
/// does without on CockroachDB: see docs/server.md).
final class PostgresDialect: StoreDialect {
    let configuration: PostgresConfiguration
    let pool: PostgresPool
    /// The epoch as last read from the database (refreshed by every sync request).
    let epochCache: EpochCache
    /// The store's watches, woken when another process tells of a change.
    let watches: WatchHub
    /// Set at ``close()``: the listening thread ends.
    private let closing = Atomic<Bool>(false)
    /// Whether the listening thread runs (it is started by a serving brsyncd only).
    private let listenerRunning = Atomic<Bool>(false)
    /// Whether the listening connection is up (for tests and logs).
    let listening = Atomic<Bool>(false)
    /// The channel brsyncd processes tell each other on that an account changed (payload: its id).
    static let changesChannel = "brsync_changes"
    /// The newest `schema_version` (``StoreSchema``).
    static var schemaVersion: Int { StoreSchema.postgresVersion }
    /// The advisory lock keys: schema changes and the tombstone purge.
    static let migrationLock: Int64 = 0x6272_7364_0001
    static let purgeLock: Int64 = 0x6272_7364_0002

    /// Connects and creates or upgrades the schema: see ``SyncStore/init(postgres:connections:clock:)``.
    init(_ configuration: PostgresConfiguration, connections: Int, watches: WatchHub) throws {
        self.configuration = configuration
        self.watches = watches
        do {
            let first = try PostgresConnection(configuration)
            let epoch = try first.transaction {
                try first.run("SELECT pg_advisory_xact_lock($1)", [.integer(Self.migrationLock)])
                return try Self.migrate(first)
            }
            let shared = EpochCache(epoch)
            epochCache = shared
            pool = PostgresPool(configuration, size: connections) { connection in
                if let fresh = try DatabaseIdentity.check(connection) { shared.set(fresh) }
            }
        } catch let error as PostgresError {
            throw ServerError.storeUnusable("\(error)")
        }
        // The first borrowed connection checks the identity: a restored
        // database is noticed before the first request.
        _ = try withConnection { _ in }
    }

    /// Starts listening for the other processes' changes (a serving
    /// brsyncd; the administration commands do not).
    func startListening() {
        guard !listenerRunning.exchange(true, ordering: .relaxed) else { return }
        do {
            try startThread { [self] in
                listen()
                listenerRunning.store(false, ordering: .relaxed)
            }
        } catch {
            listenerRunning.store(false, ordering: .relaxed)
        }
    }

    /// Listens for other processes' changes on a connection of its own (a
    /// session: `LISTEN` does not work through a pooler in transaction
    /// mode) and wakes this process's watches of the account named. Lost,
    /// it connects again within a second and wakes every watch, since a
    /// notification may have been missed meanwhile.
    private func listen() {
        var missed = false
        while !closing.load(ordering: .relaxed) {
            do {
                let connection = try PostgresConnection(
                    configuration, applicationName: "brsyncd-listen", connectTimeoutSeconds: 2)
                try connection.execute("LISTEN \(Self.changesChannel)")
                listening.store(true, ordering: .relaxed)
                if missed { watches.changedAll() }
                while !closing.load(ordering: .relaxed) {
                    for payload in try connection.notifications(waitingMilliseconds: 500) {
                        if let account = Int64(payload) { watches.changed(account: account) }
                    }
                }
            } catch {
                listening.store(false, ordering: .relaxed)
                missed = true
                for _ in 0..<10 where !closing.load(ordering: .relaxed) { usleep(100_000) }
            }
        }
        listening.store(false, ordering: .relaxed)
    }

    /// `NOTIFY` after the commit, on its own: a failure (a database
    /// without it, such as CockroachDB) loses no write; the other
    /// processes' watches then answer at their timeout.
    /// Every writer `NOTIFY`s (``notifyOtherProcesses(account:)``): nothing to look at.
    func commitState() -> CommitState? { .announced }

    func notifyOtherProcesses(account: Int64) {
        _ = try? withConnection { connection in
            try connection.run("SELECT pg_notify($1, $2)", [.text(Self.changesChannel), .text(String(account))])
        }
    }

    static func migrate(_ connection: PostgresConnection) throws -> String {
        try connection.execute("CREATE TABLE IF NOT EXISTS brsync_meta (key text PRIMARY KEY, value text NOT NULL)")
        let stored: Int?? = try connection.queryFirst("SELECT value FROM brsync_meta WHERE key = 'schema_version'") {
            $0.int(0)
        }
        let version = (stored ?? nil) ?? 0
        if version > schemaVersion { throw ServerError.newerSchema(found: version, supported: schemaVersion) }
        for (number, sql, fill) in StoreSchema.postgres where number > version {
            try connection.execute(sql)
            try fill?(connection)
        }
        if version < schemaVersion {
            try connection.run(
                """
                INSERT INTO brsync_meta (key, value) VALUES ('schema_version', $1)
                ON CONFLICT (key) DO UPDATE SET value = excluded.value
                """, [.text(String(schemaVersion))])
        }
        return try readEpoch(connection)
    }

    static func readEpoch(_ connection: PostgresConnection) throws -> String {
        guard
            let epoch = try connection.queryFirst(
                "SELECT value FROM brsync_meta WHERE key = 'epoch'", [], { $0.string(0) }) ?? nil
        else {
            throw ServerError.storeUnusable("the PostgreSQL store has no epoch (brsync_meta was changed by hand?)")
        }
        return epoch
    }

    func close() {
        closing.store(true, ordering: .relaxed)
        // The listener ends within its half-second wait (a connection attempt: its timeout).
        for _ in 0..<200 where listenerRunning.load(ordering: .relaxed) { usleep(10_000) }
        pool.close()
    }

    func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        do {
            return try pool.withConnection(body)
        } catch let error as PostgresError {
            if error.isConnectionFailure {
                throw ServerError.unavailable("the PostgreSQL store cannot be reached: \(error)")
            }
            throw ServerError.storeUnusable("the PostgreSQL store: \(error)")
        }
    }

    /// Writers do not queue (each account's row lock serialises its own
    /// writes only): no turns, and records are read inside the write
    /// (``StoreTransaction/prefetch(account:keys:)``), not ahead.
    func writing<T>(
        account: Int64?, readAhead: Store.ReadAhead?, _ body: (any StoreTransaction) throws -> T
    ) throws -> T {
        try write { connection in try PostgresTransaction.run(connection, body) }
    }

    func readAhead(account: Int64, keys: [(collection: RecordCollection, key: String)]) throws -> Store.ReadAhead? {
        nil
    }

    func reading<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        try withConnection { connection in try body(PostgresTransaction(connection: connection)) }
    }

    /// PostgreSQL keeps the deleted row versions until a vacuum reuses their
    /// space (Deploy/SECURITY.md says how to scrub them).
    func scrubAfterEncrypting() {}

    /// A write transaction, retried when PostgreSQL (or CockroachDB, which
    /// serialises everything) says it lost a race.
    func write<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        var attempt = 0
        while true {
            do {
                return try pool.withConnection { connection in try connection.transaction { try body(connection) } }
            } catch let error as PostgresError where error.isRetryable && attempt < 5 {
                attempt += 1
                usleep(UInt32(1000 << attempt))
            } catch let error as PostgresError {
                if error.isConnectionFailure {
                    throw ServerError.unavailable("the PostgreSQL store cannot be reached: \(error)")
                }
                throw ServerError.storeUnusable("the PostgreSQL store: \(error)")
            }
        }
    }
}
