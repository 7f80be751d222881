import JSON
import SyncClient
import SyncCore
import Testing

/// Sealed format 2's box (docs/sealed-format-v2.md): one write of a record
/// sealed once, and what a hostile server could do with one, refused.
@Suite struct SealedBoxTests {
    static let stamp = HLCTimestamp(text: "000001a214472554-00000000-db22d30bcc46d6a9")!
    static let older = HLCTimestamp(text: "000001a214470000-00000003-db22d30bcc46d6a9")!

    /// A rule's write: its browser and priority, and its deletion flag,
    /// under one stamp; its pattern written earlier (in the manifest).
    static func write(key: String = "zoom.us") -> RecordCipher.Write {
        RecordCipher.Write(
            key: key, fields: ["browser": .string("chrome"), "priority": .int(3), "deleted": .bool(false)],
            manifest: RecordManifest(
                stamps: ["pattern": older, "browser": stamp, "priority": stamp, "deleted": stamp],
                versions: VersionVector(["db22d30bcc46d6a9": 2])))
    }

    /// The exact bytes of a box, from an independent implementation of the
    /// design's text (Tests/Scripts/sealed_box_vectors.py: Python's hashlib,
    /// hmac and `cryptography`): what a phone's code must produce too.
    @Test func aBoxHasTheBytesTheDesignGives() throws {
        let cipher = RecordCipher(try AccountKey(bytes: Array(0..<32)))
        let hidden = cipher.hiddenKey(collection: "rules", key: "zoom.us")
        #expect(hidden == "h1.GJdIHsPPzMUG5SU1SNQBrte1MW3NBxzgDovvkVSZdzg")
        let box = cipher.sealBox(Self.write(), collection: "rules", hiddenKey: hidden, stamp: Self.stamp)
        #expect(
            box
                == "e2.K386Pu5mt4gEf5eBeDuzfSuR7mOPbecCEho-Zgedn44QGdV19nixrNdZtJG6FUR44eGgjr7YBBbrABJJHjDYN3F_xvzjmwQ-fEicWlZJlqvxrStQBo4osnjKL8cmsIO3PGVKqa4FZnIUHzSKU72QxM4QooLKXbsnak-62eAf22tWgzE56IGvCbvFygkE0P6OxBTZHjMz15xE6xPtMutzX2yrQrCMKAbzR7Yg5Nii5ZNxTCea373jY9wEZClfMK8w6hLwP2sXYvrQddsHfRDbE3SoHchkD4ssmO5BQ0wN6WYhAj50NezNcLwCOMRmwOhz-ofd35P4bDw"
        )
        #expect(try cipher.openBox(box, collection: "rules", hiddenKey: hidden, stamp: Self.stamp) == Self.write())
        // Sealed twice, the same box: a retried push is the same push.
        #expect(cipher.sealBox(Self.write(), collection: "rules", hiddenKey: hidden, stamp: Self.stamp) == box)
    }

    /// A box opens only where it was sealed: moved to another record or
    /// stamp, changed by a byte, or opened with another key, it is refused
    /// by name; a format 1 value is not a box.
    @Test func aBoxOpensOnlyWhereItWasSealed() throws {
        let cipher = RecordCipher(AccountKey.generate())
        let hidden = cipher.hiddenKey(collection: "rules", key: "zoom.us")
        let box = cipher.sealBox(Self.write(), collection: "rules", hiddenKey: hidden, stamp: Self.stamp)
        var changed = Array(box.utf8)
        changed[40] = changed[40] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let attempts: [(String, String, String, HLCTimestamp, String)] = [
            (box, "rules", cipher.hiddenKey(collection: "rules", key: "github.com"), Self.stamp, "does not open"),
            (box, "browsers", hidden, Self.stamp, "does not open"),
            (box, "rules", hidden, Self.older, "does not open"),
            (String(decoding: changed, as: UTF8.self), "rules", hidden, Self.stamp, "does not open"),
            (
                cipher.seal(
                    #""chrome""#, collection: "rules", hiddenKey: hidden, field: "browser", stamp: "\(Self.stamp)"),
                "rules", hidden, Self.stamp, "not a box"
            ),
            ("e2.!!", "rules", hidden, Self.stamp, "not a box"),
        ]
        for (sealed, collection, hiddenKey, stamp, reason) in attempts {
            #expect {
                _ = try cipher.openBox(sealed, collection: collection, hiddenKey: hiddenKey, stamp: stamp)
            } throws: { "\($0)".contains(reason) }
        }
        let other = RecordCipher(AccountKey.generate())
        #expect(throws: RecordCipherError.self) {
            _ = try other.openBox(box, collection: "rules", hiddenKey: hidden, stamp: Self.stamp)
        }
    }

    /// What a key holder could seal but no brsync writes is refused on
    /// opening, each by name: a key that is not the record's, a field named
    /// like encryption's own, no field, a deletion flag that is not one; a
    /// manifest naming a box's own field again, or a stamp not below it.
    @Test func aBoxThatIsNotAWriteIsRefusedByName() throws {
        let cipher = RecordCipher(AccountKey.generate())
        let hidden = cipher.hiddenKey(collection: "rules", key: "zoom.us")
        var wrongKey = Self.write(key: "github.com")
        var ownField = Self.write()
        ownField.fields["e2e.key"] = .string("zoom.us")
        var noField = Self.write()
        noField.fields = [:]
        noField.manifest = nil
        var notAFlag = Self.write()
        notAFlag.fields["deleted"] = .string("yes")
        let cases: [(RecordCipher.Write, String)] = [
            (wrongKey, "not the key the record is filed under"),
            (ownField, "encryption's own"),
            (noField, "holds no field"),
            (notAFlag, "deletion flag is not true or false"),
        ]
        for (write, reason) in cases {
            let box = cipher.sealBox(write, collection: "rules", hiddenKey: hidden, stamp: Self.stamp)
            #expect {
                _ = try cipher.openBox(box, collection: "rules", hiddenKey: hidden, stamp: Self.stamp)
            } throws: { "\($0)".contains(reason) }
        }
        // A boxed manifest names only fields stamped below its box, never the box's own.
        for text in [
            #"{"f":{"pattern":"000001a214479999-00000000-db22d30bcc46d6a9"},"v":{}}"#,
            #"{"f":{"browser":"000001a214470000-00000003-db22d30bcc46d6a9"},"v":{}}"#,
            #"{"s":[],"v":{}}"#,
        ] {
            #expect(throws: Wire.Problem.self) {
                _ = try RecordManifest(boxed: try JSONValue.parse(text), at: Self.stamp, own: ["browser"])
            }
        }
        wrongKey.manifest = nil
        #expect(throws: RecordCipherError.self) {
            _ = try cipher.openBox(
                cipher.sealBox(wrongKey, collection: "rules", hiddenKey: hidden, stamp: Self.stamp),
                collection: "rules", hiddenKey: hidden, stamp: Self.stamp)
        }
    }

    /// A box is padded inside: browsers of different names, and patterns of
    /// different lengths within a class, seal to one size.
    @Test func aBoxsSizeNamesSizeClassesNotValues() throws {
        let cipher = RecordCipher(AccountKey.generate())
        var sizes: Set<Int> = []
        for (key, browser) in [("a.example", "zen"), ("mail.example", "tor-browser"), ("b.c", "librewolf")] {
            var write = Self.write(key: key)
            write.fields["browser"] = .string(browser)
            let hidden = cipher.hiddenKey(collection: "rules", key: key)
            sizes.insert(cipher.sealBox(write, collection: "rules", hiddenKey: hidden, stamp: Self.stamp).utf8.count)
        }
        #expect(sizes.count == 1, "\(sizes)")
    }
}
