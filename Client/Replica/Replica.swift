import Glibc
import JSON
import Model
import Storage
import SyncCore
import SystemServices

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The local SQLite replica of browsers, rules and settings, with its device
/// id, hybrid logical clock and change log.
///
/// Every write goes through ``write(_:key:changes:)``, which stamps the changed
/// fields with the clock, bumps the record's version vector and appends to the
/// change log in one transaction. Not thread-safe: one replica object per thread.
public final class Replica {
    /// The folder holding the replica (`--home`, `BRSYNC_HOME`, or `$XDG_DATA_HOME/brsync`).
    public let home: String
    public let path: String
    public let database: Database
    /// This replica's device id: made at `init`, replaced when the replica
    /// turns out to be a copy of another (see ``forkDeviceID()``).
    public private(set) var deviceID: String
    public internal(set) var deviceName: String
    private var clock: HybridLogicalClock
    /// Wall-clock time in milliseconds since 1970; replaced in tests.
    private let now: () -> Int64
    private let busyTimeoutMilliseconds: Int32

    public static let fileName = "replica.sqlite"
    public static let defaultBusyTimeoutMilliseconds: Int32 = 5000

    private init(home: String, database: Database, busyTimeout: Int32, now: @escaping () -> Int64) throws {
        self.home = home
        path = database.path
        self.database = database
        self.now = now
        busyTimeoutMilliseconds = busyTimeout
        let meta = try Self.readMeta(database)
        guard let deviceID = meta["device_id"] else {
            throw ReplicaError.notAReplica(path: database.path, reason: "it has no device id")
        }
        self.deviceID = deviceID
        deviceName = meta["device_name"] ?? ""
        clock = HybridLogicalClock(device: deviceID, last: meta["hlc"].flatMap(HLCTimestamp.init(text:)))
    }

    /// Creates the replica in `home`, or opens it when it exists (then nothing changes).
    /// - Returns: the replica and whether it was created now.
    public static func initialize(
        home: String, deviceName: String?, busyTimeout: Int32 = defaultBusyTimeoutMilliseconds,
        now: @escaping () -> Int64 = Clock.wallMillis
    ) throws -> (replica: Replica, created: Bool) {
        let path = "\(home)/\(fileName)"
        // An `init` stopped before it wrote anything left an empty file: made again.
        if isEmptyFile(path) {
            for suffix in ["", "-wal", "-shm"] { _ = unlink(path + suffix) }
        }
        if FileManager.default.fileExists(atPath: path) {
            let replica = try open(home: home, busyTimeout: busyTimeout, now: now)
            return (replica, false)
        }
        do {
            try FileManager.default.createDirectory(
                atPath: home, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        } catch {
            throw ReplicaError.unreadable(path: home, reason: "cannot create the folder: \(error)")
        }
        try makePrivate(home: home, path: path)
        // Made owner-only before SQLite opens it: its WAL and shared-memory
        // files take the database file's mode.
        let descriptor = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw ReplicaError.unreadable(path: path, reason: "cannot create the file: \(SystemError.text())")
        }
        close(descriptor)
        let database = try guarded(path, busyTimeout) {
            try Database(path: path, mode: .readWriteCreate, busyTimeoutMilliseconds: busyTimeout)
        }
        try guarded(path, busyTimeout) {
            try database.execute("PRAGMA journal_mode = WAL")
            try database.execute("PRAGMA application_id = \(ReplicaSchema.applicationID)")
            try ReplicaSchema.migrator.migrate(database)
            let name = deviceName ?? ProcessInfo.processInfo.hostName
            try database.transaction {
                try database.setMeta("device_id", makeDeviceID())
                try database.setMeta("device_name", name)
                try database.setMeta("created_at", String(now()))
            }
        }
        return (try Replica(home: home, database: database, busyTimeout: busyTimeout, now: now), true)
    }

    /// Opens the replica in `home`.
    /// - Throws: ``ReplicaError`` when there is none, the file is not a replica,
    ///   is from a newer brsync (the file is left untouched) or is locked.
    public static func open(
        home: String, busyTimeout: Int32 = defaultBusyTimeoutMilliseconds, now: @escaping () -> Int64 = Clock.wallMillis
    ) throws -> Replica {
        let path = "\(home)/\(fileName)"
        // Plain system calls: a resolve (a clicked link) opens the replica
        // first thing, and Foundation's file manager costs its start-up.
        guard access(path, F_OK) == 0 else { throw ReplicaError.notInitialized(home: home) }
        guard access(path, R_OK) == 0 else {
            throw ReplicaError.unreadable(path: path, reason: "permission denied")
        }
        try makePrivate(home: home, path: path)
        // A file of 0 bytes would open as an empty database of no program.
        if isEmptyFile(path) { throw ReplicaError.empty(path: path) }
        let database = try guarded(path, busyTimeout) {
            try Database(path: path, mode: .readWrite, busyTimeoutMilliseconds: busyTimeout)
        }
        try guarded(path, busyTimeout) {
            // Read-only checks first: nothing is written to a file that is not ours.
            let applicationID = try database.scalar("PRAGMA application_id")?.intValue ?? 0
            guard applicationID == Int(ReplicaSchema.applicationID) else {
                throw ReplicaError.notAReplica(path: path, reason: "an SQLite database of another program")
            }
            let version = try database.userVersion
            guard version <= ReplicaSchema.migrator.latestVersion else {
                throw ReplicaError.newerSchema(
                    path: path, found: version, supported: ReplicaSchema.migrator.latestVersion)
            }
            if version < ReplicaSchema.migrator.latestVersion { try ReplicaSchema.migrator.migrate(database) }
        }
        return try guarded(path, busyTimeout) {
            try Replica(home: home, database: database, busyTimeout: busyTimeout, now: now)
        }
    }

    /// Whether the replica's file has 0 bytes and its write-ahead log holds
    /// nothing either (a WAL beside an empty file may hold the whole
    /// database, not yet checkpointed).
    static func isEmptyFile(_ path: String) -> Bool {
        func size(_ file: String) -> Int? {
            var info = stat()
            return lstat(file, &info) == 0 && info.st_mode & S_IFMT == S_IFREG ? Int(info.st_size) : nil
        }
        return size(path) == 0 && (size(path + "-wal") ?? 0) == 0
    }

    /// Keeps a home owner-only whatever the umask: the folder 0700, the
    /// replica and its WAL and shared-memory files 0600 (they hold every
    /// rule). A folder or file others can open is tightened; a folder that
    /// cannot be (another user's) is refused.
    static func makePrivate(home: String, path: String) throws {
        var info = stat()
        if stat(home, &info) == 0, info.st_mode & 0o077 != 0, chmod(home, 0o700) != 0 {
            throw ReplicaError.unreadable(
                path: home,
                reason: "other users can open this folder, and it cannot be made private "
                    + "(\(SystemError.text())): 'chmod 700' it, or use another --home")
        }
        for suffix in ["", "-wal", "-shm"] {
            let file = path + suffix
            if lstat(file, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_mode & 0o077 != 0 {
                _ = chmod(file, 0o600)
            }
        }
    }

    /// Maps SQLite failures to what they mean for a replica.
    static func guarded<T>(_ path: String, _ busyTimeout: Int32, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as DatabaseError {
            if error.isNotADatabase {
                throw ReplicaError.damaged(path: path, reason: "the file is not an SQLite database")
            }
            if error.isBusy { throw ReplicaError.locked(path: path, waitedMilliseconds: busyTimeout) }
            if error.isCorrupt {
                throw ReplicaError.damaged(path: path, reason: "the database is corrupt: \(error.message)")
            }
            if error.isCantOpen || error.isReadOnly { throw ReplicaError.unreadable(path: path, reason: error.message) }
            throw ReplicaError.database(error)
        } catch let problem as Migrator.Problem {
            switch problem {
            case .newerSchema(let found, let supported):
                throw ReplicaError.newerSchema(path: path, found: found, supported: supported)
            }
        }
    }

    /// Runs `body` in an immediate transaction, with SQLite errors mapped.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try Self.guarded(path, busyTimeoutMilliseconds) {
            if inTransaction { return try body() }
            inTransaction = true
            wroteLocalChange = false
            defer { inTransaction = false }
            // The clock offset of the last answer goes with the first write after it.
            let offset = pendingClockOffset
            let result: T
            do {
                result = try database.transaction(.immediate) {
                    if let offset { try setMeta("clock_offset", String(offset)) }
                    return try body()
                }
            } catch {
                // Stamps of records it stored are not what the file holds.
                storedStamps = nil
                throw error
            }
            if pendingClockOffset == offset { pendingClockOffset = nil }
            // A running `brsync watch` pushes the edit at once.
            if wroteLocalChange { WatchWake.poke(home: home) }
            return result
        }
    }

    private var inTransaction = false
    /// Each field's stamp of the records this object stored while
    /// ``keepStoredStamps(keyID:)`` was on (``tagAndReadRegisters(keyID:tag:tagOfFiledKey:)``); nil when off.
    var storedStamps: StoredStamps?
    /// The transaction logged a local edit (``write(_:key:changes:)``).
    private var wroteLocalChange = false
    /// See ``observeServerTime(_:ageMilliseconds:)``.
    var pendingClockOffset: Int64?
    /// Takes this connection's checkpoints while ``startCheckpointsAside()`` is on.
    private var checkpointsAside: BackgroundCheckpointer?

    /// Hands this replica's write-ahead log checkpoints to a thread of
    /// their own (``BackgroundCheckpointer``) until ``endCheckpointsAside()``:
    /// a pull of many pages then never waits in a commit while the log is
    /// copied back (10,000 rules fill it past 1,000 pages three times). Where
    /// no thread can start, the commits checkpoint as always.
    public func startCheckpointsAside() {
        guard checkpointsAside == nil, let checkpointer = try? BackgroundCheckpointer(path: path) else { return }
        checkpointer.attach(database)
        checkpointsAside = checkpointer
    }

    /// Ends ``startCheckpointsAside()``: its thread ends, and this
    /// connection's commits checkpoint again.
    public func endCheckpointsAside() {
        guard let checkpointer = checkpointsAside.take() else { return }
        checkpointer.stop()
        BackgroundCheckpointer.detach(database)
    }

    /// Runs a read with SQLite errors mapped.
    func read<T>(_ body: () throws -> T) throws -> T {
        try Self.guarded(path, busyTimeoutMilliseconds, body)
    }

    /// Runs `body` with up to 32 MiB of pages kept (SQLite's default, kept
    /// otherwise, is 2 MiB; its sorter takes as much): sorting 20,000 rules
    /// for listing and export stays in memory instead of spilling to a
    /// temporary file. Only there: a pull that stores 10,000 rules with the
    /// large cache held every page it touched (9 MB more memory, 2,900 more
    /// page faults, its apply ~4% slower).
    func withLargePageCache<T>(_ body: () throws -> T) throws -> T {
        try database.execute("PRAGMA cache_size = -32768")
        defer { try? database.execute("PRAGMA cache_size = -2000") }
        return try body()
    }

    private static func readMeta(_ database: Database) throws -> [String: String] {
        var meta: [String: String] = [:]
        for (key, value) in try database.query(
            "SELECT key, value FROM meta", [], { ($0.string(0) ?? "", $0.string(1) ?? "") })
        {
            meta[key] = value
        }
        return meta
    }

    static func makeDeviceID() -> String {
        var generator = SystemRandomNumberGenerator()
        let value = generator.next() as UInt64
        let text = String(value, radix: 16)
        return String(repeating: "0", count: 16 - text.count) + text
    }

    /// The clock's high-water mark.
    public var lastStamp: HLCTimestamp { clock.last }

    // MARK: - The write path

    /// What a write did.
    public enum WriteOutcome: Sendable, Equatable {
        /// Every value was already as asked: nothing was stamped or logged.
        case unchanged
        /// The fields changed, stamped with this stamp; logged as this device sequence number.
        case written(stamp: HLCTimestamp, deviceSequence: Int64)
    }

    /// Sets `changes` on the record `key` of `collection`: the one path every
    /// local write takes. In one transaction it stamps each changed field with a
    /// new HLC stamp, bumps the record's version vector for this device, writes
    /// the record and appends the change to the log. Fields whose value is
    /// already as asked are left alone; when none changes, nothing is written.
    ///
    /// A write that brings a deleted record back logs every field it sets, not
    /// only those whose value differs from the tombstone's: the server may have
    /// purged the tombstone with its fields, and the record must arrive whole.
    /// - Throws: ``ReplicaError/invalidInput(_:)`` when the record would break
    ///   a limit every replica and the server enforce (key, field names, value
    ///   size and depth, field count): nothing is written.
    @discardableResult
    public func write(_ collection: RecordCollection, key: String, changes: [String: JSONValue]) throws -> WriteOutcome
    {
        if let problem = Wire.problem(key: key) {
            throw ReplicaError.invalidInput("cannot save \(collection.rawValue) record: \(problem)")
        }
        return try transaction {
            var state = try record(collection, key: key) ?? RecordState()
            let resurrects = state.isDeleted && changes[RecordState.deletedField] == .bool(false)
            var changed = resurrects ? changes : changes.filter { state.fields[$0.key]?.value != $0.value }
            guard !changed.isEmpty else { return .unchanged }
            // Every edit says the record is alive, with the edit's stamp: an edit
            // made after a delete (elsewhere, unseen) must win over it, as the
            // newest stamp wins for every field, deletion included.
            if changed[RecordState.deletedField] == nil { changed[RecordState.deletedField] = .bool(false) }
            let overwrote = state.newestStamp
            var replaced: [String: JSONValue] = [:]
            for field in changed.keys {
                if let register = state.fields[field] { replaced[field] = .string(register.stamp.description) }
            }
            try loadPersistedClock()
            let stamp = clock.tick(wallMillis: try serverTimeMillis())
            var logged: [String: StampedValue] = [:]
            for (field, value) in changed {
                let register = StampedValue(value, stamp: stamp)
                state.fields[field] = register
                logged[field] = register
            }
            state.versions.increment(deviceID)
            state.versions = state.versions.capped(keeping: [deviceID])
            if let problem = Wire.problem(state: state) {
                throw ReplicaError.invalidInput("cannot save \(collection.rawValue) record '\(key)': \(problem)")
            }
            try store(collection, key: key, state: state)
            wroteLocalChange = true
            let sequence =
                (try database.scalar(
                    "SELECT MAX(device_seq) FROM changes WHERE device = ?", [.text(deviceID)])?.int64Value ?? 0) + 1
            try database.run(
                """
                INSERT INTO changes (device, device_seq, collection, key, fields, versions, kind, recorded_at, overwrote, manifest, replaced, sealed_format)
                VALUES (?, ?, ?, ?, ?, ?, 'local', ?, ?, ?, ?, ?)
                """,
                [
                    .text(deviceID), .integer(sequence), .text(collection.rawValue), .text(key),
                    .text(RecordState.encodeFields(logged)), .text(RecordState.encodeVersions(state.versions)),
                    .integer(now()),
                    overwrote.map { .text($0.description) } ?? .null,
                    .text(RecordManifest(of: state, through: stamp).text(at: stamp)),
                    .text(JSONValue.object(replaced).jsonText),
                    // Pinned now when the account is sealed in format 2
                    // (it never turns back): the push need not pin it
                    // (``pinSealedFormat(_:of:)``), one row at a time.
                    try meta("sealed_format") == "2" ? .integer(2) : .null,
                ])
            try persistClock()
            return .written(stamp: stamp, deviceSequence: sequence)
        }
    }

    /// Takes the device id and name another process gave this replica since
    /// this one opened it (a join, a key change, `brsync device name`): a
    /// window that stays open shows who it is now.
    public func refreshIdentity() throws {
        try read {
            if let id = try database.meta("device_id"), id != deviceID {
                deviceID = id
                clock = HybridLogicalClock(device: id, last: clock.last)
            }
            if let name = try database.meta("device_name") { deviceName = name }
        }
    }

    /// Takes the persisted device id, and the persisted high-water mark if it
    /// is ahead of this process's clock. Called inside write transactions:
    /// another process (a sync, an edit) may have moved the clock or forked the
    /// device id since this one opened the replica, and an edit must be
    /// stamped above everything any process of this replica has seen, as the
    /// device the replica now is.
    func loadPersistedClock() throws {
        // Another process may have given this replica a new device id (a fork).
        if let id = try database.meta("device_id"), id != deviceID {
            deviceID = id
            clock = HybridLogicalClock(device: id, last: clock.last)
        }
        if let text = try database.meta("hlc"),
            let persisted = HLCTimestamp(text: text),
            persisted.wallMillis > clock.last.wallMillis
                || (persisted.wallMillis == clock.last.wallMillis && persisted.counter > clock.last.counter)
        {
            clock = HybridLogicalClock(device: deviceID, last: persisted)
        }
    }

    /// Persists the clock (inside the write transaction that called
    /// ``loadPersistedClock()``, so the value written is the maximum).
    func persistClock() throws {
        try database.setMeta("hlc", clock.last.description)
    }

    /// Replaces the clock (re-stamping repairs a high-water mark that a wrong
    /// clock pushed into the future).
    func resetClock(to last: HLCTimestamp) {
        clock = HybridLogicalClock(device: deviceID, last: last)
    }

    /// Takes a new device id (inside a transaction of the caller).
    func adoptDeviceID(_ id: String) throws {
        try database.setMeta("device_id", id)
        // Nothing was acknowledged under the new id.
        try database.setMeta("acknowledged_high", nil)
        // The old id's writes made elsewhere are another device's now.
        try database.run("DELETE FROM writes_from_elsewhere")
        deviceID = id
        clock = HybridLogicalClock(device: id, last: clock.last)
    }

    func tickClock() throws -> HLCTimestamp {
        clock.tick(wallMillis: try serverTimeMillis())
    }

    /// A number that changes when another connection (a sync, a command in
    /// another process) commits to the replica (SQLite's `data_version`):
    /// a window that shows the replica reloads when it moves.
    public func dataVersion() throws -> Int64 {
        try database.scalar("PRAGMA data_version")?.int64Value ?? 0
    }

    /// The stored state of a record, or nil.
    public func record(_ collection: RecordCollection, key: String) throws -> RecordState? {
        try read {
            try database.queryFirst(
                "SELECT fields, versions FROM records WHERE collection = ? AND key = ?",
                [.text(collection.rawValue), .text(key)]
            ) { row in try RecordCoding.decodeState(fields: row.string(0) ?? "{}", versions: row.string(1) ?? "{}") }
        }
    }

    /// Every record of a collection (tombstones included), by key.
    public func records(_ collection: RecordCollection) throws -> [(key: String, state: RecordState)] {
        try read {
            try database.query(
                "SELECT key, fields, versions FROM records WHERE collection = ? ORDER BY key",
                [.text(collection.rawValue)]
            ) { row in
                (
                    row.string(0) ?? "",
                    try RecordCoding.decodeState(fields: row.string(1) ?? "{}", versions: row.string(2) ?? "{}")
                )
            }
        }
    }

    /// The live records of a collection (no tombstones), by key, with their
    /// fields only (what listing them needs; versions are for syncing).
    func liveRecords(_ collection: RecordCollection) throws -> [(key: String, state: RecordState)] {
        try read {
            try database.query(
                "SELECT key, fields FROM records WHERE collection = ? AND deleted = 0 ORDER BY key",
                [.text(collection.rawValue)]
            ) { row in
                (row.string(0) ?? "", try RecordCoding.decodeFields(row, column: 1))
            }
        }
    }

    func clockObserve(_ stamp: HLCTimestamp, wallMillis: Int64) {
        clock.observe(stamp, wallMillis: wallMillis)
    }

    /// Stores a merged state (from a pull): no stamp, no version bump, no log entry.
    /// - Parameter fieldsText: `RecordState.encodeFields(state.fields)` when the caller has it.
    /// - Parameter filedKey: the key the server files a pulled record
    ///   under (kept with its stamps while they are kept, ``keepStoredStamps(keyID:)``).
    /// - Parameter prepared: what storing `state` writes beside its fields,
    ///   made beforehand (``PreparedRow``) for this very state.
    func storeMerged(
        _ collection: RecordCollection, key: String, state: RecordState, fieldsText: String? = nil,
        filedKey: String? = nil, prepared: PreparedRow? = nil
    ) throws {
        try store(collection, key: key, state: state, fieldsText: fieldsText, filedKey: filedKey, prepared: prepared)
    }

    private func store(
        _ collection: RecordCollection, key: String, state: RecordState, fieldsText: String? = nil,
        filedKey: String? = nil, prepared: PreparedRow? = nil
    ) throws {
        let derived =
            prepared?.columns ?? (collection == .rules ? RuleColumns(key: key, state: state) : RuleColumns.none)
        try database.run(
            Self.storeStatement,
            [
                .text(collection.rawValue), .text(key), .text(fieldsText ?? RecordState.encodeFields(state.fields)),
                .text(prepared?.versionsText ?? RecordState.encodeVersions(state.versions)),
                DatabaseValue(state.isDeleted),
            ] + derived.values)
        if storedStamps != nil, collection != .ledger {
            storedStamps?.records[StoredStamps.Key(collection: collection, key: key)] = StoredStamps.Stored(
                stamps: state.fields.mapValues(\.stamp), filedKey: filedKey)
        }
    }

    /// Writes a record's row with its rule columns (built once: `store` runs for every record a pull applies).
    private static let storeStatement = """
        INSERT INTO records (collection, key, fields, versions, deleted, \(RuleColumns.names.joined(separator: ", ")))
        VALUES (?, ?, ?, ?, ?, \(RuleColumns.names.map { _ in "?" }.joined(separator: ", ")))
        ON CONFLICT (collection, key) DO UPDATE SET
            fields = excluded.fields, versions = excluded.versions, deleted = excluded.deleted,
            \(RuleColumns.names.map { "\($0) = excluded.\($0)" }.joined(separator: ", "))
        """

    // MARK: - Meta

    public var currentMillis: Int64 { now() }

    /// This machine's clock corrected by the offset last learned from the
    /// server (see observeServerClock): the time every stamp is based on.
    func serverTimeMillis() throws -> Int64 {
        now() + (try clockOffset()) // both bounded: no overflow
    }
}
