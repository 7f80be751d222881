import JSON

/// A statement, signed by an account key's signing key, that the account
/// moves from that key to the next: `{"from": OLD, "to": NEW, "publicKey":
/// NEW_PUBLIC, "signature": SIGNATURE}`. A rotation carries it; every machine
/// that syncs with the new key keeps it (a synced setting), so a server
/// restored from before the rotation is moved forward by any of them, even
/// one that never held the old key. Certificates chain: K1→K2, K2→K3.
public struct KeyCertificate: Sendable, Equatable, Hashable {
    /// The id of the key that signs (the account's key before).
    public var from: String
    /// The id of the key the account moves to.
    public var to: String
    /// The new key's signing public key (base64url).
    public var publicKey: String
    /// The old key's signature of ``statement(account:)`` (base64url).
    public var signature: String

    public init(from: String, to: String, publicKey: String, signature: String) {
        self.from = from
        self.to = to
        self.publicKey = publicKey
        self.signature = signature
    }

    /// Most certificates one key change carries (a server restored from
    /// before that many rotations is moved forward in one step).
    public static let maxChain = 16

    /// What the old key signs: the account, both key ids and the new public key.
    public static func statement(account: String, from: String, to: String, publicKey: String) -> [UInt8] {
        Array("brsync-key-rotation-v1\n\(account)\n\(from)\n\(to)\n\(publicKey)".utf8)
    }

    public func statement(account: String) -> [UInt8] {
        Self.statement(account: account, from: from, to: to, publicKey: publicKey)
    }

    public var json: JSONValue {
        .object([
            "from": .string(from), "to": .string(to), "publicKey": .string(publicKey), "signature": .string(signature),
        ])
    }

    public init(json: JSONValue) throws(Wire.Problem) {
        guard case .object(let object) = json, let from = object["from"]?.stringValue, Wire.isKeyID(from),
            let to = object["to"]?.stringValue, Wire.isKeyID(to),
            let publicKey = object["publicKey"]?.stringValue, WriteSignature.isPublicKey(publicKey),
            let signature = object["signature"]?.stringValue, WriteSignature.isSignature(signature)
        else {
            throw Wire.Problem(
                #"a key certificate is {"from": ID, "to": ID, "publicKey": KEY, "signature": SIGNATURE}"#)
        }
        self.init(from: from, to: to, publicKey: publicKey, signature: signature)
    }

    /// The shortest chain from `start` to `end` through `certificates`, or
    /// nil when there is none within ``maxChain`` steps (a rotation killed
    /// half way may leave a branch that leads nowhere).
    public static func chain(
        from start: String, to end: String, through certificates: [KeyCertificate]
    ) -> [KeyCertificate]? {
        var paths: [String: [KeyCertificate]] = [start: []]
        var frontier = [start]
        while !frontier.isEmpty {
            if let found = paths[end] { return found }
            var next: [String] = []
            for key in frontier {
                guard let path = paths[key], path.count < maxChain else { continue }
                for certificate in certificates where certificate.from == key && paths[certificate.to] == nil {
                    paths[certificate.to] = path + [certificate]
                    next.append(certificate.to)
                }
            }
            frontier = next
        }
        return paths[end]
    }
}
