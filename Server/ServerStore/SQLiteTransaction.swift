import Cryptography
import Net
import Storage
import SyncCore

/// The SQLite store's SQL (see ``StoreTransaction``), on a connection inside
/// a transaction (a write transaction is `BEGIN IMMEDIATE`: SQLite's one
/// write lock serialises it).
struct SQLiteTransaction: StoreTransaction {
    let database: Database
    /// The store's epoch as this process holds it (one process writes an
    /// SQLite store); nil reads it from the file.
    let epoch: EpochCache?
    /// Records read before this write transaction began (``SQLiteDialect/readAhead(account:keys:)``).
    let readAhead: Store.ReadAhead?
    /// New records written and counted here (``upsertRecord``).
    let added = AddedCounts()

    init(database: Database, epoch: EpochCache? = nil, readAhead: Store.ReadAhead? = nil) {
        self.database = database
        self.epoch = epoch
        self.readAhead = readAhead
    }

    // MARK: - Sync

    func deviceStanding(_ device: Int64) throws -> (revoked: Bool, tokenHash: [UInt8])? {
        try database.queryFirst("SELECT revoked, token_hash FROM devices WHERE id = ?", [.integer(device)]) {
            row -> (revoked: Bool, tokenHash: [UInt8]) in
            guard case .blob(let stored) = row[1] else { return (row.int(0) == 1, []) }
            return (row.int(0) == 1, stored)
        }
    }

    func streamCount(account: Int64) throws -> Int64 {
        try database.scalar("SELECT COUNT(*) FROM device_streams WHERE account_id = ?", [.integer(account)])?.int64Value
            ?? 0
    }

    func ledgerDevices(account: Int64) throws -> Set<String> {
        Set(
            try database.query(
                """
                SELECT DISTINCT substr(key, 1, instr(key, '/') - 1) FROM records
                WHERE account_id = ? AND collection = 'ledger'
                """, [.integer(account)]
            ) { $0.string(0) ?? "" })
    }

    func stream(account: Int64, clientDevice: String) throws -> (last: Int64, digest: String)? {
        try database.queryFirst(
            "SELECT last_seq, last_digest FROM device_streams WHERE account_id = ? AND client_device = ?",
            [.integer(account), .text(clientDevice)]
        ) { (last: $0.int64(0) ?? 0, digest: $0.string(1) ?? "") }
    }

    func accountCounters(_ account: Int64) throws -> Store.AccountCounters? {
        try database.queryFirst(
            "SELECT next_seq, stamp_high, encrypted, key_id, signing_key, retired_keys, encryption_reset, epoch, "
                + "record_count, byte_count, max_records, max_bytes, max_devices, sealed_format, sealed_format_since "
                + "FROM accounts WHERE id = ?",
            [.integer(account)]
        ) {
            Store.AccountCounters(
                nextSequence: $0.int64(0) ?? 1, stampHigh: $0.int64(1) ?? 0, encrypted: $0.int(2) == 1,
                keyID: $0.string(3) ?? "",
                signingKey: $0.string(4) ?? "", retiredKeys: Store.AccountCounters.retiredKeys(text: $0.string(5)),
                encryptionReset: $0.int(6) == 1, epoch: $0.string(7) ?? "",
                usage: Store.Usage(records: $0.int64(8) ?? 0, bytes: $0.int64(9) ?? 0),
                limits: Store.Limits(records: $0.int64(10) ?? 0, bytes: $0.int64(11) ?? 0, devices: $0.int64(12) ?? 0),
                sealedFormat: Int($0.int64(13) ?? 1), sealedFormatSince: $0.int64(14))
        }
    }

    /// A record read ahead is taken when it is still what the store holds,
    /// told without reading its fields: a record written since has a new
    /// change number (they are unique in an account and only grow), and one
    /// absent then is absent still when its key is (one index lookup each).
    func record(account: Int64, collection: RecordCollection, key: String) throws -> Store.RecordVersion? {
        if let readAhead, readAhead.account == account,
            let read = readAhead.records[Store.ReadAhead.Place(collection: collection, key: key)]
        {
            if let read {
                let same = try database.queryFirst(
                    "SELECT collection = ? AND key = ? FROM records WHERE account_id = ? AND seq = ?",
                    [.text(collection.rawValue), .text(key), .integer(account), .integer(read.sequence)]
                ) { $0.int(0) == 1 }
                if same == true { return read }
            } else {
                let held = try database.queryFirst(
                    "SELECT 1 FROM records WHERE account_id = ? AND collection = ? AND key = ?",
                    [.integer(account), .text(collection.rawValue), .text(key)]
                ) { _ in true }
                if held == nil { return nil }
            }
        }
        return try database.queryFirst(
            "SELECT fields, versions, seq, writer FROM records WHERE account_id = ? AND collection = ? AND key = ?",
            [.integer(account), .text(collection.rawValue), .text(key)]
        ) { row in
            try StoredRecord.version(
                fields: row.string(0) ?? "{}", versions: row.string(1) ?? "{}", sequence: row.int64(2) ?? 0,
                writer: row.string(3))
        }
    }

    /// A new record goes in by a plain `INSERT`, counted here (schema step
    /// "counted by brsyncd", ``settleCounts()``); any other by an upsert,
    /// whose update the trigger counts.
    func upsertRecord(
        account: Int64, collection: RecordCollection, key: String, state: RecordState, writer: VersionVector?,
        fieldsText: String?,
        sequence: Int64, knownTo: String?, knownAfter: Int64, now: Int64, isNew: Bool
    ) throws {
        let (fields, versions) = (
            fieldsText ?? RecordState.encodeFields(state.fields), RecordState.encodeVersions(state.versions)
        )
        let values: [DatabaseValue] = [
            .integer(account), .text(collection.rawValue), .text(key), .text(fields), .text(versions),
            .integer(sequence), DatabaseValue(state.isDeleted), .integer(now), knownTo.map { .text($0) } ?? .null,
            .integer(knownAfter), writer.map { .text(RecordState.encodeVersions($0)) } ?? .null,
        ]
        guard isNew else {
            try database.run(Self.upsertStatement, values)
            return
        }
        let counted = collection != .ledger
        if counted, added.counts[account] == nil {
            // Before the insert: the trigger leaves this account's to us.
            try database.run("UPDATE accounts SET counted_by_writer = 1 WHERE id = ?", [.integer(account)])
            added.counts[account] = Store.Usage(records: 0, bytes: 0)
        }
        try database.run(Self.insertRecord, values)
        // Counted once it is in: a failed insert (it was there after all) counts nothing.
        if counted {
            added.counts[account]?.records += 1
            added.counts[account]?.bytes += Int64(fields.utf8.count + versions.utf8.count)
        }
    }

    private static let insertRecord = """
        INSERT INTO records (account_id, collection, key, fields, versions, seq, deleted, updated_at, known_to, known_after, writer)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    private static let upsertStatement = insertRecord + StoreSchema.recordUpsert

    /// The new records this transaction counted itself, by account, not yet
    /// added to the account (``settleCounts()``).
    final class AddedCounts {
        var counts: [Int64: Store.Usage] = [:]
    }

    /// Adds the new records counted here to their accounts and clears the
    /// accounts' `counted_by_writer`: before the counts are read, and
    /// before the transaction commits (``SQLiteDialect/writing(account:readAhead:_:)``).
    func settleCounts() throws {
        for (account, usage) in added.counts {
            try database.run(
                """
                UPDATE accounts SET record_count = record_count + ?, byte_count = byte_count + ?, counted_by_writer = 0
                WHERE id = ?
                """, [.integer(usage.records), .integer(usage.bytes), .integer(account)])
        }
        added.counts = [:]
    }

    func setAccountCounters(_ account: Int64, nextSequence: Int64, stampAtLeast: Int64) throws {
        try database.run(
            "UPDATE accounts SET next_seq = ?, stamp_high = MAX(stamp_high, ?) WHERE id = ?",
            [.integer(nextSequence), .integer(stampAtLeast), .integer(account)])
    }

    func setStream(account: Int64, clientDevice: String, last: Int64, digest: String) throws {
        try database.run(
            """
            INSERT INTO device_streams (account_id, client_device, last_seq, last_digest) VALUES (?, ?, ?, ?)
            ON CONFLICT (account_id, client_device) DO UPDATE SET last_seq = excluded.last_seq, last_digest = excluded.last_digest
            """, [.integer(account), .text(clientDevice), .integer(last), .text(digest)])
    }

    func keepRefusals(account: Int64, clientDevice: String, _ refusals: [RejectedChange]) throws {
        for refusal in refusals {
            try database.run(
                """
                INSERT INTO refusals (account_id, client_device, seq, collection, key, reason) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (account_id, client_device, seq) DO NOTHING
                """,
                [
                    .integer(account), .text(clientDevice), .integer(refusal.sequence),
                    .text(refusal.collection.rawValue), .blob(Array(refusal.key.utf8)),
                    .blob(Array(refusal.reason.utf8)),
                ])
        }
    }

    func refusals(account: Int64, clientDevice: String, from: Int64, through: Int64) throws -> [RejectedChange] {
        try database.query(
            """
            SELECT seq, collection, key, reason FROM refusals
            WHERE account_id = ? AND client_device = ? AND seq BETWEEN ? AND ? ORDER BY seq
            """, [.integer(account), .text(clientDevice), .integer(from), .integer(through)]
        ) { row in
            func bytes(_ column: Int) -> [UInt8] {
                if case .blob(let bytes) = row[column] { return bytes }
                return Array((row.string(column) ?? "").utf8)
            }
            return try StoredRecord.refusal(
                sequence: row.int64(0) ?? 0, collection: row.string(1) ?? "", key: bytes(2), reason: bytes(3))
        }
    }

    func forgetRefusals(account: Int64, clientDevice: String, through: Int64) throws {
        try database.run(
            "DELETE FROM refusals WHERE account_id = ? AND client_device = ? AND seq <= ?",
            [.integer(account), .text(clientDevice), .integer(through)])
    }

    func notePush(device: Int64, lastDeviceSequence: Int64, clientDevice: String, now: Int64, protocol: Int) throws {
        try database.run(
            "UPDATE devices SET last_device_seq = ?, client_device = ?, last_seen = ?, protocol = ? WHERE id = ?",
            [
                .integer(lastDeviceSequence), .text(clientDevice), .integer(now), .integer(Int64(`protocol`)),
                .integer(device),
            ])
    }

    func startNewEpoch() throws -> String {
        let fresh = Crypto.hex(Crypto.randomBytes(8))
        try database.run("UPDATE meta SET value = ? WHERE key = 'epoch'", [.text(fresh)])
        try database.run("UPDATE devices SET acknowledged_cursor = 0")
        return fresh
    }

    func startNewAccountEpoch(_ account: Int64) throws -> String {
        let fresh = Crypto.hex(Crypto.randomBytes(8))
        try database.run("UPDATE accounts SET epoch = ? WHERE id = ?", [.text(fresh), .integer(account)])
        try database.run("UPDATE devices SET acknowledged_cursor = 0 WHERE account_id = ?", [.integer(account)])
        return fresh
    }

    /// The write lock is held already (`BEGIN IMMEDIATE`); the epoch is the
    /// one this process holds (no other process writes the file).
    func lockAccountReadingEpoch(_ account: Int64) throws -> String {
        try epoch?.current ?? storedEpochForUpdate()
    }

    func storedEpochForUpdate() throws -> String {
        try database.meta("epoch") ?? ""
    }

    /// Authenticates and reads the page in this read transaction; a revoked
    /// device's records are not read.
    func pullSnapshot(
        tokenHash: [UInt8], clientDevice: String, after cursor: Int64, limit: Int, maxBytes: Int
    ) throws -> Store.PullSnapshot? {
        guard let (device, storedHash) = try device(tokenHash: tokenHash) else { return nil }
        let currentEpoch = try epoch?.current ?? storedEpochForUpdate()
        guard !device.revoked else {
            return Store.PullSnapshot(
                device: device, tokenHash: storedHash, epoch: currentEpoch, stream: nil, records: [],
                epochIsCached: epoch != nil)
        }
        // Row by row, stopping at the byte budget: a record past it is never read.
        var records: [Store.PulledRow] = []
        var bytes = 0
        var truncated = false
        try database.forEachRow(
            "SELECT seq, collection, key, fields, versions, known_to, known_after, writer FROM records WHERE account_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            [.integer(device.accountID), .integer(cursor), .integer(Int64(limit))]
        ) { row in
            if !records.isEmpty && bytes >= maxBytes {
                truncated = true
                return false
            }
            bytes += row.byteCount(3) + row.byteCount(4) + row.byteCount(7)
            records.append(try Self.pulledRow(row))
            return true
        }
        var snapshot = Store.PullSnapshot(
            device: device, tokenHash: storedHash, epoch: currentEpoch,
            stream: clientDevice.isEmpty ? nil : try stream(account: device.accountID, clientDevice: clientDevice),
            records: records, epochIsCached: epoch != nil)
        snapshot.truncated = truncated
        return snapshot
    }

    static func pulledRow(_ row: Row) throws -> Store.PulledRow {
        Store.PulledRow(
            sequence: row.int64(0) ?? 0, collection: try StoredRecord.collection(row.string(1)),
            key: row.string(2) ?? "",
            fields: row.string(3) ?? "{}", versions: row.string(4) ?? "{}", writer: row.string(7),
            knownTo: row.string(5),
            knownAfter: row.int64(6) ?? 0)
    }

    func device(tokenHash: [UInt8]) throws -> (device: Store.Device, storedHash: [UInt8])? {
        try database.queryFirst(
            """
            SELECT devices.id, account_id, devices.name, client_device, revoked, last_seen, last_device_seq, acknowledged_cursor,
                   accounts.uid, token_hash, accounts.next_seq, accounts.purged_through, accounts.encrypted, accounts.key_id,
                   accounts.signing_key, accounts.encryption_reset, accounts.epoch, accounts.retired_keys,
                   devices.protocol, accounts.sealed_format, accounts.sealed_format_since
            FROM devices JOIN accounts ON accounts.id = devices.account_id WHERE token_hash = ?
            """, [.blob(tokenHash)]
        ) { row in
            var device = Self.device(row)
            device.accountNextSequence = row.int64(10) ?? 1
            device.accountPurgedThrough = row.int64(11) ?? 0
            device.accountEncrypted = row.int(12) == 1
            device.accountKeyID = row.string(13) ?? ""
            device.accountSigningKey = row.string(14) ?? ""
            device.accountEncryptionReset = row.int(15) == 1
            device.accountEpoch = row.string(16) ?? ""
            device.accountRetiredKeys = Store.AccountCounters.retiredKeys(text: row.string(17))
            device.clientProtocol = Int(row.int64(18) ?? 0)
            device.accountSealedFormat = Int(row.int64(19) ?? 1)
            device.accountSealedFormatSince = row.int64(20)
            guard case .blob(let stored) = row[9] else { return (device, []) }
            return (device, stored)
        }
    }

    static func device(_ row: Row) -> Store.Device {
        Store.Device(
            id: row.int64(0) ?? 0, accountID: row.int64(1) ?? 0, name: row.string(2) ?? "", clientDevice: row.string(3),
            revoked: row.int(4) == 1, lastSeenMillis: row.int64(5), lastDeviceSequence: row.int64(6) ?? 0,
            acknowledgedCursor: row.int64(7) ?? 0, accountUID: row.string(8) ?? "")
    }

    func noteAcknowledged(device: Int64, cursor: Int64, now: Int64, protocol: Int, raising: Bool) throws {
        try database.run(
            """
            UPDATE devices SET acknowledged_cursor = MAX(acknowledged_cursor, ?1), last_seen = ?2,
                protocol = CASE WHEN ?5 OR (SELECT encrypted FROM accounts WHERE id = devices.account_id) = 0
                    THEN ?3 ELSE MIN(protocol, ?3) END
            WHERE id = ?4
            """,
            [.integer(cursor), .integer(now), .integer(Int64(`protocol`)), .integer(device), .integer(raising ? 1 : 0)])
    }

    func capProtocols(account: Int64, at highest: Int) throws {
        try database.run(
            "UPDATE devices SET protocol = MIN(protocol, ?) WHERE account_id = ?",
            [.integer(Int64(highest)), .integer(account)])
    }

    func markSealedFormat(account: Int64, now: Int64, seenSince: Int64) throws -> Bool {
        try database.run(
            """
            UPDATE accounts SET sealed_format = 2, sealed_format_since = ?
            WHERE id = ? AND encrypted = 1 AND sealed_format < 2 AND NOT EXISTS (
                SELECT 1 FROM devices WHERE account_id = accounts.id AND revoked = 0 AND protocol < ? AND last_seen >= ?)
            """, [.integer(now), .integer(account), .integer(Int64(Wire.sealedFormatProtocol)), .integer(seenSince)])
        return database.changes > 0
    }

    /// The deleted rows are overwritten with zeros (`secure_delete`), so the
    /// readable records do not linger in free pages of the file.
    func setEncryption(account: Int64, _ encryption: Store.Encryption) throws {
        try database.execute("PRAGMA secure_delete = ON")
        defer { try? database.execute("PRAGMA secure_delete = OFF") }
        try database.run(
            "UPDATE accounts SET encrypted = ?, key_id = ?, signing_key = ?, retired_keys = ?, encryption_reset = ? WHERE id = ?",
            [
                .integer(encryption.keyID.isEmpty ? 0 : 1), .text(encryption.keyID), .text(encryption.signingKey),
                .text(encryption.retiredKeys.joined(separator: " ")), .integer(encryption.reset ? 1 : 0),
                .integer(account),
            ])
        try database.run("DELETE FROM records WHERE account_id = ?", [.integer(account)])
        try database.run("DELETE FROM device_streams WHERE account_id = ?", [.integer(account)])
        try database.run("DELETE FROM refusals WHERE account_id = ?", [.integer(account)])
    }

    func registerSigningKey(account: Int64, _ publicKey: String) throws {
        try database.run(
            "UPDATE accounts SET signing_key = ? WHERE id = ? AND signing_key = ''",
            [.text(publicKey), .integer(account)])
    }

    /// One purge at a time: the write lock. Encrypted accounts keep their
    /// tombstones (a record leaves a machine only with a sealed deletion).
    func purgeTombstones(updatedAtOrBefore cutoff: Int64) throws -> Int {
        try database.run(
            """
            UPDATE accounts SET purged_through = MAX(purged_through, (
                SELECT COALESCE(MAX(seq), 0) FROM records WHERE records.account_id = accounts.id AND deleted = 1 AND updated_at <= ?
                AND seq <= (SELECT COALESCE(MIN(acknowledged_cursor), 0) FROM devices
                            WHERE devices.account_id = accounts.id AND revoked = 0)))
            WHERE encrypted = 0
            """, [.integer(cutoff)])
        try database.run(
            """
            DELETE FROM records WHERE deleted = 1 AND updated_at <= ? AND seq <= (
                SELECT COALESCE(MIN(acknowledged_cursor), 0) FROM devices
                WHERE devices.account_id = records.account_id AND revoked = 0)
            AND account_id IN (SELECT id FROM accounts WHERE encrypted = 0)
            """, [.integer(cutoff)])
        return database.changes
    }

    func counts() throws -> (records: Int, devices: Int, accounts: Int) {
        (
            try database.scalar("SELECT COUNT(*) FROM records")?.intValue ?? 0,
            try database.scalar("SELECT COUNT(*) FROM devices")?.intValue ?? 0,
            try database.scalar("SELECT COUNT(*) FROM accounts")?.intValue ?? 0
        )
    }

    // MARK: - Administration

    func accountID(named name: String) throws -> Int64? {
        try database.scalar("SELECT id FROM accounts WHERE name = ?", [.text(name)])?.int64Value
    }

    func insertAccount(name: String, uid: String, now: Int64) throws {
        try database.run(
            "INSERT INTO accounts (name, created_at, uid) VALUES (?, ?, ?)", [.text(name), .integer(now), .text(uid)])
    }

    func accountSummaries() throws -> [Store.Account] {
        try database.query(
            """
            SELECT a.id, a.name, (SELECT COUNT(*) FROM devices d WHERE d.account_id = a.id), a.record_count, a.byte_count,
                   a.max_records, a.max_bytes, a.max_devices, a.uid
            FROM accounts a ORDER BY a.name
            """
        ) {
            var account = Store.Account(
                id: $0.int64(0) ?? 0, name: $0.string(1) ?? "", devices: $0.int(2) ?? 0, records: $0.int(3) ?? 0,
                bytes: $0.int64(4) ?? 0,
                limits: Store.Limits(records: $0.int64(5) ?? 0, bytes: $0.int64(6) ?? 0, devices: $0.int64(7) ?? 0))
            account.uid = $0.string(8) ?? ""
            return account
        }
    }

    func accountUsage(_ account: Int64) throws -> Store.Usage {
        try settleCounts()
        return try database.queryFirst(
            "SELECT record_count, byte_count FROM accounts WHERE id = ?", [.integer(account)]
        ) {
            Store.Usage(records: $0.int64(0) ?? 0, bytes: $0.int64(1) ?? 0)
        } ?? Store.Usage(records: 0, bytes: 0)
    }

    func recountUsage(_ account: Int64) throws -> Store.Usage {
        try settleCounts()
        try database.run(
            """
            UPDATE accounts SET
                record_count = (SELECT COUNT(*) FROM records WHERE account_id = accounts.id AND collection <> 'ledger'),
                byte_count = (SELECT COALESCE(SUM(LENGTH(CAST(fields AS BLOB)) + LENGTH(CAST(versions AS BLOB))), 0)
                              FROM records WHERE account_id = accounts.id AND collection <> 'ledger')
            WHERE id = ?
            """, [.integer(account)])
        return try accountUsage(account)
    }

    func setLimits(account: Int64, _ limits: Store.Limits) throws {
        try database.run(
            "UPDATE accounts SET max_records = ?, max_bytes = ?, max_devices = ? WHERE id = ?",
            [.integer(limits.records), .integer(limits.bytes), .integer(limits.devices), .integer(account)])
    }

    func deviceCount(account: Int64) throws -> Int64 {
        try database.scalar("SELECT COUNT(*) FROM devices WHERE account_id = ?", [.integer(account)])?.int64Value ?? 0
    }

    func deleteAccount(_ account: Int64) throws {
        try database.run("DELETE FROM records WHERE account_id = ?", [.integer(account)])
        try database.run("DELETE FROM device_streams WHERE account_id = ?", [.integer(account)])
        try database.run("DELETE FROM refusals WHERE account_id = ?", [.integer(account)])
        try database.run("DELETE FROM devices WHERE account_id = ?", [.integer(account)])
        try database.run("DELETE FROM accounts WHERE id = ?", [.integer(account)])
    }

    func deviceExists(account: Int64, name: String) throws -> Bool {
        try database.scalar(
            "SELECT 1 FROM devices WHERE account_id = ? AND name = ?", [.integer(account), .text(name)]) != nil
    }

    func insertDevice(account: Int64, name: String, tokenHash: [UInt8], now: Int64) throws {
        try database.run(
            "INSERT INTO devices (account_id, name, token_hash, created_at) VALUES (?, ?, ?, ?)",
            [.integer(account), .text(name), .blob(tokenHash), .integer(now)])
    }

    func devices(account: Int64) throws -> [Store.Device] {
        try database.query(
            """
            SELECT id, account_id, name, client_device, revoked, last_seen, last_device_seq, acknowledged_cursor,
                   (SELECT uid FROM accounts WHERE accounts.id = devices.account_id),
                   (SELECT MAX(expires_at) FROM enrollments WHERE enrollments.device_id = devices.id AND used_at IS NULL),
                   protocol
            FROM devices WHERE account_id = ? ORDER BY name
            """, [.integer(account)]
        ) { row in
            var device = Self.device(row)
            device.joinExpiresMillis = row.int64(9)
            device.clientProtocol = Int(row.int64(10) ?? 0)
            return device
        }
    }

    func setToken(account: Int64, device name: String, tokenHash: [UInt8]) throws -> Bool {
        try database.run(
            "UPDATE devices SET token_hash = ?, revoked = 0 WHERE account_id = ? AND name = ?",
            [.blob(tokenHash), .integer(account), .text(name)])
        return database.changes == 1
    }

    func revoke(account: Int64, device name: String) throws -> Bool {
        try database.run(
            "UPDATE devices SET revoked = 1 WHERE account_id = ? AND name = ?", [.integer(account), .text(name)])
        return database.changes == 1
    }

    func deviceID(account: Int64, name: String) throws -> Int64? {
        try database.scalar(
            "SELECT id FROM devices WHERE account_id = ? AND name = ?", [.integer(account), .text(name)])?.int64Value
    }

    func setToken(device: Int64, tokenHash: [UInt8]) throws {
        try database.run(
            "UPDATE devices SET token_hash = ?, revoked = 0 WHERE id = ?", [.blob(tokenHash), .integer(device)])
    }

    func insertEnrollment(device: Int64, secretHash: [UInt8], expiresAt: Int64) throws {
        try database.run("DELETE FROM enrollments WHERE device_id = ?", [.integer(device)])
        try database.run(
            "INSERT INTO enrollments (secret_hash, device_id, expires_at) VALUES (?, ?, ?)",
            [.blob(secretHash), .integer(device), .integer(expiresAt)])
    }

    func enrollment(secretHash: [UInt8]) throws -> Store.Enrollment? {
        try database.queryFirst(
            "SELECT device_id, expires_at, used_at, token_hash FROM enrollments WHERE secret_hash = ?",
            [.blob(secretHash)]
        ) { row in
            var tokenHash: [UInt8]?
            if case .blob(let bytes) = row[3] { tokenHash = bytes }
            return Store.Enrollment(
                device: row.int64(0) ?? 0, expiresAtMillis: row.int64(1) ?? 0, usedAtMillis: row.int64(2),
                tokenHash: tokenHash)
        }
    }

    func markEnrollmentUsed(secretHash: [UInt8], tokenHash: [UInt8], now: Int64) throws {
        try database.run(
            "UPDATE enrollments SET used_at = ?, token_hash = ? WHERE secret_hash = ?",
            [.integer(now), .blob(tokenHash), .blob(secretHash)])
    }

    func allRecords(account: Int64) throws -> [ChangeRecord] {
        try database.query(
            "SELECT seq, collection, key, fields, versions FROM records WHERE account_id = ? ORDER BY seq",
            [.integer(account)]
        ) { row in
            try StoredRecord.change(
                sequence: row.int64(0), collection: row.string(1), key: row.string(2), fields: row.string(3),
                versions: row.string(4))
        }
    }
}
