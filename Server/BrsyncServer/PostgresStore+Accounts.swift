import Net
import Postgres
import SyncCore

/// Accounts, devices and tokens in the PostgreSQL store (the same behaviour
/// and messages as ``ServerStore``'s, in PostgreSQL's SQL).
extension PostgresStore {
    public func addAccount(_ name: String) throws {
        try ServerStore.validateName(name, what: "account")
        try write { connection in
            if try connection.queryFirst("SELECT 1 FROM accounts WHERE name = $1", [.text(name)], { _ in true }) != nil {
                throw ServerError.conflict("the account '\(name)' exists already")
            }
            try connection.run("INSERT INTO accounts (name, created_at, uid) VALUES ($1, $2, $3)",
                               [.text(name), .integer(currentMillis()), .text(Crypto.hex(Crypto.randomBytes(8)))])
        }
    }

    public func accounts() throws -> [ServerStore.Account] {
        try withConnection { connection in
            try connection.query("""
                SELECT a.id, a.name, (SELECT count(*) FROM devices d WHERE d.account_id = a.id),
                       (SELECT count(*) FROM records r WHERE r.account_id = a.id)
                FROM accounts a ORDER BY a.name
                """) { ServerStore.Account(id: $0.int64(0) ?? 0, name: $0.string(1) ?? "", devices: $0.int(2) ?? 0, records: $0.int(3) ?? 0) }
        }
    }

    public func records(account: String) throws -> [ChangeRecord] {
        try withConnection { connection in
            let id = try Self.accountID(account, connection)
            return try connection.query("SELECT seq, collection, key, fields, versions FROM records WHERE account_id = $1 ORDER BY seq", [.integer(id)]) { row in
                guard let collection = row.string(1).flatMap(RecordCollection.init(rawValue:)) else {
                    throw ServerError.storeUnusable("a stored record has an unknown collection")
                }
                return ChangeRecord(sequence: row.int64(0) ?? 0, collection: collection, key: row.string(2) ?? "",
                                    state: try StoredRecord.decode(fields: row.string(3) ?? "{}", versions: row.string(4) ?? "{}"))
            }
        }
    }

    public func removeAccount(_ name: String) throws {
        try write { connection in
            let id = try Self.accountID(name, connection)
            try connection.run("DELETE FROM records WHERE account_id = $1", [.integer(id)])
            try connection.run("DELETE FROM device_streams WHERE account_id = $1", [.integer(id)])
            try connection.run("DELETE FROM devices WHERE account_id = $1", [.integer(id)])
            try connection.run("DELETE FROM accounts WHERE id = $1", [.integer(id)])
        }
    }

    /// See ``SyncStore/encryptAccount(of:keyID:replacing:seen:)``. The account's row is locked as
    /// a push locks it, so no push of the account slips past. PostgreSQL keeps
    /// the deleted row versions until a vacuum reuses their space
    /// (Deploy/SECURITY.md says how to scrub them).
    public func encryptAccount(of device: ServerStore.Device, keyID: String, replacing oldKeyID: String?, seen: Int64?) throws -> (changed: Bool, keyID: String) {
        try write { connection in
            guard let current = try connection.queryFirst("SELECT encrypted, key_id, next_seq FROM accounts WHERE id = $1 FOR UPDATE", [.integer(device.accountID)], {
                (encrypted: $0.bool(0) ?? false, keyID: $0.string(1) ?? "", nextSequence: $0.int64(2) ?? 1)
            }) else {
                throw ServerError.unauthorized("the device's account no longer exists")
            }
            guard try SyncEngine.shouldEncrypt(encrypted: current.encrypted, currentKeyID: current.keyID, keyID: keyID, replacing: oldKeyID,
                                               seen: seen, nextSequence: current.nextSequence) else {
                return (false, current.keyID)
            }
            try connection.run("UPDATE accounts SET encrypted = true, key_id = $1 WHERE id = $2", [.text(keyID), .integer(device.accountID)])
            try connection.run("DELETE FROM records WHERE account_id = $1", [.integer(device.accountID)])
            try connection.run("DELETE FROM device_streams WHERE account_id = $1", [.integer(device.accountID)])
            return (true, keyID)
        }
    }

    static func accountID(_ name: String, _ connection: PostgresConnection) throws -> Int64 {
        guard let id = try connection.queryFirst("SELECT id FROM accounts WHERE name = $1", [.text(name)], { $0.int64(0) }) ?? nil else {
            throw ServerError.notFound("no account named '\(name)'")
        }
        return id
    }

    public func addDevice(account: String, name: String) throws -> String {
        try ServerStore.validateName(name, what: "device")
        let token = Tokens.make()
        try write { connection in
            let id = try Self.accountID(account, connection)
            if try connection.queryFirst("SELECT 1 FROM devices WHERE account_id = $1 AND name = $2", [.integer(id), .text(name)], { _ in true }) != nil {
                throw ServerError.conflict("the account '\(account)' has a device named '\(name)' already")
            }
            try connection.run("INSERT INTO devices (account_id, name, token_hash, created_at) VALUES ($1, $2, $3, $4)",
                               [.integer(id), .text(name), .bytes(Tokens.hash(token)), .integer(currentMillis())])
        }
        return token
    }

    public func devices(account: String) throws -> [ServerStore.Device] {
        try withConnection { connection in
            let id = try Self.accountID(account, connection)
            return try connection.query("""
                SELECT d.id, d.account_id, d.name, d.client_device, d.revoked, d.last_seen, d.last_device_seq, d.acknowledged_cursor, a.uid
                FROM devices d JOIN accounts a ON a.id = d.account_id WHERE d.account_id = $1 ORDER BY d.name
                """, [.integer(id)]) { Self.device($0) }
        }
    }

    /// A device as ``authenticate(token:_:)`` selects it (columns 0 to 13,
    /// the account's counters and encryption included; a pull selects the same).
    static func authenticatedDevice(_ row: PostgresRow) -> ServerStore.Device {
        var device = device(row)
        device.accountNextSequence = row.int64(10) ?? 1
        device.accountPurgedThrough = row.int64(11) ?? 0
        device.accountEncrypted = row.bool(12) ?? false
        device.accountKeyID = row.string(13) ?? ""
        return device
    }

    static func device(_ row: PostgresRow) -> ServerStore.Device {
        ServerStore.Device(id: row.int64(0) ?? 0, accountID: row.int64(1) ?? 0, name: row.string(2) ?? "", clientDevice: row.string(3),
                           revoked: row.bool(4) ?? false, lastSeenMillis: row.int64(5), lastDeviceSequence: row.int64(6) ?? 0,
                           acknowledgedCursor: row.int64(7) ?? 0, accountUID: row.string(8) ?? "")
    }

    public func reissueToken(account: String, device name: String) throws -> String {
        let token = Tokens.make()
        try write { connection in
            let id = try Self.accountID(account, connection)
            let changed = try connection.run("UPDATE devices SET token_hash = $1, revoked = false WHERE account_id = $2 AND name = $3",
                                             [.bytes(Tokens.hash(token)), .integer(id), .text(name)])
            if changed == 0 { throw ServerError.notFound("the account '\(account)' has no device named '\(name)'") }
        }
        return token
    }

    public func revokeDevice(account: String, name: String) throws {
        try write { connection in
            let id = try Self.accountID(account, connection)
            let changed = try connection.run("UPDATE devices SET revoked = true WHERE account_id = $1 AND name = $2", [.integer(id), .text(name)])
            if changed == 0 { throw ServerError.notFound("the account '\(account)' has no device named '\(name)'") }
        }
    }

    public func removeDevice(account: String, name: String) throws {
        try write { connection in
            let id = try Self.accountID(account, connection)
            let changed = try connection.run("DELETE FROM devices WHERE account_id = $1 AND name = $2", [.integer(id), .text(name)])
            if changed == 0 { throw ServerError.notFound("the account '\(account)' has no device named '\(name)'") }
        }
    }

    public func authenticate(token: String) throws -> ServerStore.Device {
        try withConnection { connection in try Self.authenticate(token: token, connection) }
    }

    static func authenticate(token: String, _ connection: PostgresConnection) throws -> ServerStore.Device {
        let hash = Tokens.hash(token)
        let found = try connection.queryFirst(
            """
            SELECT d.id, d.account_id, d.name, d.client_device, d.revoked, d.last_seen, d.last_device_seq, d.acknowledged_cursor,
                   a.uid, d.token_hash, a.next_seq, a.purged_through, a.encrypted, a.key_id
            FROM devices d JOIN accounts a ON a.id = d.account_id WHERE d.token_hash = $1
            """, [.bytes(hash)]
        ) { row -> ServerStore.Device? in
            // The lookup is by hash; compare again in constant time before trusting it.
            guard let stored = row.bytes(9), Crypto.constantTimeEqual(stored, hash) else { return nil }
            return authenticatedDevice(row)
        }
        guard let device = found ?? nil else { throw ServerError.unauthorized("the token is not valid") }
        guard !device.revoked else { throw ServerError.revoked }
        return device
    }
}
