import JSON

/// The proof that a write to an end-to-end encrypted account comes from a
/// holder of the account key (protocol 3, docs/protocol.md): the header
/// `Brsync-Signature: PUBLIC SIGNATURE`, an Ed25519 public key and its
/// signature, both base64url, over ``message(tokenHash:method:path:bodyDigest:)``.
///
/// The signing key is derived from the account key (every holder derives the
/// same pair); the server keeps the account's public key and verifies every
/// push, relay and key change against it. A device token alone reads
/// ciphertext and nothing more. Signatures stay out of change chains and
/// digests: an Ed25519 signature made by another implementation may differ,
/// and a retried push must be byte for byte the same.
public struct WriteSignature: Sendable, Equatable {
    /// The request header that carries the signature.
    public static let header = "Brsync-Signature"

    /// The signer's public key: 43 characters of base64url (32 bytes).
    public var publicKey: String
    /// The signature: 86 characters of base64url (64 bytes).
    public var signature: String

    public init(publicKey: String, signature: String) {
        self.publicKey = publicKey
        self.signature = signature
    }

    /// The header's value.
    public var headerValue: String { "\(publicKey) \(signature)" }

    /// Reads the header's value; nil when it is not a public key and a
    /// signature of the right lengths in base64url.
    public init?(headerValue: String) {
        let parts = headerValue.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 2, Self.isPublicKey(String(parts[0])), Self.isBase64URL(parts[1], length: 86) else {
            return nil
        }
        self.init(publicKey: String(parts[0]), signature: String(parts[1]))
    }

    /// Whether `text` is an Ed25519 public key in base64url (43 characters).
    public static func isPublicKey(_ text: String) -> Bool { isBase64URL(Substring(text), length: 43) }

    /// Whether `text` is an Ed25519 signature in base64url (86 characters).
    public static func isSignature(_ text: String) -> Bool { isBase64URL(Substring(text), length: 86) }

    private static func isBase64URL(_ text: Substring, length: Int) -> Bool {
        text.utf8.count == length && text.utf8.allSatisfy(Wire.isBase64URL)
    }

    /// What a write's signature covers: the request's device (the SHA-256 of
    /// its bearer token, in hex: a signature made for one device is worth
    /// nothing with another's token), the method and path, and the SHA-256 of
    /// the body (which names the account key, the push's `from` sequence and
    /// every change).
    /// - Parameters:
    ///   - tokenHash: the hex SHA-256 of the bearer token.
    ///   - bodyDigest: the hex SHA-256 of the request body.
    public static func message(tokenHash: String, method: String, path: String, bodyDigest: String) -> [UInt8] {
        Array("brsync-write-v1\n\(tokenHash)\n\(method) \(path)\n\(bodyDigest)".utf8)
    }
}
