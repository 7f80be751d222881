import Cryptography
import Glibc
import Model
import Net
import Storage
import SyncCore
import Synchronization
import SystemServices

/// The store's SQLite dialect (the embedded default): one file in WAL mode,
/// served by one process, its writers taking turns account by account
/// (Storage's ``DatabasePool``).
final class SQLiteDialect: StoreDialect {
    static let applicationID: Int32 = 0x6272_7364 // "brsd"

    let path: String
    /// The connections, the one writer at a time (accounts in turn), the
    /// WAL checkpoints and other processes' commits (``DatabasePool``).
    private let pool: DatabasePool
    /// Set by ``close()``: the outside-commit watch ends.
    private let closing = Atomic<Bool>(false)
    /// The lock file held while serving (``startListening()``), or -1.
    private let servingLock = Atomic<Int32>(-1)
    /// The store's watches, woken when another process commits.
    let watches: WatchHub
    /// The timeline's id, kept in the database (`meta.epoch`); a new one is
    /// started when a rollback is detected.
    let epochCache: EpochCache

    /// Opens (or creates) the store at `path`: see ``SyncStore/init(sqlite:connections:busyTimeoutMilliseconds:clock:)``.
    init(path: String, connections: Int, busyTimeoutMilliseconds: Int32, watches: WatchHub) throws {
        self.path = path
        self.watches = watches
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
            guard version <= StoreSchema.sqlite.latestVersion else {
                throw ServerError.newerSchema(found: version, supported: StoreSchema.sqlite.latestVersion)
            }
            try first.execute("PRAGMA journal_mode = WAL")
            try first.execute("PRAGMA application_id = \(Self.applicationID)")
            try StoreSchema.sqlite.migrate(first)
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
            // the push that fills the log (``BackgroundCheckpointer``).
            pool = try DatabasePool(
                path: path, size: connections, first: first, busyTimeoutMilliseconds: busyTimeoutMilliseconds
            ) { database in
                // 16 MiB of page cache per connection (SQLite keeps 2 MiB by default): a push
                // of 10,000 sealed records reads its B-tree pages back from the cache, not with pread.
                try database.execute("PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL; PRAGMA cache_size = -16384")
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

    /// The records read in a read transaction of their own, before the write
    /// lock is queued for: a relay's large records are read and decoded
    /// while other writers write, and the write only checks that each is
    /// still the version read (``SQLiteTransaction/record(account:collection:key:)``).
    func readAhead(
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
    func writing<T>(
        account: Int64?, readAhead: Store.ReadAhead?, _ body: (any StoreTransaction) throws -> T
    ) throws -> T {
        var outside = false
        let result = try database { pool in
            try pool.write(turn: account) { database, since in
                if since == .committed {
                    // Another process committed (a restore, an administration command): the store's epoch as it is now.
                    outside = true
                    epochCache.set(try SQLiteTransaction(database: database).storedEpochForUpdate())
                }
                let trusted = since == .none ? readAhead : nil
                let transaction = SQLiteTransaction(database: database, epoch: epochCache, readAhead: trusted)
                let result = try body(transaction)
                // New records counted by the transaction go to their accounts before it commits.
                try transaction.settleCounts()
                return result
            }
        }
        if outside { watches.changedAll() }
        return result
    }

    /// Another process's commit, seen by the watch below: the store's epoch
    /// read again and every waiting watch woken (each reads its account and
    /// its token again: a revoked device is told at once).
    private func tookInOutsideCommit() {
        guard let epoch = try? reading({ try $0.storedEpochForUpdate() }) else { return }
        epochCache.set(epoch)
        watches.changedAll()
    }

    func reading<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        try database { pool in
            try pool.read { database in try body(SQLiteTransaction(database: database, epoch: epochCache)) }
        }
    }

    /// The deleted rows were overwritten with zeros (`secure_delete`, see
    /// ``SQLiteTransaction/encrypt(account:keyID:)``); the write-ahead log is
    /// truncated now, so the readable records do not linger in old log
    /// frames either (backups made before keep them: Deploy/SECURITY.md).
    /// One process serves a store file: its watches are woken in memory.
    func notifyOtherProcesses(account: Int64) {}

    /// Every commit, of any process, moves the WAL index's change counter
    /// (``WALIndexHeader``: SQLite's own mapping of the `-shm` file, read
    /// without a system call). Without it, the WAL file's inode, size and
    /// modification time (nanoseconds, at the kernel's clock tick) tell one.
    func commitState() -> CommitState? {
        if let header = pool.commitReading() {
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
    func startListening() throws {
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
        guard pool.seesOutsideCommits else { return }
        try? startThread { [weak self] in
            while let store = self, !store.closing.load(ordering: .relaxed) {
                store.pool.takeInOutsideCommit { store.tookInOutsideCommit() }
                usleep(250_000)
            }
        }
    }

    func scrubAfterEncrypting() {
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
        try database { pool in try pool.withConnection(body) }
    }

    /// Runs `body` with the pool, its errors the store's.
    private func database<T>(_ body: (DatabasePool) throws -> T) throws -> T {
        do {
            return try body(pool)
        } catch let error as DatabaseError {
            throw ServerError.database(error)
        } catch is ConnectionPool.Closed {
            throw ServerError.unavailable("the store is closed")
        }
    }

    func close() {
        closing.store(true, ordering: .relaxed)
        pool.close()
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
    func backup(to destination: String) throws {
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
