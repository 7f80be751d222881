import Cryptography
import JSON
import Model
import Net
import SyncClient
import SyncCore
import Testing

/// The account key, its recovery code and the record cipher of end-to-end
/// encryption: what a hostile server could try, refused.
@Suite struct RecordCipherTests {
    @Test func aRecoveryCodeReadsBackAsTheKeyHoweverItIsTyped() throws {
        let key = AccountKey.generate()
        let code = key.recoveryCode
        #expect(
            code.count == 55 + 10 && code.split(separator: "-").count == 11
                && code.split(separator: "-").allSatisfy { $0.count == 5 })
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

    /// Every other last character is refused too (its spare bits are
    /// zero in every code), so no two codes read as one key.
    @Test func everyOtherLastCharacterIsATypo() throws {
        let code = AccountKey.generate().recoveryCode
        for character in "0123456789ABCDEFGHJKMNPQRSTVWXYZ" where character != code.last {
            #expect(throws: RecoveryCodeError.self) {
                try AccountKey(recoveryCode: String(code.dropLast()) + String(character))
            }
        }
    }

    @Test func hiddenKeysAreStableAndTellNothing() throws {
        let key = AccountKey.generate()
        let cipher = RecordCipher(key)
        let hidden = cipher.hiddenKey(collection: "rules", key: "zoom.us")
        // The same pattern on two machines is one record.
        #expect(
            hidden
                == RecordCipher(try AccountKey(recoveryCode: key.recoveryCode)).hiddenKey(
                    collection: "rules", key: "zoom.us"))
        #expect(hidden.hasPrefix("h1.") && !hidden.contains("zoom"))
        #expect(hidden != cipher.hiddenKey(collection: "browsers", key: "zoom.us"))
        #expect(hidden != RecordCipher(AccountKey.generate()).hiddenKey(collection: "rules", key: "zoom.us"))
        // No ambiguity between collection and key.
        #expect(cipher.hiddenKey(collection: "a", key: "bc") != cipher.hiddenKey(collection: "ab", key: "c"))
    }

    /// A ledger names a record by its tag: the first 8 bytes of the HMAC
    /// its hidden key carries, so a machine finds it from the key alone.
    @Test func aRecordsTagIsItsHiddenKeysFirstEightBytes() throws {
        let cipher = RecordCipher(AccountKey.generate())
        for key in ["zoom.us", "github.com", "*.example.org"] {
            let hidden = cipher.hiddenKey(collection: "rules", key: key)
            let bytes = try #require(Crypto.base64URLDecode(String(hidden.dropFirst(3))))
            #expect(cipher.tag(collection: "rules", key: key) == bytes.prefix(8).reduce(0) { $0 << 8 | UInt64($1) })
        }
    }

    /// The head's hash of its shards, as docs/protocol.md describes it: the
    /// expected value was computed independently (Python's struct and hashlib).
    @Test func theShardsHashIsAsDescribed() {
        let shard = Ledger.Shard(
            index: 1, shardCount: 2,
            entries: [
                .init(
                    tag: 0x8123_4567_89AB_CDEF,
                    groups: [.init(known: 1, stamp: .init(wallMillis: 1_790_000_000_000, counter: 4))])
            ])
        #expect(Crypto.hex(shard.bytes) == "530101000200018123456789abcdef0001000001a0c4506c0000000004")
        let held = LedgerCheck.Held(
            shard, stamp: HLCTimestamp(wallMillis: 1_790_000_000_001, counter: 0, device: "laptop"))
        #expect(Ledger.shardsHash([(index: 1, shard: held)]) == 0x43EC_6D23_8A44_ADB0)
    }

    /// A ledger record keeps its readable key and seals its packed bytes as
    /// bytes, bound to its key, field and stamp: it opens to the same bytes,
    /// and a server that moves, re-stamps or rewrites it is caught.
    @Test func aLedgerRecordIsSealedAsBytesUnderItsReadableKey() throws {
        let cipher = RecordCipher(AccountKey.generate())
        let stamp = HLCTimestamp(wallMillis: 1_790_000_000_000, counter: 1, device: "laptop")
        // Bytes ending in spaces: nothing is taken for padding.
        let bytes: [UInt8] = Ledger.Head(newest: nil, folded: nil, shardCount: 1, entryCount: 0, shardsHash: 0x20).bytes
        #expect(bytes.last == 0x20)
        let change = ChangeRecord(
            sequence: 3, collection: .ledger, key: "laptop/head",
            state: RecordState(
                fields: ["ledger": StampedValue(.string(Crypto.base64URL(bytes)), stamp: stamp)],
                versions: VersionVector(["laptop": 3])))
        let sealed = try cipher.seal(change)
        #expect(sealed.key == "laptop/head" && Wire.sealedProblem(sealed) == nil)
        #expect(sealed.state.fields["ledger"]?.value.stringValue?.hasPrefix("e1.") == true)
        #expect(sealed.state.fields.count == 1, "no deletion flag, sealed key or manifest")
        let opened = try cipher.open(sealed)
        #expect(opened.state == change.state && opened.key == change.key)

        var moved = sealed
        moved.key = "laptop/0"
        #expect(throws: RecordCipherError.self) { try cipher.open(moved) }
        var restamped = sealed
        restamped.state.fields["ledger"]?.stamp = HLCTimestamp(
            wallMillis: 1_790_000_000_001, counter: 1, device: "laptop")
        #expect(throws: RecordCipherError.self) { try cipher.open(restamped) }
        #expect(throws: RecordCipherError.self) { try RecordCipher(AccountKey.generate()).open(sealed) }
        var readable = sealed
        readable.state.fields["ledger"]?.value = .string("readable")
        #expect(throws: RecordCipherError.self) { try cipher.open(readable) }
        var extra = change
        extra.state.fields["note"] = StampedValue(.string("x"), stamp: stamp)
        #expect(throws: RecordCipherError.self) { try cipher.seal(extra) }
        var deleted = change
        deleted.state.fields["deleted"] = StampedValue(.bool(true), stamp: stamp)
        #expect(throws: RecordCipherError.self) { try cipher.seal(deleted) }
        var forged = sealed
        forged.state.fields["deleted"] = StampedValue(.bool(true), stamp: stamp)
        #expect(throws: RecordCipherError.self, "a server's deletion of a ledger record is refused") {
            try cipher.open(forged)
        }
    }

    /// The signing key pair is derived from the account key alone (HKDF
    /// info "signing", then RFC 8032): the same on every holder. The
    /// expected values were computed independently (Python's hmac and
    /// hashlib for HKDF, the `cryptography` package for Ed25519).
    @Test func theSigningKeyIsDerivedFromTheAccountKey() throws {
        let key = try AccountKey(bytes: Array(0..<32))
        let signing = key.signingKey()
        #expect(Crypto.hex(signing.publicKey) == "b288a54cadd581e3883d0d2ee19a774e1f6f3bbdf59574111624b815f44b7ee5")
        #expect(
            Crypto.hex(signing.sign(Array("brsync".utf8)))
                == "5c6d0bcec444856ce04140537bd7b98b1c9e65ef8088d187e2b2bbe74494041e160a98e99879f53a5b88a0e74d251f2e1210c6edb56588b64a777c286e9dbc00"
        )
        #expect(try AccountKey(recoveryCode: key.recoveryCode).signingKey().publicKey == signing.publicKey)
        #expect(AccountKey.generate().signingKey().publicKey != signing.publicKey)
    }

    @Test func aSealedValueOpensOnlyWhereItWasSealed() throws {
        let key = AccountKey.generate()
        let cipher = RecordCipher(key)
        let hidden = cipher.hiddenKey(collection: "rules", key: "bank.example")
        let stamp = "0000018c2a5b3c00-00000001-laptop"
        let sealed = cipher.seal(
            #""firefox-private""#, collection: "rules", hiddenKey: hidden, field: "browser", stamp: stamp)
        #expect(sealed.hasPrefix("e1.") && !sealed.contains("firefox"))
        #expect(
            try cipher.open(sealed, collection: "rules", hiddenKey: hidden, field: "browser", stamp: stamp)
                == #""firefox-private""#)
        let other = cipher.hiddenKey(collection: "rules", key: "other.example")
        var flipped = Array(sealed.utf8)
        flipped[10] = flipped[10] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let attempts: [(RecordCipher, String, String, String, String)] = [
            (RecordCipher(AccountKey.generate()), sealed, hidden, "browser", stamp), // a wrong key
            (cipher, sealed, other, "browser", stamp), // moved to another record
            (cipher, sealed, hidden, "priority", stamp), // to another field
            (cipher, sealed, hidden, "browser", "0000018c2a5b3c01-00000000-laptop"), // replayed under a newer stamp
            (cipher, String(decoding: flipped, as: UTF8.self), hidden, "browser", stamp), // a byte changed
            (cipher, #""firefox""#, hidden, "browser", stamp), // plaintext in an encrypted account
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

    static func stamp(_ millis: Int64, _ device: String = "laptop") -> HLCTimestamp {
        HLCTimestamp(wallMillis: 1_790_000_000_000 + millis, counter: 0, device: device)
    }

    static func rule(_ pattern: String, _ browser: String, at millis: Int64, sequence: Int64 = 1) -> ChangeRecord {
        ChangeRecord(
            sequence: sequence, collection: .rules, key: pattern,
            state: RecordState(
                fields: [
                    "browser": StampedValue(.string(browser), stamp: stamp(millis)),
                    "priority": StampedValue(.int(3), stamp: stamp(millis)),
                ],
                versions: VersionVector(["laptop": UInt64(sequence)])))
    }

    /// A whole change sealed and opened: the server sees neither the pattern
    /// nor the browser; stamps, versions and the change number stay readable;
    /// sealing twice gives the same bytes (a retried push is the same push).
    @Test func aSealedChangeOpensToItselfAndShowsNothing() throws {
        let cipher = RecordCipher(AccountKey.generate())
        let tombstone = ChangeRecord(
            sequence: 2, collection: .rules, key: "bank.example",
            state: RecordState(
                fields: ["deleted": StampedValue(.bool(true), stamp: Self.stamp(9))],
                versions: VersionVector(["laptop": 2])))
        var wide: [String: StampedValue] = [:]
        for index in 0..<60 {
            wide["f\(index)"] = StampedValue(
                .object(["n": .int(Int64(index)), "s": .string("secret-\(index)")]), stamp: Self.stamp(Int64(index)))
        }
        let settings = ChangeRecord(
            sequence: 3, collection: .settings, key: "wide",
            state: RecordState(fields: wide, versions: VersionVector(["laptop": 3])))
        for change in [Self.rule("health-clinic.example", "firefox-private", at: 5), tombstone, settings] {
            let sealed = try cipher.seal(change)
            let text = String(decoding: sealed.jsonBytes, as: UTF8.self)
            for secret in ["health-clinic", "firefox-private", "bank.example", "secret-", "wide"] {
                #expect(!text.contains(secret), "\(secret) in \(text.prefix(200))")
            }
            #expect(sealed.sequence == change.sequence && sealed.state.versions == change.state.versions)
            #expect(Set(sealed.state.fields.values.map(\.stamp)) == Set(change.state.fields.values.map(\.stamp)))
            #expect(try cipher.seal(change) == sealed, "deterministic")
            #expect(try cipher.open(sealed) == change)
            // Through the wire and back.
            #expect(try cipher.open(try Wire.read(text, ChangeRecord.init(reading:))) == change)
        }
        #expect(
            try cipher.seal(tombstone).state.isDeleted, "the server still sees a tombstone (it keeps and purges them)")
        // Every sealed change has the form the server of an encrypted account takes.
        for change in [Self.rule("a.example", "b", at: 1), tombstone, settings] {
            #expect(Wire.sealedProblem(try cipher.seal(change)) == nil)
        }
    }

    /// The exact bytes of a sealed change, computed by an independent
    /// implementation of Deploy/SECURITY.md (Python's `cryptography`, HKDF,
    /// HMAC and AES-GCM; each value's text padded with spaces to its size class;
    /// the manifest is not padded):
    /// what the phone's CryptoKit code must produce too.
    @Test func aSealedChangeHasTheBytesTheSpecificationGives() throws {
        let cipher = RecordCipher(try AccountKey(bytes: Array(0..<32)))
        let stamp = try #require(HLCTimestamp(text: "000001a214472554-00000000-db22d30bcc46d6a9"))
        let change = ChangeRecord(
            sequence: 1, collection: .rules, key: "zoom.us",
            state: RecordState(
                fields: [
                    "browser": StampedValue(.string("chrome"), stamp: stamp),
                    "priority": StampedValue(.int(3), stamp: stamp),
                    "deleted": StampedValue(.bool(false), stamp: stamp),
                ],
                versions: VersionVector(["db22d30bcc46d6a9": 1])))
        let sealed = try cipher.seal(change)
        #expect(sealed.key == "h1.GJdIHsPPzMUG5SU1SNQBrte1MW3NBxzgDovvkVSZdzg")
        let expected: [String: JSONValue] = [
            // padded to 32
            "browser": .string("e1.vQ0_7sWAb5yj9rtn2kidGK-BNvijKKy_NRgUkPj8MhNPDuTDXRQ2nfsjWLuizomKJthclLVhdUvRaOgA"),
            "priority": .string("e1.FmXdJbt4cPfSGVldq5eENXGw1h0ItI6T-YfB0TYMlGhJFSPVl6Yjh_ogIOA"),
            "deleted": .bool(false),
            "e2e.deleted": .string("e1.BZ0grid1QNqdw8_8jrE3HWQaaLJi9rfN-dngcKpWjmPRPS6krNGq6azQBGY"),
            "e2e.key": .string("e1.O08-NXXCApfDn7xAVmYNI0aHp0AO24Rm5H2dAEznHUJ5T4Fp07HQWJiTdO0"),
            // {"s":["browser","deleted","priority"],"v":{"db22d30bcc46d6a9":1}}, not padded
            "e2e.manifest": .string(
                "e1.5J5DqB0a4clvgoJ_UrmxSgepPMA-2ZPLB12Od_ztfHd9NQ7U6nK70dQnJQ6xa2zbE0dahEzcRbJfEBFiSxlVi3gL7QVbbhuuzAO8EuFuoyfXd83iC9k2BVU4whtl"
            ),
        ]
        #expect(sealed.state.fields.mapValues(\.value) == expected)
        #expect(sealed.state.fields.values.allSatisfy { $0.stamp == stamp })
        #expect(try cipher.open(sealed) == change)
    }

    /// Sealed values come in size classes: a browser id, a pattern or a
    /// number of any length up to 16 bytes seals to the same size, and so on
    /// up the classes; what is opened is the value, not its padding. A value
    /// sealed without padding (an older machine's) opens too.
    @Test func sealedSizesNameASizeClassNotAValue() throws {
        #expect(
            [0, 1, 16, 17, 32, 33, 64, 65, 200, 512, 513, 1024, 1025, 5000].map { RecordCipher.paddedLength($0) }
                == [16, 16, 16, 32, 32, 64, 64, 128, 256, 512, 1024, 1024, 2048, 5120])
        #expect(RecordCipher.paddedLength(RecordCipher.maxPaddedLength + 1) == RecordCipher.maxPaddedLength + 1)
        let cipher = RecordCipher(AccountKey.generate())
        let hidden = cipher.hiddenKey(collection: "rules", key: "a.example")
        let stamp = "0000018c2a5b3c00-00000001-laptop"
        let sizes = Set(
            ["zen", "edge", "tor-browser", "librewolf"].map {
                cipher.seal(
                    JSONValue.string($0).jsonText, collection: "rules", hiddenKey: hidden, field: "browser",
                    stamp: stamp
                ).utf8.count
            })
        #expect(sizes.count == 1, "\(sizes)")
        for text in [#""tor-browser""#, "3", #"{"a":[1,2]}"#, #""trailing space ""#] {
            let sealed = cipher.seal(text, collection: "rules", hiddenKey: hidden, field: "browser", stamp: stamp)
            #expect(
                try cipher.open(sealed, collection: "rules", hiddenKey: hidden, field: "browser", stamp: stamp) == text)
        }
        // The largest value still seals within the wire's limit.
        let largest = JSONValue.string(String(repeating: "\u{1}", count: Wire.maxValueBytes)).jsonText
        #expect(
            cipher.seal(largest, collection: "rules", hiddenKey: hidden, field: "browser", stamp: stamp).utf8.count
                <= Wire.maxSealedValueBytes)
        // Two keys of different lengths hide in one size class too.
        let keys = ["a.b", "mail.example"].map {
            try? cipher.seal(
                ChangeRecord(
                    sequence: 1, collection: .rules, key: $0,
                    state: RecordState(
                        fields: ["browser": StampedValue(.string("x"), stamp: HLCTimestamp(text: stamp)!)]))
            ).state.fields[RecordCipher.keyField]?.value
        }
        #expect(
            keys.compactMap { $0?.stringValue?.utf8.count }.count == 2
                && Set(keys.compactMap { $0?.stringValue?.utf8.count }).count == 1)
        // Which browser a rule opens, or which catalog browser a browser
        // record is, shows in no size: every catalog id seals to one size as
        // a rule's browser, and every catalog browser's record has the same
        // sizes, field by field.
        let at = HLCTimestamp(text: stamp)!
        let ruleSizes = Set(
            BrowserCatalog.entries.map { entry in
                try? cipher.seal(
                    ChangeRecord(
                        sequence: 1, collection: .rules, key: "a.example",
                        state: RecordState(
                            fields: ["browser": StampedValue(.string(entry.id), stamp: at)]))
                ).state.fields["browser"]?.value.stringValue?.utf8.count
            })
        #expect(ruleSizes.count == 1, "\(ruleSizes)")
        let settingSizes = Set(
            BrowserCatalog.entries.map { entry in
                try? cipher.seal(
                    ChangeRecord(
                        sequence: 1, collection: .settings, key: "default_browser",
                        state: RecordState(
                            fields: ["value": StampedValue(.string(entry.id), stamp: at)]))
                ).state.fields["value"]?.value.stringValue?.utf8.count
            })
        #expect(settingSizes.count == 1, "the default browser setting: \(settingSizes)")
        let browserSizes = Set(
            BrowserCatalog.entries.map { entry -> [String: Int] in
                let browser = entry.browser
                let fields: [String: StampedValue] = [
                    "name": StampedValue(.string(browser.name), stamp: at),
                    "urlScheme": StampedValue(.string(browser.urlScheme), stamp: at),
                    "urlFormat": StampedValue(.string(browser.urlFormat), stamp: at),
                    "enabled": StampedValue(.bool(true), stamp: at), "deleted": StampedValue(.bool(false), stamp: at),
                ]
                let sealed =
                    (try? cipher.seal(
                        ChangeRecord(
                            sequence: 1, collection: .browsers, key: entry.id, state: RecordState(fields: fields))))?
                    .state.fields ?? [:]
                return sealed.filter { $0.key != RecordCipher.manifestField }.mapValues {
                    $0.value.stringValue?.utf8.count ?? 0
                }
            })
        #expect(browserSizes.count == 1, "\(browserSizes)")
    }

    /// A change whose fields all left it (re-stamped after they were
    /// overwritten) keeps its number: sealed, it is its hidden key alone,
    /// which the server takes and no client needs to open.
    @Test func aChangeWithNoFieldSealsToItsHiddenKeyAlone() throws {
        let cipher = RecordCipher(AccountKey.generate())
        let empty = ChangeRecord(
            sequence: 4, collection: .rules, key: "zoom.us",
            state: RecordState(fields: [:], versions: VersionVector(["laptop": 4])))
        let sealed = try cipher.seal(empty)
        #expect(sealed.state.fields.isEmpty && sealed.key == cipher.hiddenKey(collection: "rules", key: "zoom.us"))
        #expect(Wire.sealedProblem(sealed) == nil)
        #expect(throws: RecordCipherError.self) { try cipher.open(sealed) }
    }

    /// What a hostile server could do to stored records, each refused with
    /// the record and the field named.
    @Test func aServerThatChangesMovesOrReplaysValuesIsRefused() throws {
        let cipher = RecordCipher(AccountKey.generate())
        let zoom = try cipher.seal(Self.rule("zoom.us", "chrome", at: 5))
        let bank = try cipher.seal(Self.rule("bank.example", "firefox", at: 6, sequence: 2))
        let older = try cipher.seal(Self.rule("zoom.us", "firefox", at: 1))
        func with(_ change: ChangeRecord, _ field: String, _ value: StampedValue?) -> ChangeRecord {
            var state = change.state
            state.fields[field] = value
            return ChangeRecord(sequence: change.sequence, collection: change.collection, key: change.key, state: state)
        }
        func flipped(_ register: StampedValue) -> StampedValue {
            guard case .string(let text) = register.value else { return register }
            var bytes = Array(text.utf8)
            bytes[20] = bytes[20] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            return StampedValue(.string(String(decoding: bytes, as: UTF8.self)), stamp: register.stamp)
        }
        let browser = try #require(zoom.state.fields["browser"])
        let cases: [(String, ChangeRecord, String)] = [
            ("a byte flipped", with(zoom, "browser", flipped(browser)), "browser"),
            ("another record's value", with(zoom, "browser", bank.state.fields["browser"]), "browser"),
            (
                "an old value under a newer stamp",
                with(zoom, "browser", StampedValue(older.state.fields["browser"]!.value, stamp: browser.stamp)),
                "browser"
            ),
            (
                "a value moved to another field",
                with(zoom, "priority", StampedValue(browser.value, stamp: browser.stamp)), "priority"
            ),
            (
                "another record's key", with(zoom, RecordCipher.keyField, bank.state.fields[RecordCipher.keyField]),
                RecordCipher.keyField
            ),
            ("no key", with(zoom, RecordCipher.keyField, nil), RecordCipher.keyField),
            (
                "a deletion the device never wrote",
                with(zoom, "deleted", StampedValue(.bool(true), stamp: Self.stamp(99))), "deleted"
            ),
            (
                "a plaintext value", with(zoom, "browser", StampedValue(.string("chrome"), stamp: browser.stamp)),
                "browser"
            ),
            ("a plaintext record", Self.rule("zoom.us", "chrome", at: 5), "not encrypted"),
        ]
        for (name, change, field) in cases {
            #expect(throws: RecordCipherError.self, "\(name)") { _ = try cipher.open(change) }
            do { _ = try cipher.open(change) } catch {
                #expect(
                    error.description.contains(field) && error.description.contains("rules")
                        || field == "not encrypted", "\(name): \(error)")
            }
        }
        #expect {
            _ = try RecordCipher(AccountKey.generate()).open(zoom)
        } throws: { "\($0)".contains("wrong account key") }
        // A deletion the device wrote opens.
        let deleted = try cipher.seal(
            ChangeRecord(
                sequence: 3, collection: .rules, key: "zoom.us",
                state: RecordState(fields: ["deleted": StampedValue(.bool(true), stamp: Self.stamp(7))])))
        #expect(try cipher.open(deleted).state.isDeleted)
        // A field named like the cipher's own is refused when sealing.
        #expect(throws: RecordCipherError.self) {
            _ = try cipher.seal(
                ChangeRecord(
                    sequence: 1, collection: .settings, key: "x",
                    state: RecordState(fields: ["e2e.key": StampedValue(.int(1), stamp: Self.stamp(1))])))
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
