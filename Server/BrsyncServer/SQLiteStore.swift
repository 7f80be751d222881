import Cryptography
import Glibc
import Model
import Net
import Storage
import SyncCore
import Synchronization
import SystemServices

/// The server's SQLite store (WAL): accounts, devices with hashed tokens,
/// records with their fields, stamps and version vectors, a per-account
/// sequence number assigned at commit, each device's last applied sequence,
/// and the epoch. A push is acknowledged only after its transaction commits.
public final class SQLiteStore: StoreDialect {
    static let applicationID: Int32 = 0x6272_7364 // "brsd"

    static let migrator = Migrator([
        Migrator.Migration(
            version: 1,
            sql: Database.metaTable + """
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
        // Counters tied to identities: each replica instance (client device
        // id) of an account has its own stream of change numbers with the
        // digest (now the chain, version 6) of the last one applied, whatever token it uses; each account
        // has an identity clients can check; each record remembers which
        // replica's push made it, when that replica had seen the version before,
        // so that replica's next pull does not fetch it back.
        Migrator.Migration(
            version: 2,
            sql: """
                ALTER TABLE accounts ADD COLUMN uid TEXT NOT NULL DEFAULT '';
                UPDATE accounts SET uid = lower(hex(randomblob(8)));
                CREATE TABLE device_streams (
                    account_id INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
                    client_device TEXT NOT NULL,
                    last_seq INTEGER NOT NULL,
                    last_digest TEXT NOT NULL,
                    PRIMARY KEY (account_id, client_device)
                ) WITHOUT ROWID;
                INSERT INTO device_streams (account_id, client_device, last_seq, last_digest)
                    SELECT account_id, client_device, MAX(last_device_seq), '' FROM devices
                    WHERE client_device IS NOT NULL GROUP BY account_id, client_device;
                ALTER TABLE records ADD COLUMN known_to TEXT;
                DELETE FROM meta WHERE key = 'hlc';
                """),
        // The highest sequence of a tombstone purged from each account: a
        // replica whose cursor is below it missed a deletion the server no
        // longer has, and must reconcile from zero.
        Migrator.Migration(
            version: 3,
            sql: """
                ALTER TABLE accounts ADD COLUMN purged_through INTEGER NOT NULL DEFAULT 0;
                """),
        // The wall time of the newest stamp each account holds: an edit made
        // after seeing it must be stamped above it, so stamps are judged
        // against the later of this and the server's clock.
        Migrator.Migration(
            version: 4,
            sql: """
                ALTER TABLE accounts ADD COLUMN stamp_high INTEGER NOT NULL DEFAULT 0;
                """),
        // The sequence of the version a pushed change merged into: a pull
        // skips the result only for a puller whose cursor covers that version.
        Migrator.Migration(
            version: 5,
            sql: """
                ALTER TABLE records ADD COLUMN known_after INTEGER NOT NULL DEFAULT 0;
                """),
        // A stream's digest became the chain through its last change (one
        // change's digest could not tell two copies that made the same edit
        // after different ones). The old digests are forgotten: each stream's
        // next push is taken as it comes and records the chain.
        Migrator.Migration(
            version: 6,
            sql: """
                UPDATE device_streams SET last_digest = '';
                """),
        // End-to-end encryption: an encrypted account takes sealed
        // records only, and only from clients of protocol 2.
        Migrator.Migration(
            version: 7,
            sql: """
                ALTER TABLE accounts ADD COLUMN encrypted INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE accounts ADD COLUMN key_id TEXT NOT NULL DEFAULT '';
                """),
        // Records move to a table with row ids, in the order they were
        // written, with their key in an index. The records table was keyed by
        // (account, collection, key) WITHOUT ROWID: a B-tree whose cells hold
        // the whole record, at most about a quarter of a 4 KiB page. A sealed
        // record of an end-to-end encrypted account (about 1 KB) spilled into
        // an overflow page of its own (10,000 rules took 47 MB instead of 12),
        // and its hidden key (an HMAC) put each new record on a random page,
        // so every push rewrote most of the table into the WAL. Now a new
        // record is appended, only the small key index takes random inserts,
        // and a row of up to about 4 KB stays on its page.
        Migrator.Migration(
            version: 8,
            sql: """
                CREATE TABLE records_by_rowid (
                    account_id INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
                    collection TEXT NOT NULL,
                    key TEXT NOT NULL,
                    fields TEXT NOT NULL,
                    versions TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    deleted INTEGER NOT NULL DEFAULT 0,
                    updated_at INTEGER NOT NULL,
                    known_to TEXT,
                    known_after INTEGER NOT NULL DEFAULT 0
                );
                INSERT INTO records_by_rowid (account_id, collection, key, fields, versions, seq, deleted, updated_at, known_to, known_after)
                    SELECT account_id, collection, key, fields, versions, seq, deleted, updated_at, known_to, known_after
                    FROM records ORDER BY account_id, seq;
                DROP TABLE records;
                ALTER TABLE records_by_rowid RENAME TO records;
                CREATE UNIQUE INDEX records_by_key ON records (account_id, collection, key);
                CREATE UNIQUE INDEX records_by_seq ON records (account_id, seq);
                """),
        // Join codes are enrollment secrets: a device added for a join code
        // has its secret's hash as its token until `brsync join` exchanges
        // it (once, before it expires) for a token the joining machine made.
        Migrator.Migration(
            version: 9,
            sql: """
                CREATE TABLE enrollments (
                    secret_hash BLOB PRIMARY KEY,
                    device_id INTEGER NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
                    expires_at INTEGER NOT NULL,
                    used_at INTEGER,
                    token_hash BLOB
                ) WITHOUT ROWID;
                CREATE INDEX enrollments_by_device ON enrollments (device_id);
                """),
        // Signed writes (protocol 3): an encrypted account's signing public
        // key, the key ids it was rotated away from, and the operator's reset.
        Migrator.Migration(
            version: 10,
            sql: """
                ALTER TABLE accounts ADD COLUMN signing_key TEXT NOT NULL DEFAULT '';
                ALTER TABLE accounts ADD COLUMN retired_keys TEXT NOT NULL DEFAULT '';
                ALTER TABLE accounts ADD COLUMN encryption_reset INTEGER NOT NULL DEFAULT 0;
                """),
        // Timelines per account: a rollback seen in one account (or its
        // encryption reset) starts a new epoch for that account only.
        Migrator.Migration(
            version: 11,
            sql: """
                ALTER TABLE accounts ADD COLUMN epoch TEXT NOT NULL DEFAULT '';
                """),
        // Quotas: what each account holds, counted by triggers whatever
        // writes its records, and what it may hold.
        Migrator.Migration(
            version: 12,
            sql: """
                ALTER TABLE accounts ADD COLUMN record_count INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE accounts ADD COLUMN byte_count INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE accounts ADD COLUMN max_records INTEGER NOT NULL DEFAULT \(Store.Limits.defaultRecords);
                ALTER TABLE accounts ADD COLUMN max_bytes INTEGER NOT NULL DEFAULT \(Store.Limits.defaultBytes);
                ALTER TABLE accounts ADD COLUMN max_devices INTEGER NOT NULL DEFAULT \(Store.Limits.defaultDevices);
                UPDATE accounts SET
                    record_count = (SELECT COUNT(*) FROM records WHERE account_id = accounts.id),
                    byte_count = (SELECT COALESCE(SUM(LENGTH(CAST(fields AS BLOB)) + LENGTH(CAST(versions AS BLOB))), 0)
                                  FROM records WHERE account_id = accounts.id);
                CREATE TRIGGER records_counted_insert AFTER INSERT ON records BEGIN
                    UPDATE accounts SET record_count = record_count + 1,
                        byte_count = byte_count + LENGTH(CAST(NEW.fields AS BLOB)) + LENGTH(CAST(NEW.versions AS BLOB))
                    WHERE id = NEW.account_id;
                END;
                CREATE TRIGGER records_counted_update AFTER UPDATE OF fields, versions ON records BEGIN
                    UPDATE accounts SET byte_count = byte_count
                        - LENGTH(CAST(OLD.fields AS BLOB)) - LENGTH(CAST(OLD.versions AS BLOB))
                        + LENGTH(CAST(NEW.fields AS BLOB)) + LENGTH(CAST(NEW.versions AS BLOB))
                    WHERE id = NEW.account_id;
                END;
                CREATE TRIGGER records_counted_delete AFTER DELETE ON records BEGIN
                    UPDATE accounts SET record_count = record_count - 1,
                        byte_count = byte_count - LENGTH(CAST(OLD.fields AS BLOB)) - LENGTH(CAST(OLD.versions AS BLOB))
                    WHERE id = OLD.account_id;
                END;
                """),
        // The version vector of the write that brought a record's newest
        // stamp, when it differs from the record's (``Store/RecordVersion``):
        // a machine whose value lost to a write that had not seen it is told.
        Migrator.Migration(
            version: 13,
            sql: """
                ALTER TABLE records ADD COLUMN writer TEXT;
                """),
        // The changes a push refused, per replica stream: every answer to a
        // push covering them names them again, a retry after a lost answer
        // included, so a client always learns which of its changes were
        // never applied (a device's ledger counts only applied ones). The
        // key and reason are kept as bytes: a refused key may hold any
        // character, NUL included (that is why it was refused).
        Migrator.Migration(
            version: 14,
            sql: """
                CREATE TABLE refusals (
                    account_id INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
                    client_device TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    collection TEXT NOT NULL,
                    key BLOB NOT NULL,
                    reason BLOB NOT NULL,
                    PRIMARY KEY (account_id, client_device, seq)
                ) WITHOUT ROWID;
                """),
        // Devices' ledgers sit outside the account's record and byte quotas
        // (a full account still takes the ledger of what it took); they are
        // bounded by their keys instead: 289 a device id that pushed, and at
        // most ``Store/maxStreamsPerAccount`` ids.
        Migrator.Migration(
            version: 15,
            sql: """
                DROP TRIGGER records_counted_insert;
                DROP TRIGGER records_counted_update;
                DROP TRIGGER records_counted_delete;
                CREATE TRIGGER records_counted_insert AFTER INSERT ON records WHEN NEW.collection <> 'ledger' BEGIN
                    UPDATE accounts SET record_count = record_count + 1,
                        byte_count = byte_count + LENGTH(CAST(NEW.fields AS BLOB)) + LENGTH(CAST(NEW.versions AS BLOB))
                    WHERE id = NEW.account_id;
                END;
                CREATE TRIGGER records_counted_update AFTER UPDATE OF fields, versions ON records
                WHEN NEW.collection <> 'ledger' BEGIN
                    UPDATE accounts SET byte_count = byte_count
                        - LENGTH(CAST(OLD.fields AS BLOB)) - LENGTH(CAST(OLD.versions AS BLOB))
                        + LENGTH(CAST(NEW.fields AS BLOB)) + LENGTH(CAST(NEW.versions AS BLOB))
                    WHERE id = NEW.account_id;
                END;
                CREATE TRIGGER records_counted_delete AFTER DELETE ON records WHEN OLD.collection <> 'ledger' BEGIN
                    UPDATE accounts SET record_count = record_count - 1,
                        byte_count = byte_count - LENGTH(CAST(OLD.fields AS BLOB)) - LENGTH(CAST(OLD.versions AS BLOB))
                    WHERE id = OLD.account_id;
                END;
                UPDATE accounts SET
                    record_count = (SELECT COUNT(*) FROM records WHERE account_id = accounts.id AND collection <> 'ledger'),
                    byte_count = (SELECT COALESCE(SUM(LENGTH(CAST(fields AS BLOB)) + LENGTH(CAST(versions AS BLOB))), 0)
                                  FROM records WHERE account_id = accounts.id AND collection <> 'ledger');
                """),
    ])

    public let path: String
    private let pool: ConnectionPool
    /// Checkpoints the WAL off the requests' path (nil: SQLite's automatic checkpoint).
    private let checkpointer: BackgroundCheckpointer?
    /// The WAL index's header, for ``commitState()`` (nil: the WAL file's status is asked instead).
    private let walIndex: WALIndexHeader?
    /// The WAL index's change counter after this process's last commit (or
    /// the last outside one it took in): another value means another
    /// process committed since (see ``startListening()``).
    private let ownChange: Locked<UInt32?>
    /// Set by ``close()``: the outside-commit watch ends.
    private let closing = Atomic<Bool>(false)
    /// The lock file held while serving (``startListening()``), or -1.
    private let servingLock = Atomic<Int32>(-1)
    public let bookkeeping = Bookkeeping()
    public let timelineGate = TimelineGate()
    public let tokenCache = TokenCache()
    public let watches = WatchHub()
    /// The timeline's id, kept in the database (`meta.epoch`); a new one is
    /// started when a rollback is detected.
    public let epochCache: EpochCache
    /// Writers in the order they came (see ``WriterQueue``).
    let writers = WriterQueue()

    /// The server's wall clock in milliseconds (tests run it skewed).
    public let currentMillis: @Sendable () -> Int64

    /// Opens (or creates) the store at `path`. A store file that is not the
    /// one that last served (a file copy put back, a backup restored twice,
    /// the store moved to another machine) starts a new epoch: its change
    /// numbers may already have been handed out with other content.
    /// - Throws: ``ServerError`` when the file is not a brsyncd store, is from
    ///   a newer brsyncd (left untouched), or cannot be opened.
    public init(
        path: String, connections: Int = 8, busyTimeoutMilliseconds: Int32 = 10_000,
        clock: @escaping @Sendable () -> Int64 = Clock.wallMillis
    ) throws {
        self.path = path
        currentMillis = clock
        let exists = access(path, F_OK) == 0
        // The store holds token hashes and every account's rules: 0600 whatever
        // the umask (SQLite gives its -wal and -shm files the same mode).
        if !exists { try Self.createPrivateFile(path) }
        do {
            let first = try Database(
                path: path, mode: exists ? .readWrite : .readWriteCreate,
                busyTimeoutMilliseconds: busyTimeoutMilliseconds)
            let applicationID = try first.scalar("PRAGMA application_id")?.intValue ?? 0
            let version = try first.userVersion
            let isEmpty = try first.scalar("SELECT COUNT(*) FROM sqlite_master")?.intValue == 0
            if exists && !(applicationID == Int(Self.applicationID) || (applicationID == 0 && version == 0 && isEmpty))
            {
                throw ServerError.storeUnusable(
                    "\(path) is not a brsyncd database (an SQLite database of another program); it was left untouched")
            }
            guard version <= Self.migrator.latestVersion else {
                throw ServerError.newerSchema(found: version, supported: Self.migrator.latestVersion)
            }
            try first.execute("PRAGMA journal_mode = WAL")
            try first.execute("PRAGMA application_id = \(Self.applicationID)")
            try Self.migrator.migrate(first)
            let identity = FileIdentity.of(path)
            let epoch: String = try first.transaction(.immediate) {
                let known = try first.meta("file_identity")
                if let identity, identity != known { try first.setMeta("file_identity", identity) }
                if let existing = try first.meta("epoch") {
                    // A store that served from another file is a copy of it.
                    guard let identity, let known, !FileIdentity.matches(known, identity) else { return existing }
                    return try SQLiteTransaction(database: first).startNewEpoch()
                }
                let fresh = Crypto.hex(Crypto.randomBytes(8))
                try first.setMeta("epoch", fresh)
                return fresh
            }
            epochCache = EpochCache(epoch)
            // Checkpoints run on a thread of their own, not in the commit of
            // the push that fills the log; without a thread, SQLite's own
            // automatic checkpoint stays.
            let checkpointer = try? BackgroundCheckpointer(path: path)
            self.checkpointer = checkpointer
            let walIndex = WALIndexHeader(path: path)
            self.walIndex = walIndex
            ownChange = Locked(walIndex?.read()?.change)
            var handedFirst = false
            pool = try ConnectionPool(path: path, size: max(1, connections)) {
                let database: Database
                if !handedFirst {
                    handedFirst = true
                    database = first
                } else {
                    database = try Database(
                        path: path, mode: .readWrite, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
                }
                // 16 MiB of page cache per connection (SQLite keeps 2 MiB by default): a push
                // of 10,000 sealed records reads its B-tree pages back from the cache, not with pread.
                try database.execute("PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL; PRAGMA cache_size = -16384")
                checkpointer?.attach(database)
                return database
            }
        } catch let error as DatabaseError {
            if error.isNotADatabase {
                throw ServerError.storeUnusable("\(path) is not an SQLite database; it was left untouched")
            }
            if error.isCantOpen { throw ServerError.storeUnusable("cannot open \(path): \(error.message)") }
            throw ServerError.database(error)
        } catch let problem as Migrator.Problem {
            if case .newerSchema(let found, let supported) = problem {
                throw ServerError.newerSchema(found: found, supported: supported)
            }
            throw problem
        }
    }

    public func writing<T>(_ body: (SQLiteTransaction) throws -> T) throws -> T {
        try write(account: nil, body)
    }

    public func writing<T>(account: Int64, _ body: (SQLiteTransaction) throws -> T) throws -> T {
        try write(account: account, body)
    }

    public func writing<T>(
        account: Int64, readAhead: Store.ReadAhead?, _ body: (SQLiteTransaction) throws -> T
    ) throws -> T {
        try write(account: account, readAhead: readAhead, body)
    }

    /// The records read in a read transaction of their own, before the write
    /// lock is queued for: a relay's large records are read and decoded
    /// while other writers write, and the write only checks that each is
    /// still the version read (``SQLiteTransaction/record(account:collection:key:)``).
    public func readAhead(
        account: Int64, keys: [(collection: RecordCollection, key: String)]
    ) throws
        -> Store.ReadAhead?
    {
        try reading { transaction in
            var ahead = Store.ReadAhead(account: account)
            for (collection, key) in keys {
                ahead.records[Store.ReadAhead.Place(collection: collection, key: key)] = .some(
                    try transaction.record(account: account, collection: collection, key: key))
            }
            return ahead
        }
    }

    /// One write transaction, in `account`'s turn (nil: a write of no
    /// account), with records read ahead for it when they can be trusted:
    /// never after another process committed (a restore may reuse change
    /// numbers), nor where such commits cannot be told.
    private func write<T>(
        account: Int64?, readAhead: Store.ReadAhead? = nil, _ body: (SQLiteTransaction) throws -> T
    ) throws -> T {
        try writers.inTurn(account: account) {
            // Under the write lock no other process commits: what the counter
            // says before this transaction's commit is every commit so far.
            var before: UInt32?
            var outside = false
            let result = try withDatabase { database in
                try database.transaction(.immediate) {
                    before = walIndex?.read()?.change
                    if let before, before != ownChange.withLock({ $0 }) {
                        // Another process committed (a restore, an administration command): the store's epoch as it is now.
                        outside = true
                        epochCache.set(try SQLiteTransaction(database: database).storedEpochForUpdate())
                    }
                    let trusted = before != nil && !outside ? readAhead : nil
                    return try body(SQLiteTransaction(database: database, epoch: epochCache, readAhead: trusted))
                }
            }
            let after = walIndex?.read()?.change
            // This commit alone (one more), or none: known; anything else, another process's right after it.
            ownChange.withLock { $0 = (after == before || (before.map { $0 &+ 1 } == after)) ? after : nil }
            if outside { watches.changedAll() }
            return result
        }
    }

    /// Another process's commit, seen by the watch below: the store's epoch
    /// read again and every waiting watch woken (each reads its account and
    /// its token again: a revoked device is told at once).
    private func tookInOutsideCommit() {
        guard let epoch = try? reading({ try $0.storedEpochForUpdate() }) else { return }
        epochCache.set(epoch)
        watches.changedAll()
    }

    public func reading<T>(_ body: (SQLiteTransaction) throws -> T) throws -> T {
        try withDatabase { database in
            try database.transaction(.deferred) { try body(SQLiteTransaction(database: database, epoch: epochCache)) }
        }
    }

    /// The deleted rows were overwritten with zeros (`secure_delete`, see
    /// ``SQLiteTransaction/encrypt(account:keyID:)``); the write-ahead log is
    /// truncated now, so the readable records do not linger in old log
    /// frames either (backups made before keep them: Deploy/SECURITY.md).
    /// One process serves a store file: its watches are woken in memory.
    public func notifyOtherProcesses(account: Int64) {}

    /// Every commit, of any process, moves the WAL index's change counter
    /// (``WALIndexHeader``: SQLite's own mapping of the `-shm` file, read
    /// without a system call). Without it, the WAL file's inode, size and
    /// modification time (nanoseconds, at the kernel's clock tick) tell one.
    public func commitState() -> CommitState? {
        if let walIndex, let header = walIndex.read() {
            return CommitState(Int64(header.change), Int64(header.frames), Int64(header.salt1), Int64(header.salt2))
        }
        var status = stat()
        guard stat(path + "-wal", &status) == 0 else { return nil }
        return CommitState(
            Int64(status.st_ino), Int64(status.st_size), Int64(status.st_mtim.tv_sec), Int64(status.st_mtim.tv_nsec))
    }
    /// SQLite has no `NOTIFY`: four times a second a thread compares the WAL
    /// index's change counter (no system call) with this process's last
    /// commit, under the writers' turn (so none of this process's is under
    /// way). Another process's commit (an administration command, a restore
    /// into the file) reloads the epoch and wakes every watch at once.
    /// - Throws: ``ServerError/storeUnusable(_:)`` when another brsyncd
    ///   serves the file already: one process serves an SQLite store (its
    ///   watches are woken in memory; several instances need PostgreSQL).
    ///   The claim is an exclusive `flock` of `PATH-serving` (a file of its
    ///   own: a descriptor of the database file itself, once closed, would
    ///   drop the locks SQLite holds on it in this process).
    public func startListening() throws {
        let lockPath = path + "-serving"
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw ServerError.storeUnusable("cannot open \(lockPath): \(SystemError.text())") }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            var bytes = [UInt8](repeating: 0, count: 32)
            let count = read(descriptor, &bytes, bytes.count)
            let holder = count > 0 ? String(decoding: bytes[..<count], as: UTF8.self).filter { $0.isNumber } : ""
            Glibc.close(descriptor)
            throw ServerError.storeUnusable(
                "another brsyncd\(holder.isEmpty ? "" : " (process \(holder))") serves \(path) already: "
                    + "one process serves an SQLite store; several instances need PostgreSQL (Deploy/OPERATIONS.md)")
        }
        _ = ftruncate(descriptor, 0)
        let pid = Array("\(getpid())\n".utf8)
        _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        servingLock.store(descriptor, ordering: .relaxed)
        guard walIndex != nil else { return }
        try? startThread { [weak self] in
            while let store = self, !store.closing.load(ordering: .relaxed) {
                store.writers.inTurn {
                    guard let now = store.walIndex?.read()?.change, now != store.ownChange.withLock({ $0 }) else {
                        return
                    }
                    store.ownChange.withLock { $0 = now }
                    store.tookInOutsideCommit()
                }
                usleep(250_000)
            }
        }
    }

    public func scrubAfterEncrypting() {
        try? withDatabase { database in Self.truncateLog(database) }
    }

    /// Copies the write-ahead log into the file and empties it, retried for
    /// up to a second while the background checkpoint or a reader in an old
    /// snapshot holds it. Best effort: after that, the log is overwritten at
    /// the next checkpoint that completes.
    static func truncateLog(_ database: Database) {
        for _ in 0..<100 {
            // One row: busy (1 when it could not finish), log pages, pages copied.
            if let busy = try? database.scalar("PRAGMA wal_checkpoint(TRUNCATE)")?.intValue, busy == 0 { return }
            usleep(10_000)
        }
    }

    func withDatabase<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try pool.withConnection(body)
        } catch let error as DatabaseError {
            throw ServerError.database(error)
        } catch is ConnectionPool.Closed {
            throw ServerError.unavailable("the store is closed")
        }
    }

    public func close() {
        closing.store(true, ordering: .relaxed)
        walIndex?.close()
        pool.close()
        checkpointer?.stop()
        let lock = servingLock.exchange(-1, ordering: .relaxed)
        if lock >= 0 { Glibc.close(lock) } // the claim ends with it
    }

    /// Creates an empty file readable by its owner only.
    static func createPrivateFile(_ path: String) throws {
        let descriptor = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw ServerError.storeUnusable("cannot create \(path): \(SystemError.text())")
        }
        Glibc.close(descriptor)
    }

    /// Copies the store to `destination` with SQLite's online backup (safe while
    /// serving) and gives the copy a new epoch: a restored backup is another
    /// timeline, and clients re-sync fully when they see it.
    public func backup(to destination: String) throws {
        guard access(destination, F_OK) != 0 else {
            throw ServerError.conflict("\(destination) exists already; choose a new file")
        }
        try Self.createPrivateFile(destination)
        do {
            let target = try Database(path: destination, mode: .readWriteCreate)
            try withDatabase { database in try database.backup(to: target) }
            try target.run("UPDATE meta SET value = ? WHERE key = 'epoch'", [.text(Crypto.hex(Crypto.randomBytes(8)))])
            let check = try target.scalar("PRAGMA integrity_check")?.stringValue
            guard check == "ok" else {
                throw ServerError.storeUnusable("the backup failed its integrity check: \(check ?? "?")")
            }
        } catch let error as DatabaseError {
            unlink(destination)
            if error.isCantOpen { throw ServerError.storeUnusable("cannot create \(destination): \(error.message)") }
            throw ServerError.database(error)
        }
    }

}
