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
    private static let base64URLAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    public static func base64URL(_ bytes: [UInt8]) -> String {
        let alphabet = base64URLAlphabet
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= bytes.count {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            output.append(alphabet[Int(value >> 18 & 63)])
            output.append(alphabet[Int(value >> 12 & 63)])
            output.append(alphabet[Int(value >> 6 & 63)])
            output.append(alphabet[Int(value & 63)])
            index += 3
        }
        let rest = bytes.count - index
        if rest == 1 {
            let value = UInt32(bytes[index]) << 16
            output += [alphabet[Int(value >> 18 & 63)], alphabet[Int(value >> 12 & 63)]]
        } else if rest == 2 {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            output += [alphabet[Int(value >> 18 & 63)], alphabet[Int(value >> 12 & 63)], alphabet[Int(value >> 6 & 63)]]
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes of unpadded base64url text, or nil for anything else
    /// (padding, other characters, a length no encoding has, stray bits in
    /// the last character: each value has exactly one spelling).
    public static func base64URLDecode(_ text: String) -> [UInt8]? {
        var values: [UInt32] = []
        values.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): values.append(UInt32(byte - UInt8(ascii: "A")))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): values.append(UInt32(byte - UInt8(ascii: "a")) + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): values.append(UInt32(byte - UInt8(ascii: "0")) + 52)
            case UInt8(ascii: "-"): values.append(62)
            case UInt8(ascii: "_"): values.append(63)
            default: return nil
            }
        }
        guard values.count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(values.count * 3 / 4)
        var index = 0
        while index + 4 <= values.count {
            let value = values[index] << 18 | values[index + 1] << 12 | values[index + 2] << 6 | values[index + 3]
            // One byte at a time: a literal array here would be allocated per group.
            output.append(UInt8(value >> 16 & 255))
            output.append(UInt8(value >> 8 & 255))
            output.append(UInt8(value & 255))
            index += 4
        }
        switch values.count - index {
        case 2:
            guard values[index + 1] & 15 == 0 else { return nil }
            output.append(UInt8((values[index] << 2 | values[index + 1] >> 4) & 255))
        case 3:
            guard values[index + 2] & 3 == 0 else { return nil }
            let value = values[index] << 10 | values[index + 1] << 4 | values[index + 2] >> 2
            output += [UInt8(value >> 8 & 255), UInt8(value & 255)]
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
