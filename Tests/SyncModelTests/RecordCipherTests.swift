import Net
import SyncClient
import Testing

/// The account key, its recovery code and the record cipher of end-to-end
/// encryption (issue 13): what a hostile server could try, refused.
@Suite struct RecordCipherTests {
    @Test func aRecoveryCodeReadsBackAsTheKeyHoweverItIsTyped() throws {
        let key = AccountKey.generate()
        let code = key.recoveryCode
        #expect(code.count == 55 + 10 && code.split(separator: "-").count == 11 && code.split(separator: "-").allSatisfy { $0.count == 5 })
        #expect(try AccountKey(recoveryCode: code) == key)
        #expect(try AccountKey(recoveryCode: code.lowercased().replacingOccurrences(of: "-", with: " ")) == key)
        // Read aloud or copied by hand: O for 0, I and L for 1.
        let misread = String(code.map { $0 == "0" ? "O" : $0 == "1" ? "l" : $0 })
        #expect(try AccountKey(recoveryCode: misread) == key)
    }

    @Test func aMistypedRecoveryCodeIsRefusedWithTheReason() throws {
        let code = AccountKey.generate().recoveryCode
        var characters = Array(code)
        // One character changed (not a look-alike): the checksum catches it.
        let index = characters.firstIndex { $0 != "-" }!
        characters[index] = characters[index] == "A" ? "B" : "A"
        let cases: [(String, String)] = [
            (String(characters), "checksum"),
            (String(code.dropLast(3)), "55 letters and digits"),
            (code + "Z", "55 letters and digits"),
            (code.replacingOccurrences(of: "-", with: "_"), "'_'"),
            ("U" + code.dropFirst(), "no U"),
            ("é" + code.dropFirst(), "letters and digits only"),
            ("", "55 letters and digits"),
        ]
        for (text, reason) in cases {
            #expect {
                _ = try AccountKey(recoveryCode: text)
            } throws: { String(describing: $0).contains(reason) }
        }
    }

    @Test func hiddenKeysAreStableAndTellNothing() throws {
        let key = AccountKey.generate()
        let cipher = RecordCipher(key)
        let hidden = cipher.hiddenKey(collection: "rules", key: "zoom.us")
        // The same pattern on two machines is one record.
        #expect(hidden == RecordCipher(try AccountKey(recoveryCode: key.recoveryCode)).hiddenKey(collection: "rules", key: "zoom.us"))
        #expect(hidden.hasPrefix("h1.") && !hidden.contains("zoom"))
        #expect(hidden != cipher.hiddenKey(collection: "browsers", key: "zoom.us"))
        #expect(hidden != RecordCipher(AccountKey.generate()).hiddenKey(collection: "rules", key: "zoom.us"))
        // No ambiguity between collection and key.
        #expect(cipher.hiddenKey(collection: "a", key: "bc") != cipher.hiddenKey(collection: "ab", key: "c"))
    }

    @Test func aSealedValueOpensOnlyWhereItWasSealed() throws {
        let key = AccountKey.generate()
        let cipher = RecordCipher(key)
        let hidden = cipher.hiddenKey(collection: "rules", key: "bank.example")
        let stamp = "0000018c2a5b3c00-00000001-laptop"
        let sealed = cipher.seal(#""firefox-private""#, collection: "rules", hiddenKey: hidden, field: "browser", stamp: stamp)
        #expect(sealed.hasPrefix("e1.") && !sealed.contains("firefox"))
        #expect(try cipher.open(sealed, collection: "rules", hiddenKey: hidden, field: "browser", stamp: stamp) == #""firefox-private""#)
        let other = cipher.hiddenKey(collection: "rules", key: "other.example")
        var flipped = Array(sealed.utf8)
        flipped[10] = flipped[10] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let attempts: [(RecordCipher, String, String, String, String)] = [
            (RecordCipher(AccountKey.generate()), sealed, hidden, "browser", stamp),        // a wrong key
            (cipher, sealed, other, "browser", stamp),                                       // moved to another record
            (cipher, sealed, hidden, "priority", stamp),                                     // to another field
            (cipher, sealed, hidden, "browser", "0000018c2a5b3c01-00000000-laptop"),         // replayed under a newer stamp
            (cipher, String(decoding: flipped, as: UTF8.self), hidden, "browser", stamp),    // a byte changed
            (cipher, #""firefox""#, hidden, "browser", stamp),                               // plaintext in an encrypted account
            (cipher, "e1.!!", hidden, "browser", stamp),
            (cipher, "e1.AAAA", hidden, "browser", stamp),
        ]
        for (cipher, value, hiddenKey, field, stamp) in attempts {
            #expect {
                _ = try cipher.open(value, collection: "rules", hiddenKey: hiddenKey, field: field, stamp: stamp)
            } throws: { error in
                let text = String(describing: error)
                return text.contains("field \"\(field)\"") && text.contains(hiddenKey)
            }
        }
    }

    @Test func base64URLReadsOnlyWhatItWrites() {
        for count in 0..<40 {
            let bytes = Crypto.randomBytes(count)
            #expect(Crypto.base64URLDecode(Crypto.base64URL(bytes)) == bytes)
        }
        for bad in ["A", "AB==", "AB+/", "AB C", "AB\n", "AR"] { // "AR": stray bits in the last character
            #expect(Crypto.base64URLDecode(bad) == nil, "\(bad)")
        }
    }
}
