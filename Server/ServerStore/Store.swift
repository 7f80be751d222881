import SyncCore

/// The vocabulary every store shares (SQLite, PostgreSQL): what the API,
/// the engine and `brsyncd`'s commands read from a store.
public enum Store {
    /// The epoch a client of an account sees: the store's (a new one when
    /// the store was restored or copied as a whole, which moves every
    /// account) followed by the account's own (a new one when a cursor or a
    /// change number of that account shows it was rolled back, or its
    /// encryption was reset: that account only). Both are lower-case hex.
    public static func epoch(store: String, account: String) -> String { store + account }

    /// The most replica streams (device ids that pushed) an account keeps.
    public static let maxStreamsPerAccount: Int64 = 1_024
    /// How far behind a stream's acknowledged change its refusals are kept
    /// (``StoreTransaction/keepRefusals(account:clientDevice:_:)``): a
    /// retry reaches back one batch (at most 1,000 changes), so this is many
    /// times what an honest client asks again. Never pruned by age alone.
    public static let refusalsKept: Int64 = 10_000

    /// The device id the server's own clock stamps carry.
    public static let serverDevice = "server"
    /// A pull page's default byte budget (see ``ServerConfiguration/maxPageBytes``).
    public static let defaultPageBytes = 1 << 20
    /// How much of a relay (its records' fields as text) one write
    /// transaction merges: a relay of megabytes is cut into parts, so a write
    /// of another account waits for one part at most, not for the whole.
    public static let relayPartBytes = 128 * 1024

    /// A join code's enrollment: the device it joins, until when, and
    /// whether (and for which token) it was exchanged.
    public struct Enrollment: Sendable, Equatable {
        public var device: Int64
        public var expiresAtMillis: Int64
        public var usedAtMillis: Int64?
        /// The hash of the token the joining machine made, once used.
        public var tokenHash: [UInt8]?

        public init(device: Int64, expiresAtMillis: Int64, usedAtMillis: Int64? = nil, tokenHash: [UInt8]? = nil) {
            self.device = device
            self.expiresAtMillis = expiresAtMillis
            self.usedAtMillis = usedAtMillis
            self.tokenHash = tokenHash
        }
    }

    public struct Account: Sendable, Equatable {
        public let id: Int64
        public let name: String
        public let devices: Int
        public let records: Int
        /// The stored text of its records (fields and versions), in bytes.
        public var bytes: Int64 = 0
        public var limits = Limits()
        /// The id its machines know it by (answers name it; a machine's
        /// messages about another account show it).
        public var uid = ""

        public init(id: Int64, name: String, devices: Int, records: Int, bytes: Int64 = 0, limits: Limits = Limits()) {
            self.id = id
            self.name = name
            self.devices = devices
            self.records = records
            self.bytes = bytes
            self.limits = limits
        }
    }

    /// What one account may hold, so no account can fill the server for
    /// the others: its records (tombstones included), their stored bytes
    /// (fields and versions), its devices. A push or relay that would pass
    /// a limit is refused whole (`quota_exceeded`); one that shrinks an
    /// account already past it (its limit lowered) is taken.
    public struct Limits: Sendable, Equatable {
        /// Default 100,000 (a person's rules and browsers are hundreds).
        public var records: Int64 = Limits.defaultRecords
        /// Default 128 MiB (a sealed rule is about 1 KB).
        public var bytes: Int64 = Limits.defaultBytes
        /// Default 64.
        public var devices: Int64 = Limits.defaultDevices

        public static let defaultRecords: Int64 = 100_000
        public static let defaultBytes: Int64 = 128 << 20
        public static let defaultDevices: Int64 = 64

        public init(
            records: Int64 = Limits.defaultRecords, bytes: Int64 = Limits.defaultBytes,
            devices: Int64 = Limits.defaultDevices
        ) {
            self.records = records
            self.bytes = bytes
            self.devices = devices
        }
    }

    /// What an account holds, as counted by the store (triggers on its
    /// records keep the counts exact whatever writes them).
    public struct Usage: Sendable, Equatable {
        public var records: Int64
        public var bytes: Int64

        public init(records: Int64, bytes: Int64) {
            self.records = records
            self.bytes = bytes
        }
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
        /// The hash of the token the request authenticated with (set by
        /// ``SyncStore``'s check): a write checks it again inside its
        /// transaction, so a token replaced meanwhile writes nothing more.
        public var tokenHash: [UInt8]?
        /// Whether the account is end-to-end encrypted (it takes sealed records only).
        public var accountEncrypted = false
        /// The id of the account key its records are sealed with ("" when not encrypted).
        public var accountKeyID = ""
        /// The signing public key the account's writes are verified with
        /// (base64url; "" while none is registered).
        public var accountSigningKey = ""
        /// The operator reset the account's encryption (and nobody encrypted it since).
        public var accountEncryptionReset = false
        /// The ids of keys the account was rotated away from.
        public var accountRetiredKeys: [String] = []
        /// The account's own timeline ("" until its first rollback or reset):
        /// clients see the store's epoch followed by it (``Store/epoch(store:account:)``).
        public var accountEpoch = ""
        /// The protocol of the device's latest request, as stored (0 before
        /// any request since the store kept it).
        public var clientProtocol = 0
        /// How the account's changes are sealed: 2 once it is marked
        /// (docs/sealed-format-v2.md), else 1.
        public var accountSealedFormat = 1
        /// When the account was marked (ms since 1970), nil while it is not.
        public var accountSealedFormatSince: Int64?
        /// When the device's unused join code expires (nil when it has none;
        /// read by ``SyncStore/devices(account:)`` only, for listings).
        public var joinExpiresMillis: Int64?

        public init(
            id: Int64, accountID: Int64, name: String, clientDevice: String?, revoked: Bool, lastSeenMillis: Int64?,
            lastDeviceSequence: Int64, acknowledgedCursor: Int64, accountUID: String
        ) {
            self.id = id
            self.accountID = accountID
            self.name = name
            self.clientDevice = clientDevice
            self.revoked = revoked
            self.lastSeenMillis = lastSeenMillis
            self.lastDeviceSequence = lastDeviceSequence
            self.acknowledgedCursor = acknowledgedCursor
            self.accountUID = accountUID
        }
    }

    /// A stored record version as read for a pull: its fields and versions
    /// as stored (the wire's JSON), with the replica that made it from a
    /// version it had (`knownTo`) and that version's number.
    public struct PulledRow: Sendable {
        public let sequence: Int64
        public let collection: RecordCollection
        public let key: String
        public let fields: String
        public let versions: String
        /// ``RecordVersion/writer`` as stored (the wire's JSON), or nil.
        public let writer: String?
        public let knownTo: String?
        public let knownAfter: Int64

        public init(
            sequence: Int64, collection: RecordCollection, key: String, fields: String, versions: String,
            writer: String? = nil,
            knownTo: String?, knownAfter: Int64
        ) {
            self.sequence = sequence
            self.collection = collection
            self.key = key
            self.fields = fields
            self.versions = versions
            self.writer = writer
            self.knownTo = knownTo
            self.knownAfter = knownAfter
        }
    }

    /// Records of one account read before a write queues for the lock
    /// (``StoreDialect/readAhead(account:keys:)``), by place; nil where the
    /// record was absent.
    public struct ReadAhead: Sendable {
        public typealias Place = RecordPlace
        let account: Int64
        var records: [Place: RecordVersion?] = [:]
    }

    /// Where a record is filed: its collection and key, the key compared by
    /// its bytes as the databases compare it. (Swift's `String` equals a
    /// canonically equivalent one, "é" as one scalar or as two, which a
    /// table holds as two records: a push naming both would have merged
    /// them into one here, and a read ahead of one taken for the other.)
    public struct RecordPlace: Hashable, Sendable {
        package let collection: RecordCollection
        package let key: String

        package init(collection: RecordCollection, key: String) {
            self.collection = collection
            self.key = key
        }

        public static func == (first: RecordPlace, second: RecordPlace) -> Bool {
            first.collection == second.collection && first.key.utf8.elementsEqual(second.key.utf8)
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(collection)
            var key = key
            key.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        }
    }

    /// A stored record as a push or relay merges into it.
    public struct RecordVersion: Sendable {
        public var state: RecordState
        public var sequence: Int64
        /// The version vector of the write that brought the record's newest
        /// stamp, as its writer sent it, when it differs from the record's
        /// (a write it had not seen was merged in); nil when they are the
        /// same. A pull hands it on as the change's `writer`, so the machine
        /// whose value lost to a write that had not seen it is told
        /// (``SyncEngine/writer(of:base:change:)``).
        public var writer: VersionVector?

        public init(state: RecordState, sequence: Int64, writer: VersionVector? = nil) {
            self.state = state
            self.sequence = sequence
            self.writer = writer
        }
    }

    /// What a pull reads in one snapshot: the device the token names (with
    /// the hash stored for it, compared again in constant time), the epoch,
    /// the replica's stream and up to `limit + 1` records after the cursor.
    public struct PullSnapshot {
        public let device: Device
        public let tokenHash: [UInt8]
        public let epoch: String
        public let stream: (last: Int64, digest: String)?
        public let records: [PulledRow]
        /// The epoch came from the store's ``EpochCache`` (SQLite: one
        /// process writes the file), so it need not be cached again.
        public let epochIsCached: Bool
        /// The records were cut by the page's byte budget: more follow.
        public var truncated = false

        public init(
            device: Device, tokenHash: [UInt8], epoch: String, stream: (last: Int64, digest: String)?,
            records: [PulledRow],
            epochIsCached: Bool = false
        ) {
            self.device = device
            self.tokenHash = tokenHash
            self.epoch = epoch
            self.stream = stream
            self.records = records
            self.epochIsCached = epochIsCached
        }
    }

    /// A join code's secret, as ``SyncStore/enroll(account:device:adding:validMilliseconds:)`` made it.
    public struct JoinSecret: Sendable, Equatable {
        public let secret: String
        /// Whether the account was end-to-end encrypted when the secret was
        /// made: the join code says so, and a join refuses a server that
        /// then says otherwise.
        public let accountEncrypted: Bool

        public init(secret: String, accountEncrypted: Bool) {
            self.secret = secret
            self.accountEncrypted = accountEncrypted
        }
    }

    /// What ``StoreTransaction/setEncryption(account:_:)`` sets.
    public struct Encryption: Sendable, Equatable {
        /// The account key's id; "" for an account that is not encrypted.
        public var keyID: String
        /// The key's signing public key (base64url; "" for none).
        public var signingKey: String
        /// Ids of keys the account was rotated away from.
        public var retiredKeys: [String]
        /// The operator reset the account's encryption.
        public var reset: Bool

        public init(keyID: String, signingKey: String, retiredKeys: [String], reset: Bool = false) {
            self.keyID = keyID
            self.signingKey = signingKey
            self.retiredKeys = retiredKeys
            self.reset = reset
        }
    }

    /// An account's counters and encryption, read (and locked) by a push,
    /// a relay or a key change.
    public struct AccountCounters: Sendable {
        public var nextSequence: Int64 = 1
        public var stampHigh: Int64 = 0
        public var encrypted = false
        /// The id of the key its records are sealed with ("" when not encrypted).
        public var keyID = ""
        /// The signing public key writes are verified with ("" while none is registered).
        public var signingKey = ""
        /// The ids of keys the account was rotated away from: never taken again.
        public var retiredKeys: [String] = []
        /// The operator reset the account's encryption (and nobody encrypted it since).
        public var encryptionReset = false
        /// The account's own timeline ("" until its first rollback or reset).
        public var epoch = ""
        /// How its changes are sealed: 2 once marked, else 1 (``Device/accountSealedFormat``).
        public var sealedFormat = 1
        /// When it was marked (ms since 1970), nil while it is not.
        public var sealedFormatSince: Int64?
        /// What it holds and may hold, when the account was locked.
        public var usage = Usage(records: 0, bytes: 0)
        public var limits = Limits()

        public init(
            nextSequence: Int64 = 1, stampHigh: Int64 = 0, encrypted: Bool = false, keyID: String = "",
            signingKey: String = "",
            retiredKeys: [String] = [], encryptionReset: Bool = false, epoch: String = "",
            usage: Store.Usage = Store.Usage(records: 0, bytes: 0), limits: Store.Limits = Store.Limits(),
            sealedFormat: Int = 1, sealedFormatSince: Int64? = nil
        ) {
            self.sealedFormat = sealedFormat
            self.sealedFormatSince = sealedFormatSince
            self.encryptionReset = encryptionReset
            self.epoch = epoch
            self.usage = usage
            self.limits = limits
            self.nextSequence = nextSequence
            self.stampHigh = stampHigh
            self.encrypted = encrypted
            self.keyID = keyID
            self.signingKey = signingKey
            self.retiredKeys = retiredKeys
        }

        /// The stored form of ``retiredKeys``: ids separated by spaces.
        public static func retiredKeys(text: String?) -> [String] {
            (text ?? "").split(separator: " ").map(String.init).filter(Wire.isKeyID)
        }
    }

    package static func validateName(_ name: String, what: String) throws {
        guard !name.isBlank, name.utf8.count <= 64,
            !name.contains(where: { $0.isNewline || $0.asciiValue.map { $0 < 0x20 } == true })
        else {
            throw ServerError.badRequest("\(what) names are 1 to 64 characters on one line")
        }
        // As a machine's own device name: nothing that reorders or hides
        // what `account list`, `device list` and `recount` print (U+202E).
        if name.unicodeScalars.contains(where: {
            $0.properties.generalCategory == .control || $0.properties.generalCategory == .format
        }) {
            throw ServerError.badRequest("\(what) names must not contain control or formatting characters")
        }
    }
}
