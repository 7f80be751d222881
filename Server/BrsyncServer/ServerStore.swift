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
    private let clock: AtomicClock
    /// What this process last wrote of each device's `acknowledged_cursor` and
    /// `last_seen`: concurrent pulls of one device then write it once, not all.
    private struct Bookkeeping {
        var acknowledged: [Int64: Int64] = [:]
        var lastSeen: [Int64: Int64] = [:]
    }

    private let bookkeeping = Mutex(Bookkeeping())
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

    // MARK: - Accounts and devices

    public struct Account: Sendable, Equatable {
        public let id: Int64
        public let name: String
        public let devices: Int
        public let records: Int
    }

    public struct Device: Sendable, Equatable {
        public let id: Int64
        public let accountID: Int64
        public let name: String
        public let clientDevice: String?
        public let revoked: Bool
        public let lastSeenMillis: Int64?
        public let lastDeviceSequence: Int64
        public let acknowledgedCursor: Int64
    }

    static func validateName(_ name: String, what: String) throws {
        guard !name.isBlank, name.utf8.count <= 64, !name.contains(where: { $0.isNewline || $0.asciiValue.map { $0 < 0x20 } == true }) else {
            throw ServerError.badRequest("\(what) names are 1 to 64 characters on one line")
        }
    }

    public func addAccount(_ name: String) throws {
        try Self.validateName(name, what: "account")
        try withDatabase { database in
            if try database.scalar("SELECT 1 FROM accounts WHERE name = ?", [.text(name)]) != nil {
                throw ServerError.conflict("the account '\(name)' exists already")
            }
            try database.run("INSERT INTO accounts (name, created_at) VALUES (?, ?)", [.text(name), .integer(Self.nowMillis())])
        }
    }

    public func accounts() throws -> [Account] {
        try withDatabase { database in
            try database.query("""
                SELECT a.id, a.name, (SELECT COUNT(*) FROM devices d WHERE d.account_id = a.id),
                       (SELECT COUNT(*) FROM records r WHERE r.account_id = a.id)
                FROM accounts a ORDER BY a.name
                """) { row in
                Account(id: row.int64(0) ?? 0, name: row.string(1) ?? "", devices: row.int(2) ?? 0, records: row.int(3) ?? 0)
            }
        }
    }

    /// Deletes an account with its devices and records.
    public func removeAccount(_ name: String) throws {
        try withDatabase { database in
            try database.transaction {
                guard let id = try database.scalar("SELECT id FROM accounts WHERE name = ?", [.text(name)])?.int64Value else {
                    throw ServerError.notFound("no account named '\(name)'")
                }
                try database.run("DELETE FROM records WHERE account_id = ?", [.integer(id)])
                try database.run("DELETE FROM devices WHERE account_id = ?", [.integer(id)])
                try database.run("DELETE FROM accounts WHERE id = ?", [.integer(id)])
            }
        }
    }

    private func accountID(_ name: String, in database: Database) throws -> Int64 {
        guard let id = try database.scalar("SELECT id FROM accounts WHERE name = ?", [.text(name)])?.int64Value else {
            throw ServerError.notFound("no account named '\(name)'")
        }
        return id
    }

    /// Adds a device and returns its token: 256 random bits, shown once and
    /// stored only as its SHA-256 hash.
    public func addDevice(account: String, name: String) throws -> String {
        try Self.validateName(name, what: "device")
        let token = Tokens.make()
        try withDatabase { database in
            try database.transaction {
                let id = try accountID(account, in: database)
                if try database.scalar("SELECT 1 FROM devices WHERE account_id = ? AND name = ?", [.integer(id), .text(name)]) != nil {
                    throw ServerError.conflict("the account '\(account)' has a device named '\(name)' already")
                }
                try database.run(
                    "INSERT INTO devices (account_id, name, token_hash, created_at) VALUES (?, ?, ?, ?)",
                    [.integer(id), .text(name), .blob(Tokens.hash(token)), .integer(Self.nowMillis())])
            }
        }
        return token
    }

    public func devices(account: String) throws -> [Device] {
        try withDatabase { database in
            let id = try accountID(account, in: database)
            return try database.query(
                """
                SELECT id, account_id, name, client_device, revoked, last_seen, last_device_seq, acknowledged_cursor
                FROM devices WHERE account_id = ? ORDER BY name
                """, [.integer(id)], Self.device)
        }
    }

    static func device(_ row: Row) -> Device {
        Device(id: row.int64(0) ?? 0, accountID: row.int64(1) ?? 0, name: row.string(2) ?? "", clientDevice: row.string(3),
               revoked: row.int(4) == 1, lastSeenMillis: row.int64(5), lastDeviceSequence: row.int64(6) ?? 0,
               acknowledgedCursor: row.int64(7) ?? 0)
    }

    public func revokeDevice(account: String, name: String) throws {
        try withDatabase { database in
            let id = try accountID(account, in: database)
            try database.run("UPDATE devices SET revoked = 1 WHERE account_id = ? AND name = ?", [.integer(id), .text(name)])
            guard database.changes == 1 else { throw ServerError.notFound("the account '\(account)' has no device named '\(name)'") }
        }
    }

    /// Deletes a device (used by `brsyncd dev` to issue a fresh token).
    public func removeDevice(account: String, name: String) throws {
        try withDatabase { database in
            let id = try accountID(account, in: database)
            try database.run("DELETE FROM devices WHERE account_id = ? AND name = ?", [.integer(id), .text(name)])
        }
    }

    /// The device a bearer token belongs to.
    /// - Throws: ``ServerError/unauthorized(_:)`` for an unknown token,
    ///   ``ServerError/revoked`` for a revoked one.
    public func authenticate(token: String) throws -> Device {
        try withDatabase { database in try authenticate(token: token, in: database) }
    }

    func authenticate(token: String, in database: Database) throws -> Device {
        let hash = Tokens.hash(token)
        let found = try database.queryFirst(
                """
                SELECT id, account_id, name, client_device, revoked, last_seen, last_device_seq, acknowledged_cursor, token_hash
                FROM devices WHERE token_hash = ?
                """, [.blob(hash)]
            ) { row -> Device? in
                // The lookup is by hash; compare again in constant time before trusting it.
                guard case .blob(let stored) = row[8], Crypto.constantTimeEqual(stored, hash) else { return nil }
                return Self.device(row)
            }
        guard let device = found ?? nil else { throw ServerError.unauthorized("the token is not valid") }
        guard !device.revoked else { throw ServerError.revoked }
        return device
    }

    // MARK: - Sync

    /// Applies a push from `device` in one transaction: the changes after the
    /// device's last applied sequence are merged with the shared merge, each
    /// changed record gets the account's next sequence number, and the device's
    /// last applied sequence is recorded with them. A retried push is
    /// acknowledged and applies nothing; a gap is refused.
    public func push(_ request: PushRequest, from device: Device, maxClockOffsetMilliseconds: Int64) throws -> PushResponse {
        let now = Self.nowMillis()
        for change in request.changes {
            for (name, register) in change.state.fields {
                guard register.stamp.device == request.device else {
                    throw ServerError.foreignStamp("field \"\(name)\" of change \(change.sequence) carries a stamp of device \(register.stamp.device); a device pushes only its own edits")
                }
                let ahead = register.stamp.wallMillis - now
                if ahead > maxClockOffsetMilliseconds {
                    throw ServerError.clockSkew(aheadMilliseconds: ahead, maximumMilliseconds: maxClockOffsetMilliseconds)
                }
            }
        }
        let (acknowledged, applied, lost) = try withDatabase { database in
            try database.transaction(.immediate) { () -> (Int64, Int, [LostField]) in
                guard let current = try database.queryFirst(
                    "SELECT client_device, last_device_seq, revoked FROM devices WHERE id = ?", [.integer(device.id)],
                    { ($0.string(0), $0.int64(1) ?? 0, $0.int(2) == 1) })
                else { throw ServerError.unauthorized("the device no longer exists") }
                if current.2 { throw ServerError.revoked }
                if let bound = current.0, bound != request.device { throw ServerError.deviceMismatch(bound: bound) }
                let last = current.1
                if request.from > last + 1 { throw ServerError.gap(expected: last + 1, got: request.from) }
                var lost: [LostField] = []
                var applied = 0
                if request.to > last {
                    var nextSequence = try database.scalar("SELECT next_seq FROM accounts WHERE id = ?", [.integer(device.accountID)])?.int64Value ?? 1
                    for change in request.changes where change.sequence > last {
                        let existing = try database.queryFirst(
                            "SELECT fields, versions FROM records WHERE account_id = ? AND collection = ? AND key = ?",
                            [.integer(device.accountID), .text(change.collection.rawValue), .text(change.key)]
                        ) { row in try StoredRecord.decode(fields: row.string(0) ?? "{}", versions: row.string(1) ?? "{}") }
                        let base = existing ?? RecordState()
                        let (merged, concurrentLosers) = base.merged(with: change.state)
                        var reported: Set<String> = []
                        for (name, pushed) in change.state.fields {
                            if let winner = merged.fields[name], winner != pushed {
                                reported.insert(name)
                                lost.append(LostField(sequence: change.sequence, collection: change.collection, key: change.key,
                                                      field: name, lost: pushed, winner: winner))
                            }
                        }
                        // Values of another device that this concurrent push overwrote.
                        for loser in concurrentLosers where !reported.contains(loser.field) {
                            lost.append(LostField(sequence: change.sequence, collection: change.collection, key: change.key,
                                                  field: loser.field, lost: loser.lost, winner: loser.winner))
                        }
                        guard merged != base else { continue }
                        try database.run(
                            """
                            INSERT INTO records (account_id, collection, key, fields, versions, seq, deleted, updated_at)
                            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                            ON CONFLICT (account_id, collection, key) DO UPDATE SET
                                fields = excluded.fields, versions = excluded.versions, seq = excluded.seq,
                                deleted = excluded.deleted, updated_at = excluded.updated_at
                            """,
                            [.integer(device.accountID), .text(change.collection.rawValue), .text(change.key),
                             .text(StoredRecord.encode(merged.fields)), .text(StoredRecord.encode(merged.versions)),
                             .integer(nextSequence), DatabaseValue(merged.isDeleted), .integer(now)])
                        nextSequence += 1
                        applied += 1
                    }
                    try database.run("UPDATE accounts SET next_seq = ? WHERE id = ?", [.integer(nextSequence), .integer(device.accountID)])
                }
                try database.run(
                    "UPDATE devices SET last_device_seq = MAX(last_device_seq, ?), client_device = ?, last_seen = ? WHERE id = ?",
                    [.integer(request.to), .text(request.device), .integer(now), .integer(device.id)])
                return (max(last, request.to), applied, lost)
            }
        }
        if let newest = request.changes.lazy.flatMap({ $0.state.fields.values.map(\.stamp) }).max() {
            clock.observe(newest, wallMillis: now)
        }
        let stamp = clock.tick(wallMillis: now)
        return PushResponse(acknowledged: acknowledged, applied: applied, clock: stamp, epoch: epoch, lost: lost)
    }

    /// Records of `device`'s account changed after `cursor`, in sequence order,
    /// at most `limit`. Sequence numbers are assigned inside write transactions,
    /// which SQLite serialises, and a read sees whole transactions only: a pull
    /// never skips a change that commits while it runs.
    public func pull(since cursor: Int64, limit: Int, device: Device) throws -> PullResponse {
        let (rows, page) = try withDatabase { database in
            let rows = try pullRows(since: cursor, limit: limit, accountID: device.accountID, in: database)
            return (rows, try finishPull(rows, since: cursor, limit: limit, device: device, in: database))
        }
        let changes = try rows.prefix(limit).map { row in
            ChangeRecord(sequence: row.sequence, collection: row.collection, key: row.key,
                         state: try StoredRecord.decode(fields: row.fields, versions: row.versions))
        }
        return PullResponse(changes: Array(changes), next: page.next, more: page.more, epoch: epoch, clock: clockStamp())
    }

    /// Authenticates `token` and answers a pull for its device, as the JSON
    /// text of a ``PullResponse``: one borrowed connection, one read
    /// transaction, and the stored fields and versions spliced in as stored
    /// (they are kept in the wire's form), so serving a page parses nothing.
    public func pullText(token: String, since cursor: Int64, limit: Int) throws -> [UInt8] {
        let (rows, page) = try withDatabase { database in
            let (device, rows) = try database.transaction(.deferred) {
                let device = try authenticate(token: token, in: database)
                return (device, try pullRows(since: cursor, limit: limit, accountID: device.accountID, in: database))
            }
            return (rows, try finishPull(rows, since: cursor, limit: limit, device: device, in: database))
        }
        var output: [UInt8] = []
        output.reserveCapacity(128 + rows.reduce(0) { $0 + $1.fields.utf8.count + $1.versions.utf8.count + $1.key.utf8.count + 64 })
        output += #"{"changes":["#.utf8
        for (index, row) in rows.prefix(limit).enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            output += #"{"collection":""#.utf8
            output += row.collection.rawValue.utf8
            output += #"","fields":"#.utf8
            output += row.fields.utf8
            output += #","key":"#.utf8
            JSONValue.writeString(row.key, into: &output)
            output += #","seq":"#.utf8
            output += String(row.sequence).utf8
            output += #","versions":"#.utf8
            output += row.versions.utf8
            output.append(UInt8(ascii: "}"))
        }
        output += #"],"clock":""#.utf8
        clockStamp().write(into: &output)
        output += #"","epoch":"#.utf8
        JSONValue.writeString(epoch, into: &output)
        output += #","more":"#.utf8
        output += (page.more ? "true" : "false").utf8
        output += #","next":"#.utf8
        output += String(page.next).utf8
        output.append(UInt8(ascii: "}"))
        return output
    }

    /// A stored record version as read for a pull.
    struct PulledRow {
        let sequence: Int64
        let collection: RecordCollection
        let key: String
        let fields: String
        let versions: String
    }

    private func pullRows(since cursor: Int64, limit: Int, accountID: Int64, in database: Database) throws -> [PulledRow] {
        try database.query(
            "SELECT seq, collection, key, fields, versions FROM records WHERE account_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            [.integer(accountID), .integer(cursor), .integer(Int64(limit + 1))]
        ) { row -> PulledRow in
            guard let collection = row.string(1).flatMap(RecordCollection.init(rawValue:)) else {
                throw ServerError.storeUnusable("a stored record has an unknown collection")
            }
            return PulledRow(sequence: row.int64(0) ?? 0, collection: collection, key: row.string(2) ?? "",
                             fields: row.string(3) ?? "{}", versions: row.string(4) ?? "{}")
        }
    }

    /// The page's cursor and "more" flag, and the device's bookkeeping.
    private func finishPull(_ rows: [PulledRow], since cursor: Int64, limit: Int, device: Device, in database: Database) throws -> (next: Int64, more: Bool) {
        // Bookkeeping writes only when something moved: a no-change pull
        // (the common case, every few minutes per machine) stays a pure read.
        // `acknowledged_cursor` and `last_seen` are written once per device and
        // value (last_seen at most once a minute), so concurrent pulls do not
        // queue on the write lock.
        let now = Self.nowMillis()
        let mayWrite = cursor > device.acknowledgedCursor || now - (device.lastSeenMillis ?? 0) > 60_000
        let write = mayWrite && bookkeeping.withLock { state -> Bool in
            var write = false
            if cursor > max(device.acknowledgedCursor, state.acknowledged[device.id] ?? 0) {
                state.acknowledged[device.id] = cursor
                write = true
            }
            if now - (device.lastSeenMillis ?? 0) > 60_000 && now - (state.lastSeen[device.id] ?? 0) > 60_000 {
                state.lastSeen[device.id] = now
                write = true
            }
            return write
        }
        if write {
            try database.run(
                "UPDATE devices SET acknowledged_cursor = MAX(acknowledged_cursor, ?), last_seen = ? WHERE id = ?",
                [.integer(cursor), .integer(now), .integer(device.id)])
        }
        let more = rows.count > limit
        return (rows.prefix(limit).last?.sequence ?? cursor, more)
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

/// The JSON of stored record fields and versions (the same shape as on the wire).
enum StoredRecord {
    static func encode(_ fields: [String: StampedValue]) -> String {
        RecordState.encodeFields(fields)
    }

    static func encode(_ versions: VersionVector) -> String {
        RecordState.encodeVersions(versions)
    }

    static func decode(fields: String, versions: String) throws -> RecordState {
        do {
            let change = try ChangeRecord(json: .object([
                "seq": .int(0), "collection": .string("rules"), "key": .string("stored"),
                "fields": try JSONValue.parse(fields), "versions": try JSONValue.parse(versions),
            ]))
            return change.state
        } catch {
            throw ServerError.storeUnusable("a stored record is damaged: \(error)")
        }
    }
}

/// Device tokens: `brs_` and 43 characters of base64url (256 random bits).
public enum Tokens {
    public static func make() -> String { "brs_" + Crypto.base64URL(Crypto.randomBytes(32)) }
    public static func hash(_ token: String) -> [UInt8] { Crypto.sha256(Array(token.utf8)) }
}
