import JSON
import SyncClient
import SyncCore
import Testing

/// Whole records in sealed format 2 (docs/sealed-format-v2.md): a change
/// sealed as one box per write, sent as the grouped fields text, read back
/// and opened as it was; records mixing both formats; and what a lying
/// server could do with boxes, refused by name.
@Suite struct BoxedRecordTests {
    static let device = "db22d30bcc46d6a9"
    static let older = HLCTimestamp(text: "000001a214470000-00000003-db22d30bcc46d6a9")!
    static let stamp = HLCTimestamp(text: "000001a214472554-00000000-db22d30bcc46d6a9")!
    static let cipher = RecordCipher(AccountKey.generate())

    /// A rule as `brsync rules add` makes it: every field under one stamp.
    static func madeRule(_ key: String = "zoom.us", at stamp: HLCTimestamp = stamp) -> ChangeRecord {
        let values: [String: JSONValue] = [
            "pattern": .string(key), "browser": .string("chrome"), "browserScheme": .null,
            "createdAt": .int(1_764_600_000), "deleted": .bool(false), "origin": .string("desktop"),
            "priority": .int(10),
        ]
        return change(key, values.mapValues { StampedValue($0, stamp: stamp) }, counter: 1)
    }

    /// A change of `key` with `fields`, its manifest kept as the log keeps it.
    static func change(_ key: String, _ fields: [String: StampedValue], counter: UInt64) -> ChangeRecord {
        let state = RecordState(fields: fields, versions: VersionVector([device: counter]))
        let newest = fields.values.map(\.stamp).max()!
        return ChangeRecord(
            sequence: Int64(counter), collection: .rules, key: key, state: state,
            manifestText: RecordManifest(of: state, through: newest).text(at: newest))
    }

    /// The fields as the wire carries them, read back as a server or a pull reads them.
    static func overTheWire(_ sealed: ChangeRecord) throws -> ChangeRecord {
        let text = RecordState.encodeFields(sealed.state.fields)
        var read = sealed
        read.state = try RecordState(
            fieldsJSON: text, versionsJSON: RecordState.encodeVersions(sealed.state.versions))
        return read
    }

    /// The opened change, as a pull applies it (no log's manifest text: a pull has none).
    static func opened(_ sealed: ChangeRecord) throws -> ChangeRecord {
        var opened = try cipher.open(try overTheWire(sealed))
        opened.filedKey = nil
        return opened
    }

    /// A rule made once is one box, named by every field; it travels as the
    /// grouped text and opens to the change it was, and sealing it again
    /// gives the same bytes (a retried push is the same push).
    @Test func aChangeSealedInOneBoxOpensAsItWas() throws {
        let change = Self.madeRule()
        let sealed = try Self.cipher.seal(change, format: .two)
        let boxes = Set(sealed.state.fields.values.filter { RecordState.isBox($0.value) })
        #expect(boxes.count == 1)
        #expect(sealed.state.fields["deleted"]?.value == .bool(false), "the flag stays readable")
        #expect(sealed.state.fields.keys.contains("e2e.deleted") && sealed.state.fields.keys.contains("e2e.manifest"))
        #expect(try Self.cipher.seal(change, format: .two) == sealed)
        var expected = change
        expected.manifestText = nil
        #expect(try Self.opened(sealed) == expected)
    }

    /// Format 2 is what issue 54 set out to make: a made rule is at most
    /// 1,000 bytes on the wire, against format 1's ~1,450. The sizes are
    /// printed for the note.
    @Test func aRuleInFormat2IsSmallOnTheWire() throws {
        var sizes: [Wire.SealedFormat: Int] = [:]
        for format in [Wire.SealedFormat.one, .two] {
            let sealed = try Self.cipher.seal(Self.madeRule("meet.example.com"), format: format)
            var record: [UInt8] = []
            record += #"{"seq":10000,"collection":"rules","key":""#.utf8
            record += sealed.key.utf8
            record += #"","fields":"#.utf8
            RecordState.writeFields(sealed.state.fields, into: &record)
            record += #","versions":"#.utf8
            RecordState.writeVersions(sealed.state.versions, into: &record)
            record += "},".utf8
            sizes[format] = record.count
        }
        print("a made rule on the wire: format 1 \(sizes[.one]!) bytes, format 2 \(sizes[.two]!) bytes")
        #expect(sizes[.two]! <= 1000 && sizes[.two]! < sizes[.one]!, "\(sizes)")
    }

    /// A change writing fields under two stamps (an edit merged in before it
    /// was sent) is two boxes; only the newest holds the manifest.
    @Test func aChangeOfTwoStampsIsTwoBoxes() throws {
        var fields = Self.madeRule().state.fields
        fields["pattern"] = StampedValue(.string("zoom.us"), stamp: Self.older)
        fields["createdAt"] = StampedValue(.int(1_764_600_000), stamp: Self.older)
        let change = Self.change("zoom.us", fields, counter: 2)
        let sealed = try Self.cipher.seal(change, format: .two)
        let pattern = try #require(sealed.state.fields["pattern"])
        let browser = try #require(sealed.state.fields["browser"])
        #expect(pattern.stamp == Self.older && browser.stamp == Self.stamp && pattern != browser)
        #expect(sealed.state.fields["e2e.manifest"] == browser && sealed.state.fields["e2e.key"] == browser)
        var expected = change
        expected.manifestText = nil
        #expect(try Self.opened(sealed) == expected)
    }

    /// A record whose older fields are format 1 values and whose newer ones
    /// a box holds (a record written before the account turned to format 2)
    /// opens: each register by its own format.
    @Test func aRecordMixingBothFormatsOpens() throws {
        let first = try Self.cipher.seal(Self.madeRule(at: Self.older), format: .one)
        // The edit carries only what it wrote; its manifest is of the record after it.
        let after = Self.change(
            "zoom.us",
            Self.madeRule(at: Self.older).state.fields.merging(
                ["browser": StampedValue(.string("firefox"), stamp: Self.stamp)]) { $1 }, counter: 2)
        var edit = after
        edit.state.fields = ["browser": after.state.fields["browser"]!]
        edit.manifestText = after.manifestText
        let second = try Self.cipher.seal(edit, format: .two)
        let merged = first.state.merged(with: second.state).state
        #expect(merged.fields["pattern"].map { $0.value.stringValue!.hasPrefix("e1.") } == true)
        #expect(merged.fields["browser"].map { RecordState.isBox($0.value) } == true)
        var record = second
        record.state = merged
        let opened = try Self.opened(record)
        #expect(opened.state.fields == after.state.fields)
        #expect(opened.state.versions == after.state.versions)
    }

    /// What a server could do with the boxes it holds, each refused on
    /// opening with what was wrong: a field moved to a write that does not
    /// hold it, a field of a write dropped or rolled back behind it, the
    /// readable flag changed, the manifest taken from a write without one,
    /// a box moved from another record.
    @Test func whatALyingServerDoesWithBoxesIsRefused() throws {
        // pattern and createdAt written first; browser, priority and the rest later.
        let first = Self.change("zoom.us", Self.madeRule(at: Self.older).state.fields, counter: 1)
        var fields = Self.madeRule().state.fields
        fields["pattern"] = first.state.fields["pattern"]
        fields["createdAt"] = first.state.fields["createdAt"]
        let second = Self.change("zoom.us", fields, counter: 2)
        let old = try Self.cipher.seal(first, format: .two)
        let honest = try Self.cipher.seal(second, format: .two)
        #expect(try Self.opened(honest).state == second.state)
        let newBox = honest.state.fields["browser"]!
        let oldBox = honest.state.fields["pattern"]!
        let elsewhere = try Self.cipher.seal(Self.madeRule("github.com"), format: .two).state.fields["browser"]!

        var rows: [(String, (inout [String: StampedValue]) -> Void, String)] = []
        rows.append(("a field moved to a newer write", { $0["pattern"] = newBox }, "is not in the write it names"))
        rows.append(("a field of a write dropped", { $0["priority"] = nil }, "was dropped"))
        rows.append(
            (
                "a field rolled back behind its write", { $0["priority"] = old.state.fields["priority"] },
                "rolled back"
            ))
        rows.append(
            ("the readable flag changed", { $0["deleted"]!.value = .bool(true) }, "not the one the device sealed"))
        rows.append(("the manifest of a write that has none", { $0["e2e.manifest"] = oldBox }, "holds none"))
        rows.append(("a box of another record", { $0["browser"] = elsewhere }, "does not open"))
        rows.append(
            (
                "a box under another stamp", { $0["browser"] = StampedValue(newBox.value, stamp: Self.older) },
                "does not open"
            ))
        for (what, lie, reason) in rows {
            var lied = honest
            lie(&lied.state.fields)
            #expect(throws: RecordCipherError.self, "\(what)") { _ = try Self.opened(lied) }
            do { _ = try Self.opened(lied) } catch { #expect("\(error)".contains(reason), "\(what): \(error)") }
        }
    }

    /// A relayed record carries each write in the box its writer sealed
    /// (the relaying machine kept it when it pulled the record). Sealing the
    /// fields again by themselves, as format 1 relays did, handed a lying
    /// server a field without its write: with a concurrent writer's older
    /// manifest it could roll the write's other field back unseen (the
    /// outside review's F1). With the writer's box, that rollback is refused.
    @Test func aRelayCarriesTheWritersBoxesSoNoFieldLeavesItsWrite() throws {
        let other = "0a0b0c0d0e0f1011"
        let newer = HLCTimestamp(text: "000001a214480000-00000000-\(other)")!
        // Made at `older`; device 1 then writes browser and priority together;
        // device 2, not having seen that, writes origin.
        let made = Self.change("zoom.us", Self.madeRule(at: Self.older).state.fields, counter: 1)
        var edited = made.state.fields
        edited["browser"] = StampedValue(.string("firefox"), stamp: Self.stamp)
        edited["priority"] = StampedValue(.int(20), stamp: Self.stamp)
        let edit = Self.change("zoom.us", edited, counter: 2)
        var concurrentFields = made.state.fields
        concurrentFields["origin"] = StampedValue(.string("phone"), stamp: newer)
        var concurrent = Self.change("zoom.us", concurrentFields, counter: 1)
        concurrent.state.versions = VersionVector([Self.device: 1, other: 1])
        concurrent.manifestText = RecordManifest(of: concurrent.state, through: newer).text(at: newer)
        let pulled = try [edit, concurrent].map {
            try Self.cipher.open(try Self.overTheWire(try Self.cipher.seal($0, format: .two)))
        }
        let (merged, _) = pulled[0].state.merged(with: pulled[1].state)
        let record = ChangeRecord(sequence: 0, collection: .rules, key: "zoom.us", state: merged)

        let relayed = try Self.cipher.sealRelayed(record, kept: pulled.flatMap { $0.boxes.map(\.register) })
        let editBox = try Self.cipher.seal(edit, format: .two).state.fields["priority"]!
        let concurrentBox = try Self.cipher.seal(concurrent, format: .two).state.fields["origin"]!
        #expect(relayed.state.fields["priority"] == editBox && relayed.state.fields["browser"] == editBox)
        #expect(
            relayed.state.fields["origin"] == concurrentBox && relayed.state.fields["e2e.manifest"] == concurrentBox)
        #expect(try Self.opened(relayed).state == merged)
        #expect(
            try Self.cipher.sealRelayed(record, kept: pulled.flatMap { $0.boxes.map(\.register) }) == relayed,
            "the same bytes again")

        // The lie: browser served from the made write, under device 2's manifest (which allows it).
        let madeBox = relayed.state.fields["pattern"]!
        var lied = relayed
        lied.state.fields["browser"] = madeBox
        #expect {
            _ = try Self.opened(lied)
        } throws: { error in
            "\(error)".contains("rolled back")
        }
        // Format 1's relay: each field sealed by itself gave the server priority without its write.
        var formatOne = try Self.cipher.seal(record, format: .one)
        formatOne.state.fields["browser"] = madeBox
        formatOne.state.fields["e2e.manifest"] = concurrentBox
        formatOne.state.fields["e2e.key"] = concurrentBox
        #expect(
            try Self.opened(formatOne).state.fields["browser"]?.value == .string("chrome"), "the hole kept boxes close")

        // Kept boxes that do not open (an older key), or name stamps no
        // longer held, are left out: those writes are sealed here again.
        let stale = try RecordCipher(AccountKey.generate()).seal(edit, format: .two).state.fields["priority"]!
        let fresh = try Self.cipher.sealRelayed(record, kept: [stale])
        #expect(fresh.state.fields["priority"] != stale && fresh.state.fields["priority"]?.stamp == Self.stamp)
        #expect(try Self.opened(fresh).state == merged)
    }

    /// The boxes an opened record offers its replica to keep are those its
    /// own fields name, each weighing twice its fields and one more with a
    /// manifest. A lying server that names a relay's part of the write
    /// (genuine: a relay sealed it) by `e2e.key` offers nothing more, and
    /// where a field names the part, the writer's whole box still weighs
    /// more (the replica keeps the heavier: the outside review's F1 again).
    @Test func theBoxesOfferedToKeepAreTheFieldsOwnAndWeighTheirWrites() throws {
        let made = Self.madeRule()
        let sealed = try Self.cipher.seal(made, format: .two)
        let whole = sealed.state.fields["pattern"]!
        let honest = try Self.opened(sealed).boxes
        #expect(honest == [ChangeRecord.PulledBox(whole, weight: 7 * 2 + 1)])

        let hidden = sealed.key
        let part = StampedValue(
            .string(
                Self.cipher.sealBox(
                    RecordCipher.Write(key: "zoom.us", fields: ["pattern": .string("zoom.us")]), collection: "rules",
                    hiddenKey: hidden, stamp: Self.stamp)),
            stamp: Self.stamp)
        var byKey = sealed
        byKey.state.fields["e2e.key"] = part
        #expect(try Self.opened(byKey).boxes == honest, "a box named by e2e.key alone is not offered")
        var byField = sealed
        byField.state.fields["pattern"] = part
        let offered = try Self.opened(byField).boxes
        #expect(Set(offered) == [honest[0], ChangeRecord.PulledBox(part, weight: 2)])
    }

    /// A field's name is matched by its bytes against the names its box
    /// holds: a server that files a sealed field under another spelling of
    /// its name (canonically equivalent, which Swift's `String` takes as
    /// equal) is refused by name.
    @Test func aFieldRenamedToAnotherSpellingIsRefused() throws {
        var fields = Self.madeRule().state.fields
        let composed = "caf\u{e9}", decomposed = "cafe\u{301}"
        #expect(composed == decomposed && !composed.utf8.elementsEqual(decomposed.utf8))
        fields[composed] = StampedValue(.string("latte"), stamp: Self.stamp)
        let sealed = try Self.cipher.seal(Self.change("zoom.us", fields, counter: 1), format: .two)
        #expect(try Self.opened(sealed).state.fields[composed]?.value == .string("latte"))
        var renamed = sealed
        let register = renamed.state.fields.removeValue(forKey: composed)!
        renamed.state.fields[decomposed] = register
        #expect(renamed.state.fields.keys.contains { $0.utf8.elementsEqual(decomposed.utf8) })
        #expect {
            _ = try Self.opened(renamed)
        } throws: { error in
            "\(error)".contains("is not in the write it names")
        }
    }
}
