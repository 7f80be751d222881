import Glibc
import Model
import Net
import Storage
import Synchronization
import SyncCore

/// The server's SQLite store (WAL): accounts, devices with hashed tokens,
/// records with their fields, stamps and version vectors, a per-account
/// sequence number assigned at commit, each device's last applied sequence,
/// and the epoch. A push is acknowledged only after its transaction commits.
public final class ServerStore: Sendable {
    static let applicationID: Int32 = 0x6272_7364 // "brsd"

    static let migrator = Migrator([
        Migrator.Migration(version: 1, sql: """
            CREATE TABLE meta (
                key TEXT PRIMARY KEY,
                value TEXT NOT NULL
            ) WITHOUT ROWID;
            CREATE TABLE accounts (
                id INTEGER PRIMARY KEY,
                name TEXT NOT NULL UNIQUE,
                next_seq INTEGER NOT NULL DEFAULT 1,
                created_at INTEGER NOT NULL
            );
            CREATE TABLE devices (
                id INTEGER PRIMARY KEY,
                account_id INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
                name TEXT NOT NULL,
                token_hash BLOB NOT NULL UNIQUE,
                client_device TEXT,
                revoked INTEGER NOT NULL DEFAULT 0,
                created_at INTEGER NOT NULL,
                last_seen INTEGER,
                last_device_seq INTEGER NOT NULL DEFAULT 0,
                acknowledged_cursor INTEGER NOT NULL DEFAULT 0,
                UNIQUE (account_id, name)
            );
            CREATE TABLE records (
                account_id INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
                collection TEXT NOT NULL,
                key TEXT NOT NULL,
                fields TEXT NOT NULL,
                versions TEXT NOT NULL,
                seq INTEGER NOT NULL,
                deleted INTEGER NOT NULL DEFAULT 0,
                updated_at INTEGER NOT NULL,
                PRIMARY KEY (account_id, collection, key)
            ) WITHOUT ROWID;
            CREATE UNIQUE INDEX records_by_seq ON records (account_id, seq);
            """),
    ])

    public let path: String
    private let pool: ConnectionPool
    /// The server's clock: stamps its answers, observes every pushed stamp.
    let clock: AtomicClock
    /// What this process last wrote of each device's `acknowledged_cursor` and
    /// `last_seen`: concurrent pulls of one device then write it once, not all.
    struct Bookkeeping {
        var acknowledged: [Int64: Int64] = [:]
        var lastSeen: [Int64: Int64] = [:]
    }

    let bookkeeping = Mutex(Bookkeeping())
    public let epoch: String
    public static let serverDevice = "server"

    /// Opens (or creates) the store at `path`.
    /// - Throws: ``ServerError`` when the file is not a brsyncd store, is from
    ///   a newer brsyncd (left untouched), or cannot be opened.
    public init(path: String, connections: Int = 8, busyTimeoutMilliseconds: Int32 = 10_000) throws {
        self.path = path
        let exists = access(path, F_OK) == 0
        do {
            let first = try Database(path: path, mode: exists ? .readWrite : .readWriteCreate, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
            let applicationID = try first.scalar("PRAGMA application_id")?.intValue ?? 0
            let version = try first.userVersion
            let isEmpty = try first.scalar("SELECT COUNT(*) FROM sqlite_master")?.intValue == 0
            if exists && !(applicationID == Int(Self.applicationID) || (applicationID == 0 && version == 0 && isEmpty)) {
                throw ServerError.storeUnusable("\(path) is not a brsyncd database (an SQLite database of another program); it was left untouched")
            }
            guard version <= Self.migrator.latestVersion else {
                throw ServerError.newerSchema(found: version, supported: Self.migrator.latestVersion)
            }
            try first.execute("PRAGMA journal_mode = WAL")
            try first.execute("PRAGMA application_id = \(Self.applicationID)")
            try Self.migrator.migrate(first)
            let epoch: String = try first.transaction {
                if let existing = try first.scalar("SELECT value FROM meta WHERE key = 'epoch'")?.stringValue { return existing }
                let fresh = Crypto.hex(Crypto.randomBytes(8))
                try first.run("INSERT INTO meta (key, value) VALUES ('epoch', ?)", [.text(fresh)])
                return fresh
            }
            let lastStamp = try first.scalar("SELECT value FROM meta WHERE key = 'hlc'")?.stringValue.flatMap(HLCTimestamp.init(text:))
            self.epoch = epoch
            clock = AtomicClock(device: Self.serverDevice, last: lastStamp)
            var handedFirst = false
            pool = try ConnectionPool(path: path, size: max(1, connections)) {
                let database: Database
                if !handedFirst {
                    handedFirst = true
                    database = first
                } else {
                    database = try Database(path: path, mode: .readWrite, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
                }
                try database.execute("PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL")
                return database
            }
        } catch let error as DatabaseError {
            if error.isNotADatabase { throw ServerError.storeUnusable("\(path) is not an SQLite database; it was left untouched") }
            if error.isCantOpen { throw ServerError.storeUnusable("cannot open \(path): \(error.message)") }
            throw ServerError.database(error)
        } catch let problem as Migrator.Problem {
            if case .newerSchema(let found, let supported) = problem { throw ServerError.newerSchema(found: found, supported: supported) }
            throw problem
        }
    }

    func withDatabase<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try pool.withConnection(body)
        } catch let error as DatabaseError {
            throw ServerError.database(error)
        }
    }

    public func close() { pool.close() }

    static func nowMillis() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }

    /// A fresh stamp of the server's clock (sent with every answer).
    public func clockStamp() -> HLCTimestamp {
        clock.tick(wallMillis: Self.nowMillis())
    }

    /// Counts for the metrics endpoint.
    public func counts() throws -> (records: Int, devices: Int, accounts: Int) {
        try withDatabase { database in
            (try database.scalar("SELECT COUNT(*) FROM records")?.intValue ?? 0,
             try database.scalar("SELECT COUNT(*) FROM devices")?.intValue ?? 0,
             try database.scalar("SELECT COUNT(*) FROM accounts")?.intValue ?? 0)
        }
    }

    /// Copies the store to `destination` with SQLite's online backup (safe while
    /// serving) and gives the copy a new epoch: a restored backup is another
    /// timeline, and clients re-sync fully when they see it.
    public func backup(to destination: String) throws {
        guard access(destination, F_OK) != 0 else { throw ServerError.conflict("\(destination) exists already; choose a new file") }
        do {
            let target = try Database(path: destination, mode: .readWriteCreate)
            try withDatabase { database in try database.backup(to: target) }
            try target.run("UPDATE meta SET value = ? WHERE key = 'epoch'", [.text(Crypto.hex(Crypto.randomBytes(8)))])
            let check = try target.scalar("PRAGMA integrity_check")?.stringValue
            guard check == "ok" else { throw ServerError.storeUnusable("the backup failed its integrity check: \(check ?? "?")") }
        } catch let error as DatabaseError {
            unlink(destination)
            if error.isCantOpen { throw ServerError.storeUnusable("cannot create \(destination): \(error.message)") }
            throw ServerError.database(error)
        }
    }

    /// Persists the clock's high-water mark (at shutdown).
    public func saveClock() {
        let last = clock.last
        _ = try? withDatabase { database in
            try database.run("INSERT OR REPLACE INTO meta (key, value) VALUES ('hlc', ?)", [.text(last.description)])
        }
    }
}

