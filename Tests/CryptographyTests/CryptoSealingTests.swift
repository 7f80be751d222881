import Cryptography
import Testing

/// The primitives of end-to-end encryption against their standards'
/// own test vectors: RFC 4231 (HMAC-SHA256), RFC 5869 (HKDF-SHA256) and the
/// GCM specification's AES-256 test cases 13, 14 and 16.
@Suite struct CryptoSealingTests {
    static func bytes(_ hex: String) -> [UInt8] {
        var output: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            output.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return output
    }

    @Test func hmacMatchesRFC4231() {
        #expect(
            Crypto.hex(Crypto.hmacSHA256(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8)))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        // Test case 6: a key longer than the block is hashed first.
        #expect(
            Crypto.hex(
                Crypto.hmacSHA256(
                    key: [UInt8](repeating: 0xaa, count: 131),
                    Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)))
                == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test func hkdfMatchesRFC5869() {
        let okm = Crypto.hkdfSHA256(
            key: [UInt8](repeating: 0x0b, count: 22), salt: Array(0x00...0x0c), info: Array(0xf0...0xf9), length: 42)
        #expect(
            Crypto.hex(okm) == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
        // Test case 3: no salt, no info.
        let noSalt = Crypto.hkdfSHA256(key: [UInt8](repeating: 0x0b, count: 22), salt: [], info: [], length: 42)
        #expect(
            Crypto.hex(noSalt) == "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"
        )
    }

    @Test func aesGCMMatchesTheSpecification() throws {
        let zeroKey = [UInt8](repeating: 0, count: 32)
        let zeroNonce = [UInt8](repeating: 0, count: 12)
        // Test case 13: nothing to encrypt, the tag alone.
        let empty = Crypto.seal([], key: zeroKey, nonce: zeroNonce)
        #expect(empty.ciphertext.isEmpty && Crypto.hex(empty.tag) == "530f8afbc74536b9a963b4f1c4cb738b")
        // Test case 14: one block of zeros.
        let block = Crypto.seal([UInt8](repeating: 0, count: 16), key: zeroKey, nonce: zeroNonce)
        #expect(
            Crypto.hex(block.ciphertext) == "cea7403d4d606b6e074ec5d3baf39d18"
                && Crypto.hex(block.tag) == "d0d1c8a799996bf0265b98b5d48ab919")
        // Test case 16: 60 bytes with 20 bytes of authenticated data.
        let key = Self.bytes("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")
        let nonce = Self.bytes("cafebabefacedbaddecaf888")
        let plaintext = Self.bytes(
            "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
        )
        let authenticated = Self.bytes("feedfacedeadbeeffeedfacedeadbeefabaddad2")
        let sealed = Crypto.seal(plaintext, key: key, authenticated: authenticated, nonce: nonce)
        #expect(
            Crypto.hex(sealed.ciphertext)
                == "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662"
        )
        #expect(Crypto.hex(sealed.tag) == "76fc6ece0f4e1768cddf8853bb2d551b")
        #expect(try Crypto.open(sealed, key: key, authenticated: authenticated) == plaintext)
        #expect(
            try Crypto.open(try Crypto.SealedBox(combined: sealed.combined), key: key, authenticated: authenticated)
                == plaintext)
    }

    /// Whatever changes, a sealed value does not open: the key, the bound
    /// data (another record, field or stamp), one flipped bit anywhere.
    @Test func anythingChangedDoesNotOpen() throws {
        let key = Crypto.randomBytes(32)
        let sealed = Crypto.seal(
            Array("zoom.us -> firefox".utf8), key: key, authenticated: Array("rules|k1|browser|stamp".utf8))
        var attempts: [(Crypto.SealedBox, [UInt8], [UInt8])] = [
            (sealed, Crypto.randomBytes(32), Array("rules|k1|browser|stamp".utf8)),
            (sealed, key, Array("rules|k2|browser|stamp".utf8)),
            (sealed, key, []),
        ]
        let combined = sealed.combined
        for index in [0, 11, 12, combined.count - 17, combined.count - 1] {
            var flipped = combined
            flipped[index] ^= 0x01
            attempts.append((try Crypto.SealedBox(combined: flipped), key, Array("rules|k1|browser|stamp".utf8)))
        }
        for (box, key, authenticated) in attempts {
            #expect(throws: Crypto.SealingError.self) { try Crypto.open(box, key: key, authenticated: authenticated) }
        }
        #expect(throws: Crypto.SealingError.self) { try Crypto.SealedBox(combined: Array(combined.prefix(27))) }
        // Two seals of the same value differ (random nonces).
        #expect(Crypto.seal([1, 2, 3], key: key).combined != Crypto.seal([1, 2, 3], key: key).combined)
    }

    /// A key prepared once gives what a fresh one gives, message after
    /// message, and a value that fails to open (a flipped byte, the wrong
    /// authenticated data) leaves it working for the next.
    @Test func preparedKeysGiveTheOneShotResultsAgainAndAgain() throws {
        let key = Crypto.randomBytes(32)
        let mac = Crypto.HMACKey(key)
        let messages: [[UInt8]] = [[], Array("rules".utf8), Crypto.randomBytes(200), [UInt8](repeating: 7, count: 64)]
        for message in messages + messages.reversed() {
            #expect(mac.code(message) == Crypto.hmacSHA256(key: key, message))
        }
        let cipher = Crypto.GCMKey(key)
        var sealed: [([UInt8], [UInt8], [UInt8])] = []
        for (index, message) in messages.enumerated() {
            let nonce = Crypto.randomBytes(12)
            let authenticated = Array("field \(index)".utf8)
            let combined = cipher.seal(message, authenticated: authenticated, nonce: nonce)
            #expect(combined == Crypto.seal(message, key: key, authenticated: authenticated, nonce: nonce).combined)
            sealed.append((combined, authenticated, message))
        }
        for (combined, authenticated, message) in sealed.reversed() {
            var flipped = combined
            flipped[flipped.count / 2] ^= 0x80
            #expect(throws: Crypto.SealingError.self) { try cipher.open(flipped, authenticated: authenticated) }
            #expect(throws: Crypto.SealingError.self) { try cipher.open(combined, authenticated: authenticated + [0]) }
            #expect(try cipher.open(combined, authenticated: authenticated) == message)
        }
        #expect(throws: Crypto.SealingError.self) { try cipher.open(Array(sealed[0].0.prefix(27)), authenticated: []) }
    }
}
