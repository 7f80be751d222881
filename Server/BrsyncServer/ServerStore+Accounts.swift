import Glibc
import Model
import Net
import Storage
import Synchronization
import SyncCore

extension ServerStore {
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
        /// The account's identity, sent with every answer.
        public let accountUID: String
        /// The account's next sequence number and purge point when the device
        /// was read (a pull checks its cursor against them).
        public var accountNextSequence: Int64 = 1
        public var accountPurgedThrough: Int64 = 0
        /// Whether the account is end-to-end encrypted (it takes sealed records only).
        public var accountEncrypted = false
        /// The id of the account key its records are sealed with ("" when not encrypted).
        public var accountKeyID = ""
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
            try database.run("INSERT INTO accounts (name, created_at, uid) VALUES (?, ?, ?)",
                             [.text(name), .integer(currentMillis()), .text(Crypto.hex(Crypto.randomBytes(8)))])
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

    public func records(account: String) throws -> [ChangeRecord] {
        try withDatabase { database in
            let id = try accountID(account, in: database)
            return try database.query("SELECT seq, collection, key, fields, versions FROM records WHERE account_id = ? ORDER BY seq", [.integer(id)]) { row in
                guard let collection = row.string(1).flatMap(RecordCollection.init(rawValue:)) else {
                    throw ServerError.storeUnusable("a stored record has an unknown collection")
                }
                return ChangeRecord(sequence: row.int64(0) ?? 0, collection: collection, key: row.string(2) ?? "",
                                    state: try StoredRecord.decode(fields: row.string(3) ?? "{}", versions: row.string(4) ?? "{}"))
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
                try database.run("DELETE FROM device_streams WHERE account_id = ?", [.integer(id)])
                try database.run("DELETE FROM devices WHERE account_id = ?", [.integer(id)])
                try database.run("DELETE FROM accounts WHERE id = ?", [.integer(id)])
            }
        }
    }

    /// See ``SyncStore/encryptAccount(of:keyID:replacing:seen:)``. The deleted rows are
    /// overwritten with zeros (`secure_delete`) and the write-ahead log is
    /// truncated after the commit, so the readable records do not linger in
    /// free pages of the file or in old log frames (backups made before keep
    /// them: Deploy/SECURITY.md).
    public func encryptAccount(of device: Device, keyID: String, replacing oldKeyID: String?, seen: Int64?) throws -> (changed: Bool, keyID: String) {
        try withDatabase { database in
            try database.execute("PRAGMA secure_delete = ON")
            defer { try? database.execute("PRAGMA secure_delete = OFF") }
            let result = try database.transaction(.immediate) { () throws -> (changed: Bool, keyID: String) in
                guard let current = try database.queryFirst("SELECT encrypted, key_id, next_seq FROM accounts WHERE id = ?", [.integer(device.accountID)], {
                    (encrypted: $0.int(0) == 1, keyID: $0.string(1) ?? "", nextSequence: $0.int64(2) ?? 1)
                }) else {
                    throw ServerError.unauthorized("the device's account no longer exists")
                }
                guard try SyncEngine.shouldEncrypt(encrypted: current.encrypted, currentKeyID: current.keyID, keyID: keyID, replacing: oldKeyID,
                                                   seen: seen, nextSequence: current.nextSequence) else {
                    return (false, current.keyID)
                }
                try database.run("UPDATE accounts SET encrypted = 1, key_id = ? WHERE id = ?", [.text(keyID), .integer(device.accountID)])
                try database.run("DELETE FROM records WHERE account_id = ?", [.integer(device.accountID)])
                try database.run("DELETE FROM device_streams WHERE account_id = ?", [.integer(device.accountID)])
                return (true, keyID)
            }
            if result.changed { Self.truncateLog(database) }
            return result
        }
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
                    [.integer(id), .text(name), .blob(Tokens.hash(token)), .integer(currentMillis())])
            }
        }
        return token
    }

    public func devices(account: String) throws -> [Device] {
        try withDatabase { database in
            let id = try accountID(account, in: database)
            return try database.query(
                """
                SELECT id, account_id, name, client_device, revoked, last_seen, last_device_seq, acknowledged_cursor,
                       (SELECT uid FROM accounts WHERE accounts.id = devices.account_id)
                FROM devices WHERE account_id = ? ORDER BY name
                """, [.integer(id)], Self.device)
        }
    }

    static func device(_ row: Row) -> Device {
        Device(id: row.int64(0) ?? 0, accountID: row.int64(1) ?? 0, name: row.string(2) ?? "", clientDevice: row.string(3),
               revoked: row.int(4) == 1, lastSeenMillis: row.int64(5), lastDeviceSequence: row.int64(6) ?? 0,
               acknowledgedCursor: row.int64(7) ?? 0, accountUID: row.string(8) ?? "")
    }

    /// Issues a new token for an existing device (the old one stops working;
    /// a revoked device is reinstated). Its replicas keep their change streams,
    /// so nothing is pushed twice or skipped.
    /// - Returns: the new token (shown once; only its hash is stored).
    public func reissueToken(account: String, device name: String) throws -> String {
        let token = Tokens.make()
        try withDatabase { database in
            let id = try accountID(account, in: database)
            try database.run("UPDATE devices SET token_hash = ?, revoked = 0 WHERE account_id = ? AND name = ?",
                             [.blob(Tokens.hash(token)), .integer(id), .text(name)])
            guard database.changes == 1 else { throw ServerError.notFound("the account '\(account)' has no device named '\(name)'") }
        }
        return token
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
                SELECT devices.id, account_id, devices.name, client_device, revoked, last_seen, last_device_seq, acknowledged_cursor,
                       accounts.uid, token_hash, accounts.next_seq, accounts.purged_through, accounts.encrypted, accounts.key_id
                FROM devices JOIN accounts ON accounts.id = devices.account_id WHERE token_hash = ?
                """, [.blob(hash)]
            ) { row -> Device? in
                // The lookup is by hash; compare again in constant time before trusting it.
                guard case .blob(let stored) = row[9], Crypto.constantTimeEqual(stored, hash) else { return nil }
                var device = Self.device(row)
                device.accountNextSequence = row.int64(10) ?? 1
                device.accountPurgedThrough = row.int64(11) ?? 0
                device.accountEncrypted = row.int(12) == 1
                device.accountKeyID = row.string(13) ?? ""
                return device
            }
        guard let device = found ?? nil else { throw ServerError.unauthorized("the token is not valid") }
        guard !device.revoked else { throw ServerError.revoked }
        return device
    }
}
