import Cryptography
import SyncCore

/// The account key of end-to-end encryption (Deploy/SECURITY.md):
/// 256 random bits made on the first device, shown once as a recovery code,
/// given to other devices when they join. Only devices hold it.
public struct AccountKey: Sendable, Equatable {
    public let bytes: [UInt8]

    public init(bytes: [UInt8]) throws(RecoveryCodeError) {
        guard bytes.count == 32 else {
            throw RecoveryCodeError(message: "an account key is 32 bytes; this one has \(bytes.count)")
        }
        self.bytes = bytes
    }

    /// A new key from OpenSSL's CSPRNG.
    public static func generate() -> AccountKey {
        // 32 bytes always make a key.
        (try? AccountKey(bytes: Crypto.randomBytes(32)))!
    }

    // MARK: Recovery code

    /// Crockford's base32 alphabet: no I, L, O or U, so what is read aloud or
    /// copied by hand is hard to get wrong (I and L read as 1, O as 0).
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

    /// The key and a 16-bit checksum (the first two bytes of its SHA-256) in
    /// Crockford base32, in groups of five separated by dashes: 55 characters
    /// in 11 groups. The checksum catches a mistyped or swapped character.
    public var recoveryCode: String {
        let payload = bytes + Array(Crypto.sha256(bytes).prefix(2))
        var characters: [UInt8] = []
        var buffer = 0
        var bits = 0
        for byte in payload {
            buffer = (buffer << 8) | Int(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                characters.append(Self.alphabet[(buffer >> bits) & 31])
            }
            buffer &= (1 << bits) - 1
        }
        if bits > 0 { characters.append(Self.alphabet[(buffer << (5 - bits)) & 31]) }
        var grouped: [UInt8] = []
        for (index, character) in characters.enumerated() {
            if index > 0 && index % 5 == 0 { grouped.append(UInt8(ascii: "-")) }
            grouped.append(character)
        }
        return String(decoding: grouped, as: UTF8.self)
    }

    /// Reads a recovery code as typed: any case, spaces and dashes anywhere,
    /// I and L for 1, O for 0.
    /// - Throws: ``RecoveryCodeError`` saying what is wrong (a character that
    ///   is not in the code's alphabet, a wrong length, a checksum that does
    ///   not match: a typo).
    public init(recoveryCode text: String) throws(RecoveryCodeError) {
        var values: [Int] = []
        for scalar in text.unicodeScalars {
            if scalar == " " || scalar == "-" || scalar == "\t" { continue }
            guard scalar.isASCII else {
                throw RecoveryCodeError(
                    message: "a recovery code holds letters and digits only; '\(scalar)' is not one")
            }
            var byte = UInt8(scalar.value)
            if byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") { byte -= 0x20 }
            switch byte {
            case UInt8(ascii: "I"), UInt8(ascii: "L"): byte = UInt8(ascii: "1")
            case UInt8(ascii: "O"): byte = UInt8(ascii: "0")
            default: break
            }
            guard let value = Self.alphabet.firstIndex(of: byte) else {
                throw RecoveryCodeError(message: "'\(scalar)' is not in a recovery code (it has no U)")
            }
            values.append(value)
        }
        guard values.count == 55 else {
            throw RecoveryCodeError(
                message: "a recovery code has 55 letters and digits (11 groups of 5); this one has \(values.count)")
        }
        var bytes: [UInt8] = []
        var buffer = 0
        var bits = 0
        for value in values {
            buffer = (buffer << 5) | value
            bits += 5
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8((buffer >> bits) & 0xFF))
                buffer &= (1 << bits) - 1
            }
        }
        // The last character's three spare bits are zero in every code: any
        // other last character is a typo too, not the same key.
        guard bytes.count == 34, buffer == 0,
            Array(Crypto.sha256(Array(bytes.prefix(32))).prefix(2)) == Array(bytes.suffix(2))
        else {
            throw RecoveryCodeError(message: "the recovery code's checksum does not match: a character was mistyped")
        }
        try self.init(bytes: Array(bytes.prefix(32)))
    }

    // MARK: Derived keys

    static let salt = Array("brsync end-to-end v1".utf8)

    /// The key values are sealed with (HKDF-SHA256, info "values").
    var valueKey: [UInt8] { Crypto.hkdfSHA256(key: bytes, salt: Self.salt, info: Array("values".utf8), length: 32) }
    /// The key record keys are hidden with (HKDF-SHA256, info "record keys").
    var nameKey: [UInt8] { Crypto.hkdfSHA256(key: bytes, salt: Self.salt, info: Array("record keys".utf8), length: 32) }
    /// A name for the key that reveals nothing of it (HKDF-SHA256, info
    /// "key id"): the replica remembers which key it synced with.
    public var id: String {
        Crypto.hex(Crypto.hkdfSHA256(key: bytes, salt: Self.salt, info: Array("key id".utf8), length: 8))
    }
    /// The key nonces are derived with (HKDF-SHA256, info "nonces").
    var nonceKey: [UInt8] { Crypto.hkdfSHA256(key: bytes, salt: Self.salt, info: Array("nonces".utf8), length: 32) }
    /// The Ed25519 key pair that proves a write comes from a holder of this
    /// key: its seed is HKDF-SHA256 with info "signing" (RFC 8032's private
    /// key), so every holder, the phone included, derives the same pair.
    public func signingKey() -> Crypto.SigningKey {
        Crypto.SigningKey(seed: Crypto.hkdfSHA256(key: bytes, salt: Self.salt, info: Array("signing".utf8), length: 32))
    }

    /// The signing public key in base64url, as the protocol names it.
    public var signingPublicKey: String { Crypto.base64URL(signingKey().publicKey) }

    /// A certificate, signed with this key, that `account` moves from this
    /// key to `next` (see ``KeyCertificate``).
    public func certify(_ next: AccountKey, account: String) -> KeyCertificate {
        let publicKey = next.signingPublicKey
        let statement = KeyCertificate.statement(account: account, from: id, to: next.id, publicKey: publicKey)
        return KeyCertificate(
            from: id, to: next.id, publicKey: publicKey, signature: Crypto.base64URL(signingKey().sign(statement)))
    }
}

public struct RecoveryCodeError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
