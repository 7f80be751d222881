import COpenSSL

/// The few primitives the server needs, from OpenSSL's libcrypto.
public enum Crypto {
    /// `count` bytes from OpenSSL's CSPRNG.
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        // RAND_bytes fails only when the CSPRNG cannot be seeded; nothing safe can go on then.
        precondition(RAND_bytes(&bytes, Int32(count)) == 1, "OpenSSL's random generator failed")
        return bytes
    }

    /// SHA-256 of `bytes`.
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        precondition(EVP_Digest(bytes, bytes.count, &digest, &length, EVP_sha256(), nil) == 1, "SHA-256 failed")
        return digest
    }

    /// Equality in time independent of where the bytes differ.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return CRYPTO_memcmp(a, b, a.count) == 0
    }

    /// Base64url without padding (RFC 4648 §5).
    private static let base64URLAlphabet = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Each byte's value as a base64url digit, 255 for bytes that are not one.
    private static let base64URLDigits: [UInt8] = {
        var digits = [UInt8](repeating: 255, count: 256)
        for (value, byte) in base64URLAlphabet.enumerated() { digits[Int(byte)] = UInt8(value) }
        return digits
    }()

    /// A new secret token: `prefix` and the base64url of 32 random bytes
    /// (256 bits). The one maker of device tokens and join secrets, on the
    /// server and on a joining machine alike.
    public static func token(prefix: String) -> String {
        prefix + base64URL(randomBytes(32))
    }

    public static func base64URL(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        base64URL(bytes, into: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// `prefix` (ASCII) and the unpadded base64url of `bytes`, written
    /// straight into the string's storage.
    public static func base64URLString(prefix: [UInt8], _ bytes: UnsafeBufferPointer<UInt8>) -> String {
        let count = prefix.count + base64URLLength(bytes.count)
        return String(unsafeUninitializedCapacity: count) { output in
            _ = output.initialize(from: prefix)
            encodeBase64URL(bytes, into: UnsafeMutableBufferPointer(rebasing: output[prefix.count...]))
            return count
        }
    }

    /// Appends the unpadded base64url of `bytes` to `output`.
    public static func base64URL(_ bytes: [UInt8], into output: inout [UInt8]) {
        let start = output.count
        output.append(contentsOf: repeatElement(0, count: base64URLLength(bytes.count)))
        bytes.withUnsafeBufferPointer { bytes in
            output.withUnsafeMutableBufferPointer { output in
                encodeBase64URL(bytes, into: UnsafeMutableBufferPointer(rebasing: output[start...]))
            }
        }
    }

    /// Characters of the unpadded base64url of `count` bytes.
    private static func base64URLLength(_ count: Int) -> Int { (count * 4 + 2) / 3 }

    /// Writes the unpadded base64url of `bytes` to `output`, which holds
    /// ``base64URLLength(_:)`` bytes.
    private static func encodeBase64URL(
        _ bytes: UnsafeBufferPointer<UInt8>, into output: UnsafeMutableBufferPointer<UInt8>
    ) {
        base64URLAlphabet.withUnsafeBufferPointer { alphabet in
            var out = 0
            var index = 0
            while index + 3 <= bytes.count {
                let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
                output[out] = alphabet[Int(value >> 18 & 63)]
                output[out + 1] = alphabet[Int(value >> 12 & 63)]
                output[out + 2] = alphabet[Int(value >> 6 & 63)]
                output[out + 3] = alphabet[Int(value & 63)]
                out += 4
                index += 3
            }
            let rest = bytes.count - index
            if rest > 0 {
                let value = UInt32(bytes[index]) << 16 | (rest == 2 ? UInt32(bytes[index + 1]) << 8 : 0)
                output[out] = alphabet[Int(value >> 18 & 63)]
                output[out + 1] = alphabet[Int(value >> 12 & 63)]
                if rest == 2 { output[out + 2] = alphabet[Int(value >> 6 & 63)] }
            }
        }
    }

    /// The bytes of unpadded base64url text, or nil for anything else
    /// (padding, other characters, a length no encoding has, stray bits in
    /// the last character: each value has exactly one spelling).
    public static func base64URLDecode(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { base64URLDecode(utf8: $0) }
    }

    /// As ``base64URLDecode(_:)``, from the text's UTF-8 (a part of a longer text).
    public static func base64URLDecode(utf8 text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        let count = text.count
        guard count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(count * 3 / 4)
        var value: UInt32 = 0
        var held = 0
        let digits = base64URLDigits
        for byte in text {
            let digit = digits[Int(byte)]
            guard digit < 64 else { return nil }
            value = value << 6 | UInt32(digit)
            held += 1
            if held == 4 {
                output.append(UInt8(value >> 16 & 255))
                output.append(UInt8(value >> 8 & 255))
                output.append(UInt8(value & 255))
                value = 0
                held = 0
            }
        }
        switch held {
        case 2:
            guard value & 15 == 0 else { return nil }
            output.append(UInt8(value >> 4 & 255))
        case 3:
            guard value & 3 == 0 else { return nil }
            output.append(UInt8(value >> 10 & 255))
            output.append(UInt8(value >> 2 & 255))
        default: break
        }
        return output
    }

    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count * 2)
        for byte in bytes { output += [digits[Int(byte >> 4)], digits[Int(byte & 15)]] }
        return String(decoding: output, as: UTF8.self)
    }
}
