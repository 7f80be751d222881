import SyncCore
import TestSupport
import Testing

/// The ledger's packed records: what a device writes reads back as itself,
/// byte for byte, and anything else is refused with the reason.
@Suite struct LedgerTests {
    typealias Stamp = Ledger.Stamp

    static let deleted = Ledger.Group.bit(of: "deleted")!
    static let pattern = Ledger.Group.bit(of: "pattern")!
    static let browser = Ledger.Group.bit(of: "browser")!

    /// A rule made once: 22 bytes (8 of tag, 2 of mask, 12 of stamp).
    @Test func aRuleMadeOnceIsOneGroupOf22Bytes() throws {
        let entry = Ledger.Entry(
            tag: 0x0123_4567_89AB_CDEF,
            groups: [.init(known: Self.pattern | Self.browser, stamp: Stamp(wallMillis: 1_790_000_000_000, counter: 3))]
        )
        let pending = Ledger.Pending(base: nil, previous: nil, entries: [entry])
        // Magic, format, three absent flags, no names, the count, the entry.
        #expect(pending.bytes.count == 2 + 3 + 1 + 2 + 22)
        #expect(try Ledger.Pending(bytes: pending.bytes) == pending)
    }

    static func randomEntries(
        _ random: inout SeededRandom, count: Int, shard: Int? = nil, of shardCount: Int = 1
    )
        -> [Ledger.Entry]
    {
        var tags = Set<UInt64>()
        while tags.count < count {
            var tag = random.next()
            if let shard, shardCount > 1 {
                let bits = UInt64(shardCount.trailingZeroBitCount)
                tag = UInt64(shard) << (64 - bits) | tag >> bits
            }
            tags.insert(tag)
        }
        return tags.sorted().map { tag in
            var groups: [Ledger.Group] = []
            var free = UInt16(0x3FFF)
            var wall = Int64(random.next() % 2_000_000_000_000)
            for _ in 0...(random.next() % 3) where free != 0 {
                var known = UInt16(random.next() & UInt64(free))
                if known == 0 { known = free & (~free + 1) }
                free &= ~known
                wall += Int64(random.next() % 1000) + 1
                let device = UInt8(random.next() % 4 == 0 ? random.next() % 3 : 0)
                let others: [UInt8] = groups.isEmpty && random.next() % 5 == 0 ? [UInt8(random.next() % 4)] : []
                groups.append(
                    .init(
                        device: device, known: known, others: others,
                        stamp: Stamp(wallMillis: wall, counter: UInt32(truncatingIfNeeded: random.next()))))
            }
            return Ledger.Entry(tag: tag, groups: groups)
        }
    }

    /// Random shards, pending records and heads: each reads back as itself,
    /// and its bytes are the only bytes that read as it (a second writing is equal).
    @Test func whatADeviceWritesReadsBackAsItself() throws {
        var random = SeededRandom.fromEnvironment(fallback: 51)
        print("LedgerTests seed \(random.seed)")
        for round in 0..<200 {
            let shardCount = 1 << Int(random.next() % 9)
            let index = Int(random.next() % UInt64(shardCount))
            let entries = Self.randomEntries(
                &random, count: Int(random.next() % 80), shard: index, of: shardCount)
            let shard = Ledger.Shard(index: index, shardCount: shardCount, entries: entries)
            #expect(try Ledger.Shard(bytes: shard.bytes) == shard, "round \(round)")
            #expect(try Ledger.Shard(bytes: shard.bytes).bytes == shard.bytes)

            let pending = Ledger.Pending(
                base: random.next() % 2 == 0 ? nil : Stamp(wallMillis: 5, counter: 1),
                previous: random.next() % 2 == 0
                    ? nil : .init(slot: Int(random.next() % 16), stamp: Stamp(wallMillis: 9, counter: 0)),
                entries: Self.randomEntries(&random, count: Int(random.next() % 50)))
            #expect(try Ledger.Pending(bytes: pending.bytes) == pending, "round \(round)")

            let head = Ledger.Head(
                newest: Stamp(wallMillis: Int64(random.next() % 1_000_000), counter: 2),
                folded: .init(slot: 15, stamp: Stamp(wallMillis: 1, counter: 1)),
                ids: random.next() % 2 == 0 ? [] : ["laptop-0123", "phone-ab"], fieldNames: ["note", "colour"],
                shardCount: shardCount, entryCount: Int(random.next() % 100_000), shardsHash: random.next())
            #expect(try Ledger.Head(bytes: head.bytes) == head, "round \(round)")
        }
    }

    @Test func tagsFallInShardsByTheirFirstBits() {
        #expect(Ledger.shard(ofTag: .max, shardCount: 1) == 0)
        #expect(Ledger.shard(ofTag: .max, shardCount: 256) == 255)
        #expect(Ledger.shard(ofTag: 0x8000_0000_0000_0000, shardCount: 2) == 1)
        #expect(Ledger.shard(ofTag: 0x7FFF_FFFF_FFFF_FFFF, shardCount: 2) == 0)
        #expect(Ledger.shard(ofTag: 0x1234_0000_0000_0000, shardCount: 16) == 1)
        #expect(Ledger.shardCount(forEntries: 0) == 1)
        #expect(Ledger.shardCount(forEntries: 64) == 1)
        #expect(Ledger.shardCount(forEntries: 65) == 2)
        #expect(Ledger.shardCount(forEntries: 10_000) == 256)
        #expect(Ledger.shardCount(forEntries: 1_000_000) == 256)
    }

    @Test(arguments: [
        ("laptop/head", Ledger.Key.head(device: "laptop")),
        ("laptop/0", .shard(device: "laptop", index: 0)),
        ("laptop/255", .shard(device: "laptop", index: 255)),
        ("d1/pending/15", .pending(device: "d1", slot: 15)),
    ])
    func keysReadBack(_ text: String, _ key: Ledger.Key) {
        #expect(Ledger.Key(text) == key)
        #expect(key.description == text)
    }

    @Test(arguments: [
        "", "laptop", "/head", "laptop/", "laptop/256", "laptop/01", "laptop/-1", "laptop/+1", "laptop/pending/16",
        "laptop/pending/", "laptop/pending/01", "laptop/pending", "laptop/Head", "laptop/head/0", "a/b/c/d",
        "laptop/1e2",
        "laptop/٣",
        // Not device ids: the Kelvin sign (canonically "K"), a space, 65 bytes.
        "\u{212A}1/head", "lap top/head", String(repeating: "d", count: 65) + "/head",
    ])
    func otherKeysAreNotLedgerKeys(_ text: String) {
        #expect(Ledger.Key(text) == nil)
    }

    static let oneEntry = Ledger.Entry(
        tag: 0x10, groups: [.init(known: deleted, stamp: Stamp(wallMillis: 1, counter: 0))])

    /// Hand-made damage: each refused, with what is wrong.
    @Test func damagedRecordsAreRefusedWithTheReason() {
        let good = Ledger.Pending(base: nil, previous: nil, entries: [Self.oneEntry]).bytes
        func refusal(_ bytes: [UInt8]) -> String? {
            do {
                _ = try Ledger.Pending(bytes: bytes)
                return nil
            } catch {
                return error.reason
            }
        }
        #expect(refusal(good) == nil)
        #expect(refusal([]) == "it ends early")
        #expect(refusal(Array(good.dropLast())) == "it ends early")
        #expect(refusal(good + [0]) == "1 bytes follow its end")
        #expect(refusal([UInt8(ascii: "S")] + good.dropFirst())?.hasPrefix("expected a P record") == true)
        #expect(refusal([good[0], 2] + good.dropFirst(2))?.hasPrefix("format 2 is not known") == true)
        #expect(refusal([good[0], good[1], 2] + good.dropFirst(3)) == "a flag of 2, neither 0 nor 1")
        #expect(refusal(Array(repeating: 0, count: Ledger.maxBytes + 1))?.hasSuffix("more than 60000") == true)

        func entries(_ list: [Ledger.Entry]) -> [UInt8] {
            Ledger.Pending(base: nil, previous: nil, entries: list).bytes
        }
        let stamp = Stamp(wallMillis: 1, counter: 0)
        #expect(refusal(entries([Self.oneEntry, Self.oneEntry])) == "entries are not in ascending tag order")
        #expect(refusal(entries([.init(tag: 1, groups: [.init(known: 0, stamp: stamp)])])) == "a group names no field")
        let overlapping = Ledger.Entry(
            tag: 1,
            groups: [
                .init(known: Self.deleted, stamp: stamp),
                .init(known: Self.deleted | Self.pattern, stamp: Stamp(wallMillis: 2, counter: 0)),
            ])
        #expect(refusal(entries([overlapping])) == "two groups of an entry name the same field")
        let unordered = Ledger.Entry(
            tag: 1,
            groups: [
                .init(known: Self.deleted, stamp: Stamp(wallMillis: 2, counter: 0)),
                .init(known: Self.pattern, stamp: stamp),
            ])
        #expect(refusal(entries([unordered])) == "an entry's groups are not in ascending stamp order")
        let othersUnsorted = Ledger.Entry(tag: 1, groups: [.init(known: 0, others: [3, 1], stamp: stamp)])
        #expect(refusal(entries([othersUnsorted])) == "a group's other fields are not in ascending order")
        // An extended group with nothing more: rewrite the mask of a plain one.
        var extended = entries([Self.oneEntry])
        extended[6 + 2 + 8] |= 0x80
        #expect(refusal(extended) == "it ends early")
        #expect(refusal(extended + [0, 0]) == "a group is marked extended but says nothing more")
        // A time past what a stamp holds.
        var future = entries([Self.oneEntry])
        future[6 + 2 + 8 + 2] = 0x80
        #expect(refusal(future) == "a stamp's time is out of range")
    }

    @Test func aShardHoldsOnlyItsOwnTags() {
        let shard = Ledger.Shard(index: 0, shardCount: 2, entries: [.init(tag: .max, groups: Self.oneEntry.groups)])
        #expect(throws: Ledger.Problem("an entry's tag does not fall in shard 0 of 2")) {
            try Ledger.Shard(bytes: shard.bytes)
        }
        #expect(throws: Ledger.Problem("a shard count of 3 is not a power of two from 1 to 256")) {
            try Ledger.Shard(bytes: Ledger.Shard(index: 0, shardCount: 3, entries: []).bytes)
        }
        #expect(throws: Ledger.Problem("shard 4 of 4")) {
            try Ledger.Shard(bytes: Ledger.Shard(index: 4, shardCount: 4, entries: []).bytes)
        }
    }

    @Test func aHeadListsEachNameOnceAndNoKnownField() {
        let head = Ledger.Head(newest: nil, folded: nil, shardCount: 1, entryCount: 0, shardsHash: 0)
        var twice = head
        twice.ids = ["a", "a"]
        #expect(throws: Ledger.Problem("the name 'a' is listed twice")) { try Ledger.Head(bytes: twice.bytes) }
        var known = head
        known.fieldNames = ["pattern"]
        #expect(throws: Ledger.Problem("the field 'pattern' is listed though it has a bit of its own")) {
            try Ledger.Head(bytes: known.bytes)
        }
        var bytes = head.bytes
        bytes[bytes.count - 8 - 4 - 2 - 1] = 1 // a field name count of 1 with no name after it
        #expect(throws: Ledger.Problem.self) { try Ledger.Head(bytes: bytes) }
    }

    /// A stored ledger record read for the checks (``Ledger/StoredFields``)
    /// says what reading it as a record says: its `ledger` register's stamp
    /// and text, its newest stamp; and it refuses what a record's reading refuses.
    @Test func storedFieldsReadAsTheRecordReads() throws {
        let first = HLCTimestamp(wallMillis: 1_700_000_000_000, counter: 2, device: "0123456789abcdef")
        let later = HLCTimestamp(wallMillis: 1_700_000_000_005, counter: 0, device: "0123456789abcdef")
        func read(_ text: String) throws -> Ledger.StoredFields {
            var reader = HLCTimestamp.Reader()
            let bytes = Array(text.utf8)
            return try bytes.withUnsafeBufferPointer { try Ledger.StoredFields(fieldsUTF8: $0, reader: &reader) }
        }
        let fields: [String: StampedValue] = [
            Wire.ledgerField: StampedValue(.string("SGVsbG8"), stamp: first),
            "other": StampedValue(.object(["a": .int(1)]), stamp: later),
        ]
        let stored = try read(RecordState.encodeFields(fields))
        #expect(stored == Ledger.StoredFields(stamp: first, text: Array("SGVsbG8".utf8), newest: later))
        // Not a string: no text, the stamp all the same.
        let number = try read(RecordState.encodeFields([Wire.ledgerField: StampedValue(.int(3), stamp: first)]))
        #expect(number == Ledger.StoredFields(stamp: first, text: nil, newest: first))
        #expect(try read("{}") == Ledger.StoredFields())
        // A name met twice: the last counts, as a record's reading has it.
        let twice = #"{"ledger":{"s":"\#(later)","v":"QQ"},"ledger":{"s":"\#(first)","v":"Qg"}}"#
        #expect(try read(twice) == Ledger.StoredFields(stamp: first, text: Array("Qg".utf8), newest: first))
        for bad in [
            "", "[]", #"{"ledger":3}"#, #"{"ledger":{"v":"QQ"}}"#, #"{"ledger":{"s":"nope","v":"QQ"}}"#,
            #"{"ledger":{"s":"\#(first)","v":"QQ"}} x"#, #"{"ledger":{"s":"\#(first)","v":"QQ""#,
        ] {
            #expect(throws: Wire.Problem.self, "\(bad)") { try read(bad) }
        }
    }
}
