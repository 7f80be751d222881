import JSON

/// `POST /v1/account/encrypt`: make the account end-to-end encrypted with the
/// key `keyID`, or rotate it from `replacing`, if the account holds no record
/// after `seen` (docs/protocol.md).
public struct EncryptRequest: Sendable, Equatable {
    /// The id of the new account key (16 hex digits).
    public var keyID: String
    /// The id of the key it replaces (a rotation).
    public var replacing: String?
    /// The account sequence the asking replica has pulled through: the
    /// server refuses (`account_moved`) while it holds later records.
    public var seen: Int64?
    /// The account the asking replica's key belongs to, when it knows it:
    /// the server refuses (`other_account`) a change to another account.
    public var account: String?
    /// The new key's signing public key (base64url; protocol 3): the server
    /// keeps it and verifies every write to the account against it. The
    /// request's ``WriteSignature`` is made with it (proof that the asker
    /// holds the key).
    public var publicKey: String?
    /// A rotation's authority (protocol 3): certificates signed by the
    /// account's current key, chained to the new one (``KeyCertificate``).
    public var certificates: [KeyCertificate] = []
    /// The asker knows the operator reset the account's encryption and
    /// encrypts it again on purpose (`brsync key init`): without it, the
    /// server refuses a reset account (`encryption_reset`), so a machine
    /// never re-encrypts one by itself.
    public var afterReset = false

    public init(
        keyID: String, replacing: String? = nil, seen: Int64? = nil, account: String? = nil, publicKey: String? = nil,
        certificates: [KeyCertificate] = []
    ) {
        self.keyID = keyID
        self.replacing = replacing
        self.seen = seen
        self.account = account
        self.publicKey = publicKey
        self.certificates = certificates
    }

    public var body: [UInt8] {
        var object: [String: JSONValue] = ["key": .string(keyID)]
        if let replacing { object["replaces"] = .string(replacing) }
        if let seen { object["seen"] = .int(seen) }
        if let account { object["account"] = .string(account) }
        if let publicKey { object["publicKey"] = .string(publicKey) }
        if !certificates.isEmpty { object["certificates"] = .array(certificates.map(\.json)) }
        if afterReset { object["afterReset"] = .bool(true) }
        return Array(JSONValue.object(object).jsonText.utf8)
    }

    private static let needsKey = #"the body must be {"key": ID} (an account key's id, 16 hex digits)"#

    /// Reads a request; its checks, in order: `key`, `replaces`, `account`,
    /// `seen`, `publicKey`, `certificates` (at most ``KeyCertificate/maxChain``), `afterReset`.
    public init(reading bytes: UnsafeBufferPointer<UInt8>) throws(Wire.ReadError) {
        let object = try Wire.object(bytes, else: Self.needsKey)
        do throws(Wire.Problem) {
            try self.init(object)
        } catch {
            throw .invalid(error)
        }
    }

    private init(_ object: [String: JSONValue]) throws(Wire.Problem) {
        guard let keyID = object["key"]?.stringValue, Wire.isKeyID(keyID) else {
            throw Wire.Problem(Self.needsKey)
        }
        self.init(keyID: keyID)
        if let old = object["replaces"] {
            guard let text = old.stringValue, Wire.isKeyID(text) else {
                throw Wire.Problem(#""replaces" must be an account key's id"#)
            }
            replacing = text
        }
        if let value = object["account"] {
            guard let text = value.stringValue, text.utf8.count <= 64 else {
                throw Wire.Problem(#""account" must be an account id"#)
            }
            account = text
        }
        if let value = object["seen"] {
            guard let number = value.intValue, number >= 0 else {
                throw Wire.Problem(#""seen" must be an account sequence (a whole number, 0 or more)"#)
            }
            seen = number
        }
        if let value = object["publicKey"] {
            guard let text = value.stringValue, WriteSignature.isPublicKey(text) else {
                throw Wire.Problem(#""publicKey" must be an Ed25519 public key (43 characters of base64url)"#)
            }
            publicKey = text
        }
        if let value = object["certificates"] {
            guard case .array(let items) = value, items.count <= KeyCertificate.maxChain else {
                throw Wire.Problem(
                    #""certificates" must be a list of at most \#(KeyCertificate.maxChain) key certificates"#)
            }
            certificates = try items.map { item throws(Wire.Problem) in try KeyCertificate(json: item) }
        }
        if let value = object["afterReset"] {
            guard let flag = value.boolValue else { throw Wire.Problem(#""afterReset" must be true or false"#) }
            afterReset = flag
        }
    }
}

/// The answer to ``EncryptRequest``: whether the account changed (the server
/// deleted its records then), the key it is sealed with now, and the signing
/// key the server keeps for it (nil: none registered yet).
public struct EncryptResponse: Sendable, Equatable {
    public var changed: Bool
    public var keyID: String
    public var signingKey: String?

    public init(changed: Bool, keyID: String, signingKey: String? = nil) {
        self.changed = changed
        self.keyID = keyID
        self.signingKey = signingKey
    }

    public var json: JSONValue {
        var object: [String: JSONValue] = ["encrypted": .bool(true), "changed": .bool(changed), "key": .string(keyID)]
        if let signingKey { object["signingKey"] = .string(signingKey) }
        return .object(object)
    }

    public init(json: JSONValue) throws(Wire.Problem) {
        guard case .object(let object) = json, let changed = object["changed"]?.boolValue,
            let keyID = object["key"]?.stringValue
        else {
            throw Wire.Problem("the answer to the encryption request has no 'changed' and 'key'")
        }
        let signingKey = object["signingKey"]?.stringValue
        if let signingKey, !WriteSignature.isPublicKey(signingKey) {
            throw Wire.Problem("the answer's 'signingKey' is not a public key")
        }
        self.init(changed: changed, keyID: keyID, signingKey: signingKey)
    }
}
