import JSON
import Model
import TestSupport
import Testing

@testable import SyncCore

/// Changes, pushes, relays and pages are written directly as bytes (each
/// change once). A change's, a push's and a relay's text must be canonical
/// JSON (compact, members in name order: what ``JSONValue/jsonText``
/// writes), which the chains are computed over; everything reads back as
/// what was written.
@Suite struct WireTextTests {
    static let values: [JSONValue] = [
        .null, .bool(true), .bool(false), .int(0), .int(-7), .int(Int64.max), .int(Int64.min), .double(1.5),
        .string(""), .string("zoom.us"), .string("quote \" backslash \\ newline \n tab \t"),
        .string("\u{1}\u{1F}\u{7F}\u{85}\u{202E}"),
        .string("日本語 ✓ 😀"), .array([.int(1), .string("x"), .null]),
        .object(["b": .int(1), "a": .object(["z": .bool(true)])]),
    ]

    func randomChange(_ random: inout SeededRandom, sequence: Int64) -> ChangeRecord {
        var state = RecordState()
        let names = ["pattern", "browser", "deleted", "e2e.key", "naïve \"field\"", "\u{1B}[31m"]
        var previous: HLCTimestamp?
        for name in names where Bool.random(using: &random) {
            // Fields of one change often share a stamp (it is written once then).
            let stamp =
                previous.flatMap { Bool.random(using: &random) ? $0 : nil }
                ?? HLCTimestamp(
                    wallMillis: Int64.random(in: 0...1 << 44, using: &random),
                    counter: UInt32.random(in: 0...9, using: &random),
                    device: ["a1b2", "device-9", "x.y_z:1"].randomElement(using: &random)!)
            previous = stamp
            state.fields[name] = StampedValue(Self.values.randomElement(using: &random)!, stamp: stamp)
        }
        for device in ["a1b2", "naïve", "q\"uote"] where Bool.random(using: &random) {
            for _ in 0..<Int.random(in: 1...3, using: &random) { state.versions.increment(device) }
        }
        let collection = [RecordCollection.browsers, .rules, .settings].randomElement(using: &random)!
        let key = ["zoom.us", "*.corp.example/é", "h1.abc", "key \"q\" \\ \n"].randomElement(using: &random)!
        var change = ChangeRecord(sequence: sequence, collection: collection, key: key, state: state)
        if Bool.random(using: &random) {
            change.writerVersions = VersionVector(["a1b2": UInt64.random(in: 0...9, using: &random)])
        }
        return change
    }

    /// A pulled change's `"writer"` is a version vector or absent; anything
    /// else refuses the change with a message naming it.
    @Test func aWriterThatIsNoVectorIsRefused() throws {
        let base = #"{"collection":"rules","fields":{},"key":"zoom.us","seq":3,"versions":{"a1b2":2}"#
        func read(_ text: String) throws(Wire.ReadError) -> ChangeRecord {
            try Array(text.utf8).withUnsafeBufferPointer { bytes throws(Wire.ReadError) in
                try ChangeRecord(reading: bytes)
            }
        }
        #expect(try read(base + "}").writerVersions == nil)
        #expect(try read(base + #","writer":{"a1b2":1}}"#).writerVersions == VersionVector(["a1b2": 1]))
        for bad in [#"5"#, #""x""#, #"{"a1b2":-1}"#, #"{"bad device!":1}"#, "null"] {
            do {
                _ = try read(base + #","writer":"# + bad + "}")
                Issue.record("a writer of \(bad) was read")
            } catch {
                #expect("\(error)".contains("change 3"), "\(error)")
            }
        }
    }

    static func canonical(_ bytes: [UInt8]) -> String? {
        (try? bytes.withUnsafeBufferPointer { try JSONValue.parse(utf8: $0) })?.jsonText
    }

    @Test func directTextIsCanonicalAndReadsBack() throws {
        var random = SeededRandom.fromEnvironment(fallback: 20_261_124)
        print("WireTextTests seed: \(random.seed) (re-run with BRSYNC_TEST_SEED=\(random.seed))")
        for round in 0..<300 {
            let count = Int.random(in: 0...4, using: &random)
            let changes = (0..<count).map { randomChange(&random, sequence: Int64(round * 10 + $0 + 1)) }
            for change in changes {
                #expect(String(decoding: change.jsonBytes, as: UTF8.self) == Self.canonical(change.jsonBytes))
                #expect(change.jsonBytesAndDigest.digest == change.digest)
                #expect(
                    RecordState.encodeVersions(change.state.versions)
                        == JSONValue.object(change.state.versions.counters.mapValues { .int(Int64($0)) }).jsonText)
            }
            let push = PushRequest(
                device: "a1b2", from: Int64(round * 10 + 1), to: Int64(round * 10 + max(count, 1)), changes: changes,
                base: Bool.random(using: &random) ? "0123456789abcdef" : nil,
                since: Bool.random(using: &random) ? Int64.random(in: 0...1000, using: &random) : nil,
                epoch: Bool.random(using: &random) ? "e\"poch" : nil,
                keyID: Bool.random(using: &random) ? "fedcba9876543210" : nil)
            #expect(String(decoding: push.body(), as: UTF8.self) == Self.canonical(push.body()))
            #expect(push.body(changeTexts: changes.map(\.jsonBytes)) == push.body())
            let relay = RelayRequest(records: changes, keyID: Bool.random(using: &random) ? "fedcba9876543210" : nil)
            #expect(String(decoding: relay.body(), as: UTF8.self) == Self.canonical(relay.body()))
            #expect(relay.body(recordTexts: changes.map(\.jsonBytes)) == relay.body())
            var page = PullResponse(
                changes: changes, next: Int64(round), more: Bool.random(using: &random), epoch: "e\"poch",
                clock: HLCTimestamp(wallMillis: Int64(round), counter: 0, device: "server"), account: "acc")
            page.reset = Bool.random(using: &random)
            if Bool.random(using: &random) {
                page.encrypted = true
                page.keyID = "fedcba9876543210"
            }
            page.chain = [
                nil, ChainEcho(last: 0, digest: ""), ChainEcho(last: Int64(round), digest: "0123456789abcdef"),
            ]
            .randomElement(using: &random)!
            // What is valid reads back as written.
            let valid = changes.filter {
                Wire.problem(key: $0.key) == nil && Wire.problem(state: $0.state) == nil
                    && $0.state.versions.counters.keys.allSatisfy(HLCTimestamp.isValidDevice)
            }
            guard valid.count == changes.count else { continue }
            for change in changes {
                #expect(
                    try change.jsonBytes.withUnsafeBufferPointer { bytes throws(Wire.ReadError) in
                        try ChangeRecord(reading: bytes)
                    } == change)
                let fields = RecordState.encodeFields(change.state.fields),
                    versions = RecordState.encodeVersions(change.state.versions)
                #expect(try RecordState(fieldsJSON: fields, versionsJSON: versions) == change.state)
            }
            if !changes.isEmpty {
                #expect(
                    try push.body().withUnsafeBufferPointer { bytes throws(Wire.ReadError) in
                        try PushRequest(reading: bytes)
                    } == push)
            }
            #expect(
                try relay.body().withUnsafeBufferPointer { bytes throws(Wire.ReadError) in
                    try RelayRequest(reading: bytes)
                } == relay)
            #expect(
                try page.body.withUnsafeBufferPointer { bytes throws(Wire.ReadError) in try PullResponse(reading: bytes)
                } == page)
        }
    }

    /// What the server of an encrypted account takes as a hidden key and a
    /// sealed value: the prefix, the base64url alphabet and the lengths.
    @Test func hiddenKeysAndSealedValuesHaveTheirExactForm() {
        let digits = String(repeating: "A", count: 40) + "z9-"
        #expect(Wire.isHiddenKey("h1." + digits))
        for key in [
            "h1." + digits.dropLast(), "h1." + digits + "_", "h2." + digits, "h1." + digits.dropLast() + "=",
            "h1." + digits.dropLast() + "é",
            "", "h1.", "H1." + digits,
        ] {
            #expect(!Wire.isHiddenKey(key), "\(key)")
        }
        let sealed = "e1." + String(repeating: "Ab0_-", count: 8)
        #expect(
            Wire.isSealedValue(.string(sealed))
                && Wire.isSealedValue(.string(sealed + String(repeating: "x", count: 5000))))
        for value: JSONValue in [
            .string(String(sealed.dropLast(3))), .string(sealed + "+"), .string(sealed + " "),
            .string("e2." + sealed.dropFirst(3)),
            .string(""), .int(1), .null, .object(["e1.": .string(sealed)]),
        ] {
            #expect(!Wire.isSealedValue(value), "\(value)")
        }
    }

    /// A pulled record keeps its fields' text as the page carried it (a
    /// replica that takes the record as it came stores it instead of writing
    /// it again): text that reads as the same fields, white space around it
    /// left out; changing the state drops it; equality does not look at it.
    @Test func aPulledRecordKeepsItsFieldsText() throws {
        let fields =
            #"{"pattern":{"s":"000001a22667f600-00000004-d6ea9ebef2317a87","v":"x.com"}, "priority":{"s":"000001a22667f600-00000004-d6ea9ebef2317a87","v":3}}"#
        let body =
            #"{"changes":[{"seq":1,"collection":"rules","key":"x.com","fields": "# + fields
            + #" ,"versions":{"d6ea9ebef2317a87":1}}],"next":1,"more":false,"epoch":"e1","#
            + #""clock":"000001a22667f600-00000004-d6ea9ebef2317a87"}"#
        let page = try Array(body.utf8).withUnsafeBufferPointer { bytes throws(Wire.ReadError) in
            try PullResponse(reading: bytes)
        }
        var change = try #require(page.changes.first)
        #expect(change.fieldsText == fields)
        let reread = try RecordState(fieldsJSON: try #require(change.fieldsText), versionsJSON: "{}")
        #expect(reread.fields == change.state.fields)
        let same = change
        change.state.versions = VersionVector()
        #expect(change.fieldsText == nil)
        var unchanged = same
        unchanged.fieldsText = nil
        #expect(unchanged == same)
    }
}
