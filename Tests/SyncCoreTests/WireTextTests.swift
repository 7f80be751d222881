import Model
import Testing
import TestSupport
@testable import SyncCore

/// Pushes and relays are written directly as bytes (each change once); the
/// text must be exactly what the ``JSONValue`` forms write, which the server
/// parses and the chains are computed over.
@Suite struct WireTextTests {
    static let values: [JSONValue] = [
        .null, .bool(true), .bool(false), .int(0), .int(-7), .int(Int64.max), .int(Int64.min), .double(1.5),
        .string(""), .string("zoom.us"), .string("quote \" backslash \\ newline \n tab \t"), .string("\u{1}\u{1F}\u{7F}\u{85}\u{202E}"),
        .string("日本語 ✓ 😀"), .array([.int(1), .string("x"), .null]), .object(["b": .int(1), "a": .object(["z": .bool(true)])]),
    ]

    func randomChange(_ random: inout SeededRandom, sequence: Int64) -> ChangeRecord {
        var state = RecordState()
        let names = ["pattern", "browser", "deleted", "e2e.key", "naïve \"field\"", "\u{1B}[31m"]
        var previous: HLCTimestamp?
        for name in names where Bool.random(using: &random) {
            // Fields of one change often share a stamp (it is written once then).
            let stamp = previous.flatMap { Bool.random(using: &random) ? $0 : nil }
                ?? HLCTimestamp(wallMillis: Int64.random(in: 0...1 << 44, using: &random), counter: UInt32.random(in: 0...9, using: &random),
                                device: ["a1b2", "device-9", "x.y_z:1"].randomElement(using: &random)!)
            previous = stamp
            state.fields[name] = StampedValue(Self.values.randomElement(using: &random)!, stamp: stamp)
        }
        for device in ["a1b2", "naïve", "q\"uote"] where Bool.random(using: &random) {
            for _ in 0..<Int.random(in: 1...3, using: &random) { state.versions.increment(device) }
        }
        let collection = [RecordCollection.browsers, .rules, .settings].randomElement(using: &random)!
        let key = ["zoom.us", "*.corp.example/é", "h1.abc", "key \"q\" \\ \n"].randomElement(using: &random)!
        return ChangeRecord(sequence: sequence, collection: collection, key: key, state: state)
    }

    @Test func directTextIsTheJSONValueText() {
        var random = SeededRandom.fromEnvironment(fallback: 20_261_124)
        print("WireTextTests seed: \(random.seed) (re-run with BRSYNC_TEST_SEED=\(random.seed))")
        for round in 0..<300 {
            let count = Int.random(in: 0...4, using: &random)
            let changes = (0..<count).map { randomChange(&random, sequence: Int64(round * 10 + $0 + 1)) }
            for change in changes {
                #expect(String(decoding: change.jsonBytes, as: UTF8.self) == change.json.jsonText)
                #expect(change.jsonBytesAndDigest.digest == change.digest)
                #expect(RecordState.encodeVersions(change.state.versions) == JSONValue.object(change.state.versions.counters.mapValues { .int(Int64($0)) }).jsonText)
            }
            let push = PushRequest(device: "a1b2", from: Int64(round * 10 + 1), to: Int64(round * 10 + max(count, 1)), changes: changes,
                                   base: Bool.random(using: &random) ? "0123456789abcdef" : nil,
                                   since: Bool.random(using: &random) ? Int64.random(in: 0...1000, using: &random) : nil,
                                   epoch: Bool.random(using: &random) ? "e\"poch" : nil,
                                   keyID: Bool.random(using: &random) ? "fedcba9876543210" : nil)
            #expect(String(decoding: push.body(), as: UTF8.self) == push.json.jsonText)
            #expect(push.body(changeTexts: changes.map(\.jsonBytes)) == push.body())
            let relay = RelayRequest(records: changes, keyID: Bool.random(using: &random) ? "fedcba9876543210" : nil)
            #expect(String(decoding: relay.body(), as: UTF8.self) == relay.json.jsonText)
            #expect(relay.body(recordTexts: changes.map(\.jsonBytes)) == relay.body())
        }
    }

    static func scannedPush(_ text: String) -> PushRequest? {
        var text = text
        return text.withUTF8 { PushRequest.scanned($0) }
    }

    static func treePush(_ text: String) -> PushRequest? { try? PushRequest(json: JSONValue.parse(text)) }

    /// What the scanner reads, the tree decoders read the same; what they
    /// refuse, it refuses; the rare shapes it leaves to them (a repeated or
    /// unknown member, a record a page sets aside) it declines.
    @Test func theScannerReadsWhatTheTreeDecodersRead() {
        var random = SeededRandom.fromEnvironment(fallback: 20_261_125)
        print("WireTextTests scanner seed: \(random.seed) (re-run with BRSYNC_TEST_SEED=\(random.seed))")
        for round in 0..<200 {
            let count = Int.random(in: 1...4, using: &random)
            let changes = (0..<count).map { randomChange(&random, sequence: Int64(round * 10 + $0 + 1)) }
                .filter { Wire.problem(key: $0.key) == nil && Wire.problem(state: $0.state) == nil
                    && $0.state.versions.counters.keys.allSatisfy(HLCTimestamp.isValidDevice) }
            guard !changes.isEmpty else { continue }
            let renumbered = changes.enumerated().map { offset, change in
                ChangeRecord(sequence: Int64(offset + 1), collection: change.collection, key: change.key, state: change.state)
            }
            let push = PushRequest(device: "a1b2", from: 1, to: Int64(renumbered.count), changes: renumbered, since: 3, keyID: "fedcba9876543210")
            let text = String(decoding: push.body(), as: UTF8.self)
            #expect(Self.scannedPush(text) == push)
            #expect(Self.treePush(text) == push)
            for change in renumbered {
                let fields = RecordState.encodeFields(change.state.fields), versions = RecordState.encodeVersions(change.state.versions)
                #expect(RecordState.scanned(fieldsJSON: fields, versionsJSON: versions) == change.state)
                #expect((try? RecordState(fieldsJSON: fields, versionsJSON: versions)) == change.state)
                #expect(RecordState.scanned(fieldsJSON: fields + " x", versionsJSON: versions) == nil)
                #expect(RecordState.scanned(fieldsJSON: fields, versionsJSON: "[]") == nil)
            }
            let relay = RelayRequest(records: renumbered)
            #expect(relay.body().withUnsafeBufferPointer(RelayRequest.scanned) == relay)
            var page = PullResponse(changes: renumbered, next: 9, more: true, epoch: "e", clock: HLCTimestamp(wallMillis: 5, counter: 0, device: "server"),
                                    account: "acc")
            page.encrypted = true
            page.keyID = "fedcba9876543210"
            let pageText = page.json.jsonText
            let scannedPage = Array(pageText.utf8).withUnsafeBufferPointer(PullResponse.scanned)
            #expect(scannedPage == page)
            #expect(scannedPage == (try? PullResponse(json: JSONValue.parse(pageText))))
        }
        let change = #"{"collection":"rules","fields":{"pattern":{"s":"000001a20d32b246-00000001-abc","v":"zoom.us"}},"key":"zoom.us","seq":1,"versions":{"abc":1}}"#
        let good = #"{"changes":[\#(change)],"device":"abc","from":1,"to":1}"#
        #expect(Self.scannedPush(good) != nil && Self.scannedPush(good) == Self.treePush(good))
        #expect(Self.scannedPush(#"{"changes":[\#(change.replacingOccurrences(of: #""seq":1"#, with: #""seq":1.0"#))],"device":"abc","from":1,"to":1}"#) == Self.treePush(good))
        // Declined, and the tree decoder says why (or, for the rare shapes, reads it).
        let refused = [
            good + "x", String(good.dropLast()), good.replacingOccurrences(of: "\"from\":1", with: "\"from\":2"),
            good.replacingOccurrences(of: "000001a20d32b246-00000001-abc", with: "not a stamp"),
            good.replacingOccurrences(of: #""key":"zoom.us""#, with: #""key":"""#),
            good.replacingOccurrences(of: #""key":"zoom.us""#, with: #""key":"a\u0000b""#),
            good.replacingOccurrences(of: #""versions":{"abc":1}"#, with: #""versions":{"abc":-1}"#),
            good.replacingOccurrences(of: #""versions":{"abc":1}"#, with: #""versions":{"a b":1}"#),
            good.replacingOccurrences(of: #""collection":"rules""#, with: #""collection":"other""#),
            good.replacingOccurrences(of: #""v":"zoom.us""#, with: #""v":"\#(String(repeating: "x", count: Wire.maxValueBytes + 1))""#),
            good.replacingOccurrences(of: #""v":"zoom.us""#, with: #""v":\#(String(repeating: "[", count: 70))"#),
            good.replacingOccurrences(of: #""pattern":"#, with: #""":"#),
            good.replacingOccurrences(of: #"{"pattern":"#, with: "{" + (0...Wire.maxFields + 2).map { #""f\#($0)":{"s":"000001a20d32b246-00000001-abc","v":1},"# }.joined() + #""pattern":"#),
        ]
        for text in refused {
            #expect(Self.scannedPush(text) == nil, "\(text.prefix(120))")
            #expect(Self.treePush(text) == nil, "\(text.prefix(120))")
        }
        let leftToTheTree = [
            good.replacingOccurrences(of: #""device":"abc""#, with: #""device":"abc","device":"abc""#),
            good.replacingOccurrences(of: #""seq":1"#, with: #""seq":1,"note":true"#),
            good.replacingOccurrences(of: #""v":"zoom.us""#, with: #""v":"zoom.us","v":"zoom.us""#),
        ]
        for text in leftToTheTree {
            #expect(Self.scannedPush(text) == nil, "\(text.prefix(120))")
            #expect(Self.treePush(text) != nil, "\(text.prefix(120))")
        }
        // A page with one record that is not valid: the tree decoder sets it aside.
        let page = #"{"account":"a","changes":[\#(change),\#(change.replacingOccurrences(of: #""key":"zoom.us""#, with: #""key":"""#))],"clock":"000001a20d32b246-00000001-server","epoch":"e","more":false,"next":2}"#
        #expect(Array(page.utf8).withUnsafeBufferPointer(PullResponse.scanned) == nil)
        #expect((try? PullResponse(json: JSONValue.parse(page)))?.unusable.count == 1)
    }

    /// What the server of an encrypted account takes as a hidden key and a
    /// sealed value: the prefix, the base64url alphabet and the lengths.
    @Test func hiddenKeysAndSealedValuesHaveTheirExactForm() {
        let digits = String(repeating: "A", count: 40) + "z9-"
        #expect(Wire.isHiddenKey("h1." + digits))
        for key in ["h1." + digits.dropLast(), "h1." + digits + "_", "h2." + digits, "h1." + digits.dropLast() + "=", "h1." + digits.dropLast() + "é",
                    "", "h1.", "H1." + digits] {
            #expect(!Wire.isHiddenKey(key), "\(key)")
        }
        let sealed = "e1." + String(repeating: "Ab0_-", count: 8)
        #expect(Wire.isSealedValue(.string(sealed)) && Wire.isSealedValue(.string(sealed + String(repeating: "x", count: 5000))))
        for value: JSONValue in [.string(String(sealed.dropLast(3))), .string(sealed + "+"), .string(sealed + " "), .string("e2." + sealed.dropFirst(3)),
                                 .string(""), .int(1), .null, .object(["e1.": .string(sealed)])] {
            #expect(!Wire.isSealedValue(value), "\(value)")
        }
    }
}
