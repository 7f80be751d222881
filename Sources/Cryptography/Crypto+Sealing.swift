import COpenSSL

/// The primitives end-to-end encryption needs, chosen so that the
/// phone can use CryptoKit's equivalents: HMAC-SHA256 (`HMAC<SHA256>`),
/// HKDF-SHA256 (`HKDF<SHA256>`) and AES-256-GCM (`AES.GCM`, 12-byte nonce,
/// 16-byte tag). Here they come from OpenSSL's EVP interface.
extension Crypto {
    /// HMAC-SHA256 of `data` under `key` (RFC 2104).
    public static func hmacSHA256(key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        HMACKey(key).code(data)
    }

    /// HKDF-SHA256 (RFC 5869): `length` bytes (at most 8,160) derived from
    /// `key` with `salt` and `info`.
    public static func hkdfSHA256(key: [UInt8], salt: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
        precondition(length > 0 && length <= 255 * 32, "HKDF-SHA256 gives 1 to 8,160 bytes")
        // Extract: an empty salt is a string of 32 zeros.
        let pseudorandomKey = hmacSHA256(key: salt.isEmpty ? [UInt8](repeating: 0, count: 32) : salt, key)
        // Expand.
        var output: [UInt8] = []
        output.reserveCapacity(length + 32)
        var block: [UInt8] = []
        var counter: UInt8 = 1
        while output.count < length {
            block = hmacSHA256(key: pseudorandomKey, block + info + [counter])
            output += block
            counter &+= 1
        }
        return Array(output.prefix(length))
    }

    /// A value sealed with AES-256-GCM: the 12-byte nonce, the ciphertext and
    /// the 16-byte tag, in that order when stored (as CryptoKit's `combined`).
    public struct SealedBox: Sendable, Equatable {
        public let nonce: [UInt8]
        public let ciphertext: [UInt8]
        public let tag: [UInt8]

        public init(nonce: [UInt8], ciphertext: [UInt8], tag: [UInt8]) {
            self.nonce = nonce
            self.ciphertext = ciphertext
            self.tag = tag
        }

        public var combined: [UInt8] { nonce + ciphertext + tag }

        /// - Throws: ``Crypto/SealingError`` when `combined` is shorter than a nonce and a tag.
        public init(combined: [UInt8]) throws(SealingError) {
            guard combined.count >= 28 else {
                throw SealingError(
                    message: "a sealed value is at least 28 bytes (nonce and tag); this one has \(combined.count)")
            }
            nonce = Array(combined.prefix(12))
            ciphertext = Array(combined.dropFirst(12).dropLast(16))
            tag = Array(combined.suffix(16))
        }
    }

    public struct SealingError: Error, Sendable, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    /// Seals `plaintext` with AES-256-GCM under a 32-byte `key`, with
    /// `authenticated` data bound to it (not encrypted), and a random nonce
    /// unless one is given (tests).
    public static func seal(
        _ plaintext: [UInt8], key: [UInt8], authenticated: [UInt8] = [], nonce: [UInt8]? = nil
    ) -> SealedBox {
        let combined = GCMKey(key).seal(plaintext, authenticated: authenticated, nonce: nonce ?? randomBytes(12))
        // A nonce and a tag are always there.
        return (try? SealedBox(combined: combined))!
    }

    /// Opens a sealed value: its plaintext, or an error when the key, the
    /// authenticated data, the nonce, the ciphertext or the tag is not the one
    /// it was sealed with (nothing of the plaintext is returned then).
    public static func open(_ box: SealedBox, key: [UInt8], authenticated: [UInt8] = []) throws(SealingError) -> [UInt8]
    {
        guard key.count == 32, box.nonce.count == 12, box.tag.count == 16 else {
            throw SealingError(message: "a sealed value needs a 32-byte key, a 12-byte nonce and a 16-byte tag")
        }
        return try GCMKey(key).open(box.combined, authenticated: authenticated)
    }
}
