import Cryptography
import JSON
import ServerStore
import SyncCore

/// The store core's administration (brsyncd's commands): accounts, their
/// limits, devices, tokens, join codes and revocation, written once for both
/// dialects as the sync operations are (SyncStore+Sync.swift).
extension SyncStore {

    public func addAccount(_ name: String) throws {
        try Store.validateName(name, what: "account")
        try writing { transaction in
            if try transaction.accountID(named: name) != nil {
                throw ServerError.conflict("the account '\(name)' exists already")
            }
            try transaction.insertAccount(name: name, uid: Crypto.hex(Crypto.randomBytes(8)), now: currentMillis())
        }
    }

    public func accounts() throws -> [Store.Account] {
        try reading { try $0.accountSummaries() }
    }
    /// Every record of an account as stored, tombstones included, in change
    /// order (the server's side of a comparison; the tests' oracle reads it).
    public func records(account: String) throws -> [ChangeRecord] {
        try reading { transaction in try transaction.allRecords(account: try Self.account(account, in: transaction)) }
    }

    /// Deletes an account with its devices and records.
    public func removeAccount(_ name: String) throws {
        let id = try writing { transaction in
            let id = try Self.account(name, in: transaction)
            try transaction.deleteAccount(id)
            return id
        }
        changed(id) // its watches are answered: the token no longer works
    }

    /// A device more would take the account past its device limit (revoked
    /// devices count: remove an account's device for good by revoking it
    /// and reusing its name with `device token`).
    private static func checkDeviceLimit(account: Int64, in transaction: any StoreTransaction) throws {
        let limit = try transaction.accountCounters(account)?.limits.devices ?? Store.Limits.defaultDevices
        let count = try transaction.deviceCount(account: account)
        if count >= limit { throw ServerError.quotaExceeded(what: "devices", would: count + 1, limit: limit) }
    }

    /// Changes an account's limits (nil: unchanged); each at least 1.
    /// - Returns: the limits now.
    @discardableResult
    public func setLimits(account name: String, records: Int64?, bytes: Int64?, devices: Int64?) throws -> Store.Limits
    {
        for (what, value) in [("records", records), ("bytes", bytes), ("devices", devices)] {
            if let value, value < 1 { throw ServerError.badRequest("a limit of \(what) is at least 1 (got \(value))") }
        }
        return try writing { transaction in
            let id = try Self.account(name, in: transaction)
            var limits = try transaction.accountCounters(id)?.limits ?? Store.Limits()
            if let records { limits.records = records }
            if let bytes { limits.bytes = bytes }
            if let devices { limits.devices = devices }
            try transaction.setLimits(account: id, limits)
            return limits
        }
    }

    /// An account's counts before and after ``recount(account:)``.
    public struct Recount: Sendable, Equatable {
        public var account: String
        public var before: Store.Usage
        public var after: Store.Usage
    }

    /// Counts again what each account holds (or the one named) from its
    /// records, in one transaction: for counts that writes made outside
    /// brsyncd moved away (Deploy/OPERATIONS.md, "Limits per account").
    /// - Throws: ``ServerError/notFound(_:)`` for a name no account has (nothing changed).
    public func recount(account name: String? = nil) throws -> [Recount] {
        try writing { transaction in
            let accounts = try transaction.accountSummaries().filter { name == nil || $0.name == name }
            if let name, accounts.isEmpty { throw ServerError.notFound("no account named '\(name)'") }
            return try accounts.map { account in
                Recount(
                    account: account.name, before: Store.Usage(records: Int64(account.records), bytes: account.bytes),
                    after: try transaction.recountUsage(account.id))
            }
        }
    }

    static func account(_ name: String, in transaction: any StoreTransaction) throws -> Int64 {
        guard let id = try transaction.accountID(named: name) else {
            throw ServerError.notFound("no account named '\(name)'")
        }
        return id
    }

    /// Adds a device and returns its token: 256 random bits, shown once and
    /// stored only as its SHA-256 hash.
    public func addDevice(account: String, name: String) throws -> String {
        try Store.validateName(name, what: "device")
        let token = Tokens.make()
        try writing { transaction in
            let id = try Self.account(account, in: transaction)
            if try transaction.deviceExists(account: id, name: name) {
                throw ServerError.conflict("the account '\(account)' has a device named '\(name)' already")
            }
            try Self.checkDeviceLimit(account: id, in: transaction)
            try transaction.insertDevice(account: id, name: name, tokenHash: Tokens.hash(token), now: currentMillis())
        }
        return token
    }

    public func devices(account: String) throws -> [Store.Device] {
        try reading { transaction in try transaction.devices(account: try Self.account(account, in: transaction)) }
    }

    /// Issues a new token for an existing device (the old one stops working;
    /// a revoked device is reinstated). Its replicas keep their change streams,
    /// so nothing is pushed twice or skipped.
    /// - Returns: the new token (shown once; only its hash is stored).
    public func reissueToken(account: String, device name: String) throws -> String {
        let token = Tokens.make()
        let id = try writing { transaction in
            let id = try Self.account(account, in: transaction)
            guard try transaction.setToken(account: id, device: name, tokenHash: Tokens.hash(token)) else {
                throw ServerError.notFound("the account '\(account)' has no device named '\(name)'")
            }
            return id
        }
        changed(id) // the old token no longer works: not even from memory
        return token
    }
    /// A join code's enrollment secret for the named device: added when it
    /// does not exist (with no token anyone knows), or, when it does, its
    /// token replaced by the secret (the old one stops working; a revoked
    /// device is reinstated). The secret reads until `join` exchanges it,
    /// once, at most `validMilliseconds` from now; a newer code of the device
    /// replaces it.
    /// - Parameter adding: whether the device must be new (`device add`) or must exist (`device token`).
    /// - Returns: the secret, and whether the account was end-to-end encrypted then (the join code says so).
    public func enroll(
        account: String, device name: String, adding: Bool, validMilliseconds: Int64
    ) throws -> Store.JoinSecret {
        if adding { try Store.validateName(name, what: "device") }
        let secret = Tokens.makeJoinSecret()
        let hash = Tokens.hash(secret)
        let now = currentMillis()
        let (id, encrypted) = try writing { transaction in
            let id = try Self.account(account, in: transaction)
            let encrypted = try transaction.accountCounters(id)?.encrypted ?? false
            let existing = try transaction.deviceID(account: id, name: name)
            if adding, existing != nil {
                throw ServerError.conflict("the account '\(account)' has a device named '\(name)' already")
            }
            if !adding, existing == nil {
                throw ServerError.notFound("the account '\(account)' has no device named '\(name)'")
            }
            if existing == nil {
                try Self.checkDeviceLimit(account: id, in: transaction)
                try transaction.insertDevice(account: id, name: name, tokenHash: hash, now: now)
            }
            guard let device = try existing ?? transaction.deviceID(account: id, name: name) else {
                throw ServerError.storeUnusable("the device '\(name)' was not stored")
            }
            try transaction.setToken(device: device, tokenHash: hash)
            try transaction.insertEnrollment(device: device, secretHash: hash, expiresAt: now + validMilliseconds)
            return (id, encrypted)
        }
        changed(id) // a device's old token no longer works: not even from memory
        return Store.JoinSecret(secret: secret, accountEncrypted: encrypted)
    }
    /// Exchanges a join code's secret for `token`, made by the joining
    /// machine: the device's token from now on, and the secret no longer
    /// works. Asked again with the same token (an answer lost on the way),
    /// it answers the same.
    /// - Throws: ``ServerError/unauthorized(_:)`` for a secret that is not
    ///   valid, expired or used (for another token); ``ServerError/badRequest(_:)``
    ///   for a token not of a device token's form.
    @discardableResult
    public func join(secret: String, token: String) throws -> Store.Device {
        guard secret.hasPrefix(Tokens.joinPrefix) else {
            throw ServerError.unauthorized("this is not a join code's secret")
        }
        guard Tokens.isWellFormed(token) else {
            throw ServerError.badRequest(
                "the new token must be '\(Tokens.prefix)' and 43 characters of base64url (256 random bits)")
        }
        let (secretHash, tokenHash) = (Tokens.hash(secret), Tokens.hash(token))
        try writing { transaction in
            guard let enrollment = try transaction.enrollment(secretHash: secretHash) else { throw Self.invalidToken }
            if enrollment.usedAtMillis != nil {
                // The same machine asking again (its answer was lost): done already.
                guard let used = enrollment.tokenHash, Crypto.constantTimeEqual(used, tokenHash) else {
                    throw ServerError.unauthorized(
                        "this join code was used already: ask the server's operator for a new one for another machine")
                }
                return
            }
            if currentMillis() > enrollment.expiresAtMillis {
                throw ServerError.unauthorized(
                    "this join code expired at \(Timestamp.iso8601(millis: enrollment.expiresAtMillis)): "
                        + "ask the server's operator for a new one")
            }
            // Current only while the device's token is still the secret (no
            // newer token or code since), and the device is not revoked.
            guard let holder = try transaction.device(tokenHash: secretHash), holder.device.id == enrollment.device
            else {
                throw ServerError.unauthorized(
                    "this join code no longer works: its device was given a new token or join code since")
            }
            if holder.device.revoked { throw ServerError.revoked }
            try transaction.setToken(device: enrollment.device, tokenHash: tokenHash)
            try transaction.markEnrollmentUsed(secretHash: secretHash, tokenHash: tokenHash, now: currentMillis())
        }
        return try authenticate(token: token)
    }

    public func revokeDevice(account: String, name: String) throws {
        let id = try writing { transaction in
            let id = try Self.account(account, in: transaction)
            guard try transaction.revoke(account: id, device: name) else {
                throw ServerError.notFound("the account '\(account)' has no device named '\(name)'")
            }
            return id
        }
        changed(id) // the revoked device's watches are answered: refused
    }
}
