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

    /// The same for text that needs escaping (docs/protocol.md, "Canonical
    /// JSON"): a quote, a backslash, a tab, a line feed, C0 and C1 controls,
    /// DEL, bidirectional controls, U+180E, U+FEFF and U+2028 in values; a non-ASCII key;
    /// non-ASCII names ordered by their bytes; an object value, its members
    /// ordered by their bytes (a name not in NFC too); a manifest naming fields that need escaping.
    @Test func aBoxOfTextThatNeedsEscapingHasTheBytesTheDesignGives() throws {
        let cipher = RecordCipher(try AccountKey(bytes: Array(0..<32)))
        let key = "b\u{fc}cher.example"
        let hidden = cipher.hiddenKey(collection: "rules", key: key)
        #expect(hidden == "h1.sERbNtG9lqEacVjEvfqB3TYIhouctpTBf1SqexYeE3E")
        let odd = "na\"me\u{e9}"
        let write = RecordCipher.Write(
            key: key,
            fields: [
                "browser": .string("fire\"fox\\\t\u{1}\u{7f}\u{200e}\u{2028}\u{e9}"),
                "origin": .string("a\nb\u{61c}\u{180e}\u{feff}"),
                "\u{e9}t\u{e9}": .int(1),
                "zone": .object([
                    "b": .array([.int(1), .string("\u{85}")]), "a": .null, "f": .int(0), "e\u{301}": .int(2),
                ]),
            ],
            manifest: RecordManifest(
                stamps: [
                    "pattern": Self.older, odd: Self.older, "browser": Self.stamp, "origin": Self.stamp,
                    "\u{e9}t\u{e9}": Self.stamp, "zone": Self.stamp,
                ],
                versions: VersionVector(["db22d30bcc46d6a9": 2, "0a0b0c0d0e0f1011": 1])))
        let box = cipher.sealBox(write, collection: "rules", hiddenKey: hidden, stamp: Self.stamp)
        #expect(
            box
                == "e2.TIhCHC7F7xWRy2lwWn7ZMm76IwSwxv10FAA1M7YpmWHB5kwmlaTj5zZuhMWHiXTVQzGFJdqAJFSbcdmSjEl6B8JPMK7_-ZVg_1utqoOtNtBhWfcPs_I9YyYQG3LFp0KpU5xFT5Omqxm7ySBzH2AY2DtjYkE5GAcjsYwYSEsLc67Bn3ywJPFqyNKnq7EfKupw7iMwTp35-uguxd1ZKCZccdaWvr4a40mZELJXjS6EOsJ3gl1Dm6_EDdteevMoLITrir8eGd_Q9FRY5XGNMQJZoeNphYJv9XWX8IFIfJjcZre26JkJ-z6Gg7CHpbO9HvCDtxAKLB4fi03cTlfpuJqGrmgM7NXsJUsFp_y02x5zvZhh-CMQ8gRy0BFlc6u8P0XW0qmZ6YxmokezOHOhn_rvNn1uyCyKTKJ231yFC3vemGw-72r5fN1lNux0YoYPmpVxgEz-tuIM43dvy3hW79LovNx99cE16KbqHzItJ1nEj3EGWLb4w9c4Yw9TYv4kpFc5EN0SpmwfuH7id77Wxh0F3PcbmtBRVj4nAIwIj7iLHdL3UHwrwK3jizQ4HkORU_4wHqDQ6vWW5VkKmtm47e6ksZg9xTzo4nGCbA"
        )
        #expect(try cipher.openBox(box, collection: "rules", hiddenKey: hidden, stamp: Self.stamp) == write)
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
