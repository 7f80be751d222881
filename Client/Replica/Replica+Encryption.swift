import JSON
import SyncCore

/// The replica's side of end-to-end encryption. The replica stays
/// readable on the device; what changes is what the server is told: sealed
/// changes, whose chains the replica must compute over the sealed bytes (the
/// server chains what it receives), and a fresh start on the server when an
/// account key arrives.
extension Replica {
    /// Where the switch to an account key stands: the key this replica syncs
    /// with (its id, never the key) and whether every record it holds still
    /// has to go up (see ``requireFullRelay()``).
    public struct EncryptionState: Sendable, Equatable {
        public var keyID: String?
        public var relayPending: Bool
        /// The pending relay is the one of the switch to a key (nothing else
        /// asked for one since): records this device alone made may wait
        /// for its push.
        public var relayIsSwitch: Bool
        /// The pending relay is the one of a move to another account
        /// (``checkAccount(_:epoch:)``): when it finishes, this machine has
        /// joined that account.
        public var relayJoinsAccount: Bool = false
        /// The server said its operator reset the account's encryption: a
        /// sync stops until `brsync key init` or `key forget` (or another
        /// machine encrypts the account again).
        public var resetNoted: Bool
        /// This machine, without a key, saw its account end-to-end encrypted:
        /// it sends no record readable until a key is added, or the user
        /// clears the mark after an operator's reset (`brsync key forget`).
        /// Sticky: a server that later says "not encrypted" does not clear it.
        public var sawEncrypted: Bool
        /// Keys this machine saw the account rotated away from: nothing is
        /// ever sealed with them again (a key added later replaces them).
        public var retiredKeyIDs: Set<String>
        /// The key this machine asked the server for itself, last
        /// (``noteKeyMadeHere(_:)``).
        public var keyMadeHere: String?
        /// The retired key whose records this machine, which learned of the
        /// rotation late, has yet to check against the new key's account
        /// (``setAsideUnvouched(reference:why:)``); nothing leaves it until then.
        public var vouchPending: String?
        /// The account it saw encrypted (``sawEncrypted``), when an answer
        /// named it (nil for a mark made before marks named it, or by a
        /// refusal alone).
        public var sawEncryptedAccount: String? = nil

        /// Whether a machine that saw account `seen` encrypted has a token of
        /// another account `now` (a move), not of the same one (a reset);
        /// false when either is not known.
        public static func movedAway(seen: String?, now: String?) -> Bool {
            guard let seen, let now, !now.isEmpty else { return false }
            return seen != now
        }
    }

    public func encryptionState() throws -> EncryptionState {
        // `e2e_relay` is what replicas written before relays were general kept
        // (for a switch, or an account encrypted again: the same relay).
        let (relay, legacy) = (try meta("relay_all"), try meta("e2e_relay"))
        return EncryptionState(
            keyID: try meta("e2e_key"), relayPending: relay != nil || legacy != nil,
            relayIsSwitch: relay == Self.switchRelay || relay == nil && legacy != nil,
            relayJoinsAccount: relay == Self.accountRelay,
            resetNoted: try meta("e2e_reset") != nil, sawEncrypted: try meta("e2e_seen") != nil,
            retiredKeyIDs: Set(
                (try meta("e2e_retired") ?? "").split(separator: ",").map(String.init).filter(Wire.isKeyID)),
            keyMadeHere: try meta("e2e_made_here"), vouchPending: try meta("e2e_vouch"),
            sawEncryptedAccount: try meta("e2e_seen_account").flatMap { CursorOrigin.isAccountID($0) ? $0 : nil })
    }

    /// Marks that the account is end-to-end encrypted while this machine has
    /// no key (see ``EncryptionState/sawEncrypted``), with the account an
    /// answer named (the newest seen encrypted; a mark without one keeps
    /// the one it has).
    public func noteAccountEncrypted(account: String? = nil) throws {
        let named = account.flatMap { CursorOrigin.isAccountID($0) ? $0 : nil }
        let (seen, seenAccount) = (try meta("e2e_seen"), try meta("e2e_seen_account"))
        guard seen == nil || (named != nil && named != seenAccount) else { return }
        try transaction {
            try setMeta("e2e_seen", "1")
            if let named { try setMeta("e2e_seen_account", named) }
        }
    }

    /// Clears ``EncryptionState/sawEncrypted``: only on the user's word
    /// (`brsync key forget` after an operator's reset), or with a key.
    public func clearAccountEncrypted() throws {
        try transaction {
            try setMeta("e2e_seen", nil)
            try setMeta("e2e_seen_account", nil)
        }
    }

    /// Marks the key `keyID` as one the account was rotated away from (see
    /// ``EncryptionState/retiredKeyIDs``). Ids only, and at most the 256
    /// newest: an id opens nothing.
    public func noteKeyRetired(_ keyID: String) throws {
        guard Wire.isKeyID(keyID) else { return }
        try transaction {
            let known = (try meta("e2e_retired") ?? "").split(separator: ",").map(String.init).filter(Wire.isKeyID)
            guard !known.contains(keyID) else { return }
            try setMeta("e2e_retired", (known + [keyID]).suffix(256).joined(separator: ","))
        }
    }

    /// What `relay_all` holds for the relay of a switch to a key.
    static let switchRelay = "switch"
    /// What `relay_all` holds for the relay of a move to another account
    /// (any other value: a relay for another reason; every value: pending).
    static let accountRelay = "account"

    /// Starts syncing with the account key `keyID`, in one transaction: the
    /// server deleted the account's readable records when it was encrypted
    /// (or holds others sealed with another key), and with them every
    /// device's numbered history, so this replica takes a new device id (its
    /// unpushed changes renumbered from 1; the old id's name record says
    /// which id took its place, so every machine shows both as this one),
    /// pulls from zero, and sends every record it holds again, sealed.
    /// Chains computed over readable changes are forgotten.
    /// - Returns: the new device id.
    @discardableResult
    /// - Parameter vouchingFor: the key this replica synced with until now,
    ///   when the account was rotated away from it on another machine (this
    ///   machine learned of the rotation late): what it took in with that
    ///   key is checked against the new key's account before anything is
    ///   relayed (``setAsideUnvouched(reference:why:)``).
    public func beginEncryptedSync(keyID: String, vouchingFor retired: String? = nil) throws -> String {
        try transaction {
            let id = try startOverOnServer(keyID: keyID)
            try setMeta("e2e_vouch", retired)
            return id
        }
    }

    /// Notes that this machine asks the server for the key `keyID` itself
    /// (`brsync key init` or `rotate`): when it starts syncing with it, what
    /// it holds is what it sealed again, nothing to vouch for.
    public func noteKeyMadeHere(_ keyID: String) throws {
        try transaction { try setMeta("e2e_made_here", keyID) }
    }

    /// Stops syncing with a key (`brsync key forget`): the same fresh start
    /// as ``beginEncryptedSync(keyID:)``, readable from now on (the server
    /// deleted the account's sealed records when its encryption was reset).
    @discardableResult
    public func endEncryptedSync() throws -> String {
        try startOverOnServer(keyID: nil)
    }

    private func startOverOnServer(keyID: String?) throws -> String {
        try transaction {
            let old = deviceID
            let id = try forkDeviceID()
            try retireDeviceID(old, successor: id)
            // Every change goes afresh (no retry of a push to the old
            // account), sealed as the account says from now on.
            try database.run("UPDATE changes SET chain = NULL, sealed_format = NULL")
            try setMeta("sealed_format", nil)
            try database.run("DELETE FROM reconcile_seen")
            // Boxes sealed with the key synced until now open under no other.
            try database.run("DELETE FROM boxes")
            try dropLedgers()
            try setMeta("reconcile", nil)
            try setMeta("pull_cursor", "0")
            try setMeta("e2e_key", keyID)
            try setMeta("e2e_account", keyID == nil ? nil : "") // learnt from the first answer with this key
            try setMeta("e2e_reset", nil)
            // Syncing with a key, the machine seals everything; without one
            // (`key forget`), the user said the account is readable now.
            try setMeta("e2e_seen", nil)
            try setMeta("e2e_seen_account", nil)
            try setMeta("e2e_vouch", nil)
            try setMeta("relay_all", Self.switchRelay)
            return id
        }
    }

    /// The server said its operator reset the account's encryption (its
    /// sealed records are gone): syncs stop until this is cleared, and the
    /// next sync with a key starts afresh (``beginEncryptedSync(keyID:)``),
    /// whichever machine encrypts the account again.
    public func noteEncryptionReset() throws {
        try transaction {
            try setMeta("e2e_reset", "1")
            try setMeta("e2e_key", nil)
        }
    }

    /// `brsync key init` (or an account encrypted again elsewhere) ends the stop.
    public func clearEncryptionReset() throws {
        try transaction { try setMeta("e2e_reset", nil) }
    }

    /// The setting that keeps the certificates of rotations (``KeyCertificate``,
    /// sealed like any setting): every machine that syncs with a newer key
    /// learns them, so any of them can move a server restored from before a
    /// rotation forward, even without the old key.
    static let keyCertificatesSetting = "account_key_certificates"

    /// The rotation certificates this replica knows.
    public func keyCertificates() throws -> [KeyCertificate] {
        guard let text = try setting(Self.keyCertificatesSetting), case .array(let items)? = try? JSONValue.parse(text)
        else { return [] }
        return items.compactMap { try? KeyCertificate(json: $0) }
    }

    /// Adds `certificates` to ``keyCertificates()``, a synced edit (the 16 newest kept).
    public func recordKeyCertificates(_ certificates: [KeyCertificate]) throws {
        try transaction {
            var seen: Set<KeyCertificate> = []
            let all = (certificates + (try keyCertificates())).filter { seen.insert($0).inserted }.prefix(
                KeyCertificate.maxChain)
            try setSetting(Self.keyCertificatesSetting, JSONValue.array(all.map(\.json)).jsonText)
        }
    }

    /// The settings, one per key, that say a machine found the account on a
    /// server restored from before a rotation, still sealed with that key,
    /// and moved it forward (sealed like any setting, so only a holder of a
    /// newer key writes one). Only then can a machine that synced with that
    /// key hold writes made with it after the rotation (without a restore,
    /// the server refused them): one that learns of the rotation late checks
    /// what it holds (``setAsideUnvouched(reference:why:)``) when the key it
    /// synced with is named here.
    static let movedForwardPrefix = "account_key_moved_forward/"

    /// Whether a machine moved a restored server forward from `keyID` (see ``movedForwardPrefix``).
    public func wasMovedForward(from keyID: String) throws -> Bool {
        try setting(Self.movedForwardPrefix + keyID) != nil
    }

    /// Notes that this machine moved a restored server forward from `keyID`,
    /// a synced edit. - Returns: the setting's key, to send at once.
    @discardableResult
    public func recordMovedForward(from keyID: String) throws -> String {
        let name = Self.movedForwardPrefix + keyID
        try transaction { if try setting(name) == nil { try setSetting(name, "1") } }
        return name
    }

    /// The pending check of a machine that learned of a rotation late is not
    /// needed: no server was restored from before the rotation (``wasMovedForward(from:)``).
    public func clearVouch() throws {
        try transaction { try setMeta("e2e_vouch", nil) }
    }

    /// The setting that lists the ids of the keys rotations replaced (sealed
    /// like any setting): every machine that syncs with a newer key learns
    /// them, so any of them can recognise a server restored from before a
    /// rotation. Ids only: an id is derived from a key and opens nothing.
    static let replacedKeysSetting = "account_keys_replaced"

    /// The ids of account keys a rotation replaced, as far as this replica knows.
    public func replacedKeyIDs() throws -> Set<String> {
        Set((try setting(Self.replacedKeysSetting) ?? "").split(separator: ",").map(String.init).filter(Wire.isKeyID))
    }

    /// Adds `ids` (keys a rotation here replaced) to ``replacedKeyIDs()``, a
    /// synced edit (at most the 64 newest ids are kept).
    public func recordReplacedKeyIDs(_ ids: [String]) throws {
        try transaction {
            let known = (try setting(Self.replacedKeysSetting) ?? "").split(separator: ",").map(String.init).filter(
                Wire.isKeyID)
            var seen: Set<String> = []
            let all = (ids.filter(Wire.isKeyID) + known).filter { seen.insert($0).inserted }.prefix(64)
            try setSetting(Self.replacedKeysSetting, all.joined(separator: ","))
        }
    }

    /// The account (its random id) this replica's key belongs to: the one it
    /// first synced with under that key (for a replica keyed before this was
    /// kept, the account it synced with last). Nil until known.
    public func keyAccount() throws -> String? {
        guard try meta("e2e_key") != nil else { return nil }
        switch try meta("e2e_account") {
        case nil: return try meta("account")
        case ""?: return nil
        case let account?: return account
        }
    }

    public func setKeyAccount(_ account: String) throws {
        try transaction { try setMeta("e2e_account", account) }
    }

    /// Every record went up (see ``requireFullRelay()``).
    public func finishFullRelay() throws {
        try transaction {
            try setMeta("relay_all", nil)
            try setMeta("e2e_relay", nil)
        }
    }

    /// Every record this replica holds must go up before it syncs on: the
    /// server lost them (a restore, another epoch or account, an account
    /// encrypted again after a restore from before its switch). Kept until
    /// ``finishFullRelay()``, so a sync stopped half way relays at the next.
    public func requireFullRelay() throws {
        try transaction { try setMeta("relay_all", "1") }
    }
}
