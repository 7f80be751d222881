import Cryptography
import Net
import Postgres
import SyncCore

/// The PostgreSQL store's SQL (see ``StoreTransaction``), inside a
/// transaction (reads outside one run statement by statement).
final class PostgresTransaction: StoreTransaction {
    let connection: PostgresConnection
    /// Records read ahead (nil: known to be absent), kept current by
    /// ``upsertRecord``; the account's row lock keeps other writers out.
    var cache: [CacheKey: Store.RecordVersion?] = [:]
    /// Records written, kept until ``flush()`` sends them in one statement
    /// (the last write of a key wins; the order of first writes is kept).
    var pending: [CacheKey: PendingRecord] = [:]
    var pendingOrder: [CacheKey] = []

    init(connection: PostgresConnection) {
        self.connection = connection
    }

    func deviceStanding(_ device: Int64) throws -> (revoked: Bool, tokenHash: [UInt8])? {
        try connection.queryFirst("SELECT revoked, token_hash FROM devices WHERE id = $1", [.integer(device)]) {
            ($0.bool(0) ?? false, $0.bytes(1) ?? [])
        }
    }

    func streamCount(account: Int64) throws -> Int64 {
        try connection.queryFirst("SELECT count(*) FROM device_streams WHERE account_id = $1", [.integer(account)]) {
            $0.int64(0) ?? 0
        } ?? 0
    }

    func ledgerDevices(account: Int64) throws -> Set<String> {
        Set(
            try connection.query(
                "SELECT DISTINCT split_part(key, '/', 1) FROM records WHERE account_id = $1 AND collection = 'ledger'",
                [.integer(account)]
            ) { $0.string(0) ?? "" })
    }

    func stream(account: Int64, clientDevice: String) throws -> (last: Int64, digest: String)? {
        try connection.queryFirst(
            "SELECT last_seq, last_digest FROM device_streams WHERE account_id = $1 AND client_device = $2",
            [.integer(account), .text(clientDevice)]
        ) { (last: $0.int64(0) ?? 0, digest: $0.string(1) ?? "") }
    }

    /// Locks the account's row until the transaction ends: the pushes of one
    /// account, from any process, are serialised here.
    func accountCounters(_ account: Int64) throws -> Store.AccountCounters? {
        try connection.queryFirst(
            "SELECT next_seq, stamp_high, encrypted, key_id, signing_key, retired_keys, encryption_reset, epoch, "
                + "record_count, byte_count, max_records, max_bytes, max_devices, sealed_format, sealed_format_since "
                + "FROM accounts WHERE id = $1 FOR UPDATE",
            [.integer(account)]
        ) {
            Store.AccountCounters(
                nextSequence: $0.int64(0) ?? 1, stampHigh: $0.int64(1) ?? 0, encrypted: $0.bool(2) ?? false,
                keyID: $0.string(3) ?? "",
                signingKey: $0.string(4) ?? "", retiredKeys: Store.AccountCounters.retiredKeys(text: $0.string(5)),
                encryptionReset: $0.bool(6) ?? false, epoch: $0.string(7) ?? "",
                usage: Store.Usage(records: $0.int64(8) ?? 0, bytes: $0.int64(9) ?? 0),
                limits: Store.Limits(records: $0.int64(10) ?? 0, bytes: $0.int64(11) ?? 0, devices: $0.int64(12) ?? 0),
                sealedFormat: Int($0.int64(13) ?? 1), sealedFormatSince: $0.int64(14))
        }
    }

    /// Runs `body` with a transaction object on `connection` (already inside
    /// a database transaction) and writes what it left pending.
    static func run<T>(_ connection: PostgresConnection, _ body: (PostgresTransaction) throws -> T) throws -> T {
        let transaction = PostgresTransaction(connection: connection)
        let value = try body(transaction)
        try transaction.flush()
        return value
    }

    func setAccountCounters(_ account: Int64, nextSequence: Int64, stampAtLeast: Int64) throws {
        try connection.run(
            "UPDATE accounts SET next_seq = $1, stamp_high = GREATEST(stamp_high, $2) WHERE id = $3",
            [.integer(nextSequence), .integer(stampAtLeast), .integer(account)])
    }

    func setStream(account: Int64, clientDevice: String, last: Int64, digest: String) throws {
        try connection.run(
            """
            INSERT INTO device_streams (account_id, client_device, last_seq, last_digest) VALUES ($1, $2, $3, $4)
            ON CONFLICT (account_id, client_device) DO UPDATE SET last_seq = excluded.last_seq, last_digest = excluded.last_digest
            """, [.integer(account), .text(clientDevice), .integer(last), .text(digest)])
    }

    /// One statement for a push's refusals, their columns sent as arrays.
    func keepRefusals(account: Int64, clientDevice: String, _ refusals: [RejectedChange]) throws {
        guard !refusals.isEmpty else { return }
        try connection.run(
            """
            INSERT INTO refusals (account_id, client_device, seq, collection, key, reason)
            SELECT $1::bigint, $2::text, * FROM unnest($3::bigint[], $4::text[], $5::bytea[], $6::bytea[])
            ON CONFLICT (account_id, client_device, seq) DO NOTHING
            """,
            [
                .integer(account), .text(clientDevice), PostgresArray.integers(refusals.map(\.sequence)),
                PostgresArray.texts(refusals.map(\.collection.rawValue)),
                PostgresArray.byteStrings(refusals.map { Array($0.key.utf8) }),
                PostgresArray.byteStrings(refusals.map { Array($0.reason.utf8) }),
            ])
    }

    func refusals(account: Int64, clientDevice: String, from: Int64, through: Int64) throws -> [RejectedChange] {
        try connection.query(
            """
            SELECT seq, collection, key, reason FROM refusals
            WHERE account_id = $1 AND client_device = $2 AND seq BETWEEN $3 AND $4 ORDER BY seq
            """, [.integer(account), .text(clientDevice), .integer(from), .integer(through)]
        ) { row in
            try StoredRecord.refusal(
                sequence: row.int64(0) ?? 0, collection: row.string(1) ?? "", key: row.bytes(2) ?? [],
                reason: row.bytes(3) ?? [])
        }
    }

    func forgetRefusals(account: Int64, clientDevice: String, through: Int64) throws {
        try connection.run(
            "DELETE FROM refusals WHERE account_id = $1 AND client_device = $2 AND seq <= $3",
            [.integer(account), .text(clientDevice), .integer(through)])
    }

    func notePush(device: Int64, lastDeviceSequence: Int64, clientDevice: String, now: Int64, protocol: Int) throws {
        try connection.run(
            "UPDATE devices SET last_device_seq = $1, client_device = $2, last_seen = $3, protocol = $4 WHERE id = $5",
            [
                .integer(lastDeviceSequence), .text(clientDevice), .integer(now), .integer(Int64(`protocol`)),
                .integer(device),
            ])
    }

    func startNewEpoch() throws -> String {
        let fresh = Crypto.hex(Crypto.randomBytes(8))
        try connection.run("UPDATE brsync_meta SET value = $1 WHERE key = 'epoch'", [.text(fresh)])
        try connection.run("UPDATE devices SET acknowledged_cursor = 0")
        return fresh
    }

    /// The account's row is locked already (``accountCounters(_:)``).
    func startNewAccountEpoch(_ account: Int64) throws -> String {
        let fresh = Crypto.hex(Crypto.randomBytes(8))
        try connection.run("UPDATE accounts SET epoch = $1 WHERE id = $2", [.text(fresh), .integer(account)])
        try connection.run("UPDATE devices SET acknowledged_cursor = 0 WHERE account_id = $1", [.integer(account)])
        return fresh
    }

    /// Locks the account's row, then reads the epoch: pushes of the account
    /// queue on the lock, and each sees the epoch as it is when it holds it.
    func lockAccountReadingEpoch(_ account: Int64) throws -> String {
        _ = try connection.query("SELECT id FROM accounts WHERE id = $1 FOR UPDATE", [.integer(account)]) {
            $0.int64(0)
        }
        return try PostgresDialect.readEpoch(connection)
    }

    func storedEpochForUpdate() throws -> String {
        _ = try connection.query("SELECT value FROM brsync_meta WHERE key = 'epoch' FOR UPDATE") { $0.string(0) }
        return try PostgresDialect.readEpoch(connection)
    }

    /// A pull in one round trip: one statement (one snapshot, even in READ
    /// COMMITTED) reads the device, the epoch, the replica's stream and the page.
    func pullSnapshot(
        tokenHash: [UInt8], clientDevice: String, after cursor: Int64, limit: Int, maxBytes: Int
    ) throws -> Store.PullSnapshot? {
        struct Row {
            let device: Store.Device
            let tokenHash: [UInt8]
            let epoch: String
            let stream: (last: Int64, digest: String)?
            let record: Store.PulledRow?
            let scanned: Int64
        }
        let rows = try connection.query(
            """
            WITH d AS (\(Self.deviceColumns) WHERE d.token_hash = $1)
            SELECT d.*, (SELECT value FROM brsync_meta WHERE key = 'epoch'), s.last_seq, s.last_digest,
                   r.seq, r.collection, r.key, r.fields, r.versions, r.known_to, r.known_after, r.scanned, r.writer
            FROM d
            LEFT JOIN device_streams s ON s.account_id = d.account_id AND s.client_device = $2
            -- The page's records up to the byte budget: a record is sent when
            -- those before it hold less than $5 bytes (the first always);
            -- `scanned` counts the records the limit took, to tell a cut page.
            LEFT JOIN LATERAL (
                SELECT * FROM (
                    SELECT seq, collection, key, fields, versions, known_to, known_after, writer, count(*) OVER () AS scanned,
                           sum(octet_length(fields) + octet_length(versions) + coalesce(octet_length(writer), 0)) OVER (ORDER BY seq)
                               - (octet_length(fields) + octet_length(versions) + coalesce(octet_length(writer), 0)) AS before
                    FROM (SELECT * FROM records WHERE records.account_id = d.account_id AND seq > $3 ORDER BY seq LIMIT $4) limited
                ) measured WHERE measured.before < $5 OR measured.before = 0
            ) r ON true
            ORDER BY r.seq
            """,
            [
                .bytes(tokenHash), .text(clientDevice), .integer(cursor), .integer(Int64(limit)),
                .integer(Int64(maxBytes)),
            ]
        ) { row -> Row in
            var record: Store.PulledRow?
            if let sequence = row.int64(24) {
                record = Store.PulledRow(
                    sequence: sequence, collection: try StoredRecord.collection(row.string(25)),
                    key: row.string(26) ?? "", fields: row.string(27) ?? "{}",
                    versions: row.string(28) ?? "{}", writer: row.string(32), knownTo: row.string(29),
                    knownAfter: row.int64(30) ?? 0)
            }
            return Row(
                device: Self.authenticatedDevice(row), tokenHash: row.bytes(9) ?? [], epoch: row.string(21) ?? "",
                stream: row.int64(22).map { (last: $0, digest: row.string(23) ?? "") }, record: record,
                scanned: row.int64(31) ?? 0)
        }
        guard let first = rows.first else { return nil }
        let records = rows.compactMap(\.record)
        var snapshot = Store.PullSnapshot(
            device: first.device, tokenHash: first.tokenHash, epoch: first.epoch, stream: first.stream,
            records: records)
        snapshot.truncated = Int64(records.count) < first.scanned
        return snapshot
    }

    /// The device and its account, as ``authenticatedDevice(_:)`` reads
    /// them: columns 0–20 (a query that adds its own numbers them from 21).
    static let deviceColumns = """
        SELECT d.id, d.account_id, d.name, d.client_device, d.revoked, d.last_seen, d.last_device_seq, d.acknowledged_cursor,
               a.uid, d.token_hash, a.next_seq, a.purged_through, a.encrypted, a.key_id, a.signing_key, a.encryption_reset, a.epoch AS account_epoch,
               a.retired_keys, d.protocol, a.sealed_format, a.sealed_format_since
        FROM devices d JOIN accounts a ON a.id = d.account_id
        """

    static func authenticatedDevice(_ row: PostgresRow) -> Store.Device {
        var device = device(row)
        device.accountNextSequence = row.int64(10) ?? 1
        device.accountPurgedThrough = row.int64(11) ?? 0
        device.accountEncrypted = row.bool(12) ?? false
        device.accountKeyID = row.string(13) ?? ""
        device.accountSigningKey = row.string(14) ?? ""
        device.accountEncryptionReset = row.bool(15) ?? false
        device.accountEpoch = row.string(16) ?? ""
        device.accountRetiredKeys = Store.AccountCounters.retiredKeys(text: row.string(17))
        device.clientProtocol = Int(row.int64(18) ?? 0)
        device.accountSealedFormat = Int(row.int64(19) ?? 1)
        device.accountSealedFormatSince = row.int64(20)
        return device
    }

    static func device(_ row: PostgresRow) -> Store.Device {
        Store.Device(
            id: row.int64(0) ?? 0, accountID: row.int64(1) ?? 0, name: row.string(2) ?? "", clientDevice: row.string(3),
            revoked: row.bool(4) ?? false, lastSeenMillis: row.int64(5), lastDeviceSequence: row.int64(6) ?? 0,
            acknowledgedCursor: row.int64(7) ?? 0, accountUID: row.string(8) ?? "")
    }

    func device(tokenHash: [UInt8]) throws -> (device: Store.Device, storedHash: [UInt8])? {
        try connection.queryFirst("\(Self.deviceColumns) WHERE d.token_hash = $1", [.bytes(tokenHash)]) {
            (device: Self.authenticatedDevice($0), storedHash: $0.bytes(9) ?? [])
        }
    }

    func noteAcknowledged(device: Int64, cursor: Int64, now: Int64, protocol: Int, raising: Bool) throws {
        // Whether the account is readable is read under its row's key-share
        // lock: a switch to encryption (which locks the row for update and
        // caps its devices' protocols) commits first, and this statement,
        // with a snapshot taken after, sees it (READ COMMITTED).
        _ = try connection.query(
            "SELECT a.id FROM accounts a JOIN devices d ON d.account_id = a.id WHERE d.id = $1 FOR KEY SHARE OF a",
            [.integer(device)]
        ) { $0.int64(0) }
        try connection.run(
            """
            UPDATE devices SET acknowledged_cursor = GREATEST(acknowledged_cursor, $1), last_seen = $2,
                protocol = CASE WHEN $5 OR NOT (SELECT encrypted FROM accounts WHERE id = devices.account_id)
                    THEN $3 ELSE LEAST(protocol, $3) END
            WHERE id = $4
            """, [.integer(cursor), .integer(now), .integer(Int64(`protocol`)), .integer(device), .bool(raising)])
    }

    func capProtocols(account: Int64, at highest: Int) throws {
        try connection.run(
            "UPDATE devices SET protocol = LEAST(protocol, $1) WHERE account_id = $2",
            [.integer(Int64(highest)), .integer(account)])
    }

    func markSealedFormat(account: Int64, now: Int64, seenSince: Int64) throws -> Bool {
        try connection.run(
            """
            UPDATE accounts SET sealed_format = 2, sealed_format_since = $1
            WHERE id = $2 AND encrypted AND sealed_format < 2 AND NOT EXISTS (
                SELECT 1 FROM devices WHERE account_id = accounts.id AND NOT revoked AND protocol < $3 AND last_seen >= $4)
            """, [.integer(now), .integer(account), .integer(Int64(Wire.sealedFormatProtocol)), .integer(seenSince)])
            > 0
    }

    /// The account's row is locked already (``accountCounters(_:)``).
    func setEncryption(account: Int64, _ encryption: Store.Encryption) throws {
        try connection.run(
            "UPDATE accounts SET encrypted = $1, key_id = $2, signing_key = $3, retired_keys = $4, encryption_reset = $5 WHERE id = $6",
            [
                .bool(!encryption.keyID.isEmpty), .text(encryption.keyID), .text(encryption.signingKey),
                .text(encryption.retiredKeys.joined(separator: " ")), .bool(encryption.reset), .integer(account),
            ])
        try connection.run("DELETE FROM records WHERE account_id = $1", [.integer(account)])
        try connection.run("DELETE FROM device_streams WHERE account_id = $1", [.integer(account)])
        try connection.run("DELETE FROM refusals WHERE account_id = $1", [.integer(account)])
    }

    func registerSigningKey(account: Int64, _ publicKey: String) throws {
        try connection.run(
            "UPDATE accounts SET signing_key = $1 WHERE id = $2 AND signing_key = ''",
            [.text(publicKey), .integer(account)])
    }

    /// One purge at a time, whichever process runs it: the next waits for it
    /// (and then finds little left to do). Skipping instead would make an
    /// explicit purge return having done nothing.
    func purgeTombstones(updatedAtOrBefore cutoff: Int64) throws -> Int {
        _ = try connection.query("SELECT pg_advisory_xact_lock($1)", [.integer(PostgresDialect.purgeLock)]) { _ in () }
        try connection.run(
            """
            UPDATE accounts SET purged_through = GREATEST(purged_through, (
                SELECT COALESCE(MAX(seq), 0) FROM records WHERE records.account_id = accounts.id AND deleted AND updated_at <= $1
                AND seq <= (SELECT COALESCE(MIN(acknowledged_cursor), 0) FROM devices
                            WHERE devices.account_id = accounts.id AND NOT revoked)))
            WHERE NOT encrypted
            """, [.integer(cutoff)])
        // Encrypted accounts keep their tombstones (a record leaves a machine only with a sealed deletion).
        return try connection.run(
            """
            DELETE FROM records WHERE deleted AND updated_at <= $1 AND seq <= (
                SELECT COALESCE(MIN(acknowledged_cursor), 0) FROM devices
                WHERE devices.account_id = records.account_id AND NOT revoked)
            AND account_id IN (SELECT id FROM accounts WHERE NOT encrypted)
            """, [.integer(cutoff)])
    }

    func counts() throws -> (records: Int, devices: Int, accounts: Int) {
        try connection.queryFirst(
            "SELECT (SELECT count(*) FROM records), (SELECT count(*) FROM devices), (SELECT count(*) FROM accounts)"
        ) {
            ($0.int(0) ?? 0, $0.int(1) ?? 0, $0.int(2) ?? 0)
        } ?? (0, 0, 0)
    }

    // MARK: - Administration

    func accountID(named name: String) throws -> Int64? {
        try connection.queryFirst("SELECT id FROM accounts WHERE name = $1", [.text(name)], { $0.int64(0) }) ?? nil
    }

    func insertAccount(name: String, uid: String, now: Int64) throws {
        try connection.run(
            "INSERT INTO accounts (name, created_at, uid) VALUES ($1, $2, $3)",
            [.text(name), .integer(now), .text(uid)])
    }

    func accountSummaries() throws -> [Store.Account] {
        try connection.query(
            """
            SELECT a.id, a.name, (SELECT count(*) FROM devices d WHERE d.account_id = a.id), a.record_count, a.byte_count,
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

    /// The pending records are written first: the triggers count them.
    func accountUsage(_ account: Int64) throws -> Store.Usage {
        try flush()
        return try connection.queryFirst(
            "SELECT record_count, byte_count FROM accounts WHERE id = $1", [.integer(account)]
        ) {
            Store.Usage(records: $0.int64(0) ?? 0, bytes: $0.int64(1) ?? 0)
        } ?? Store.Usage(records: 0, bytes: 0)
    }

    func recountUsage(_ account: Int64) throws -> Store.Usage {
        try flush()
        try connection.run(
            """
            UPDATE accounts a SET
                record_count = (SELECT count(*) FROM records r WHERE r.account_id = a.id AND r.collection <> 'ledger'),
                byte_count = (SELECT COALESCE(sum(octet_length(fields) + octet_length(versions)), 0)
                              FROM records r WHERE r.account_id = a.id AND r.collection <> 'ledger')
            WHERE a.id = $1
            """, [.integer(account)])
        return try accountUsage(account)
    }

    func setLimits(account: Int64, _ limits: Store.Limits) throws {
        try connection.run(
            "UPDATE accounts SET max_records = $1, max_bytes = $2, max_devices = $3 WHERE id = $4",
            [.integer(limits.records), .integer(limits.bytes), .integer(limits.devices), .integer(account)])
    }

    func deviceCount(account: Int64) throws -> Int64 {
        try connection.queryFirst("SELECT count(*) FROM devices WHERE account_id = $1", [.integer(account)]) {
            $0.int64(0) ?? 0
        } ?? 0
    }

    func deleteAccount(_ account: Int64) throws {
        try connection.run("DELETE FROM records WHERE account_id = $1", [.integer(account)])
        try connection.run("DELETE FROM device_streams WHERE account_id = $1", [.integer(account)])
        try connection.run("DELETE FROM refusals WHERE account_id = $1", [.integer(account)])
        try connection.run("DELETE FROM devices WHERE account_id = $1", [.integer(account)])
        try connection.run("DELETE FROM accounts WHERE id = $1", [.integer(account)])
    }

    func deviceExists(account: Int64, name: String) throws -> Bool {
        try connection.queryFirst(
            "SELECT 1 FROM devices WHERE account_id = $1 AND name = $2", [.integer(account), .text(name)], { _ in true }
        ) != nil
    }

    func insertDevice(account: Int64, name: String, tokenHash: [UInt8], now: Int64) throws {
        try connection.run(
            "INSERT INTO devices (account_id, name, token_hash, created_at) VALUES ($1, $2, $3, $4)",
            [.integer(account), .text(name), .bytes(tokenHash), .integer(now)])
    }

    func devices(account: Int64) throws -> [Store.Device] {
        try connection.query(
            """
            SELECT d.id, d.account_id, d.name, d.client_device, d.revoked, d.last_seen, d.last_device_seq, d.acknowledged_cursor, a.uid,
                   (SELECT MAX(e.expires_at) FROM enrollments e WHERE e.device_id = d.id AND e.used_at IS NULL), d.protocol
            FROM devices d JOIN accounts a ON a.id = d.account_id WHERE d.account_id = $1 ORDER BY d.name
            """, [.integer(account)]
        ) { row in
            var device = Self.device(row)
            device.joinExpiresMillis = row.int64(9)
            device.clientProtocol = Int(row.int64(10) ?? 0)
            return device
        }
    }

    func setToken(account: Int64, device name: String, tokenHash: [UInt8]) throws -> Bool {
        try connection.run(
            "UPDATE devices SET token_hash = $1, revoked = false WHERE account_id = $2 AND name = $3",
            [.bytes(tokenHash), .integer(account), .text(name)]) == 1
    }

    func revoke(account: Int64, device name: String) throws -> Bool {
        try connection.run(
            "UPDATE devices SET revoked = true WHERE account_id = $1 AND name = $2", [.integer(account), .text(name)])
            == 1
    }

    func deviceID(account: Int64, name: String) throws -> Int64? {
        try connection.queryFirst(
            "SELECT id FROM devices WHERE account_id = $1 AND name = $2", [.integer(account), .text(name)]
        ) { $0.int64(0) } ?? nil
    }

    func setToken(device: Int64, tokenHash: [UInt8]) throws {
        _ = try connection.run(
            "UPDATE devices SET token_hash = $1, revoked = false WHERE id = $2", [.bytes(tokenHash), .integer(device)])
    }

    func insertEnrollment(device: Int64, secretHash: [UInt8], expiresAt: Int64) throws {
        _ = try connection.run("DELETE FROM enrollments WHERE device_id = $1", [.integer(device)])
        _ = try connection.run(
            "INSERT INTO enrollments (secret_hash, device_id, expires_at) VALUES ($1, $2, $3)",
            [.bytes(secretHash), .integer(device), .integer(expiresAt)])
    }

    func enrollment(secretHash: [UInt8]) throws -> Store.Enrollment? {
        try connection.queryFirst(
            "SELECT device_id, expires_at, used_at, token_hash FROM enrollments WHERE secret_hash = $1",
            [.bytes(secretHash)]
        ) { row in
            Store.Enrollment(
                device: row.int64(0) ?? 0, expiresAtMillis: row.int64(1) ?? 0, usedAtMillis: row.int64(2),
                tokenHash: row.isNull(3) ? nil : row.bytes(3))
        }
    }

    func markEnrollmentUsed(secretHash: [UInt8], tokenHash: [UInt8], now: Int64) throws {
        _ = try connection.run(
            "UPDATE enrollments SET used_at = $1, token_hash = $2 WHERE secret_hash = $3",
            [.integer(now), .bytes(tokenHash), .bytes(secretHash)])
    }

    func allRecords(account: Int64) throws -> [ChangeRecord] {
        try connection.query(
            "SELECT seq, collection, key, fields, versions FROM records WHERE account_id = $1 ORDER BY seq",
            [.integer(account)]
        ) { row in
            try StoredRecord.change(
                sequence: row.int64(0), collection: row.string(1), key: row.string(2), fields: row.string(3),
                versions: row.string(4))
        }
    }
}
