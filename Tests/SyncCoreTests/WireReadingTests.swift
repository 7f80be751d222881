import JSON
import Testing

@testable import SyncCore

/// The one reader of each message: what it reads, and for what it refuses,
/// the one message a user (or the server's 400) shows.
@Suite struct WireReadingTests {
    static let stamp = "000001a20d32b246-00000001-abc"
    static let change =
        #"{"collection":"rules","fields":{"pattern":{"s":"\#(stamp)","v":"zoom.us"}},"key":"zoom.us","seq":1,"versions":{"abc":1}}"#
    static let push = #"{"changes":[\#(change)],"device":"abc","from":1,"to":1}"#

    static func readPush(_ text: String) -> Result<PushRequest, Wire.ReadError> {
        Result { () throws(Wire.ReadError) in try Wire.read(text, PushRequest.init(reading:)) }
    }

    /// What reading `text` with `read` says is wrong, or nil when it reads.
    static func message<Message>(
        _ text: String, _ read: (UnsafeBufferPointer<UInt8>) throws(Wire.ReadError) -> Message
    ) -> String? {
        do throws(Wire.ReadError) {
            _ = try Wire.read(text, read)
            return nil
        } catch {
            return error.description
        }
    }

    static func message(_ text: String) -> String? { message(text, PushRequest.init(reading:)) }

    static func replacing(_ old: String, _ new: String) -> String {
        precondition(push.contains(old), old)
        return push.replacingOccurrences(of: old, with: new)
    }

    @Test func aValidPushReads() throws {
        let read = try Self.readPush(Self.push).get()
        #expect(read.device == "abc" && read.from == 1 && read.to == 1 && read.changes.count == 1)
        #expect(read.changes[0].state.fields["pattern"]?.value == .string("zoom.us"))
        // Shapes RFC 8259 allows a reader to take: a number written with a
        // fraction of zero, a repeated member (its last value), a member it
        // does not know.
        for text in [
            Self.replacing(#""seq":1"#, #""seq":1.0"#),
            Self.replacing(#""device":"abc""#, #""device":"xyz","device":"abc""#),
            Self.replacing(#""seq":1"#, #""seq":1,"note":{"any":[true]}"#),
            Self.replacing(#""v":"zoom.us""#, #""v":"other","v":"zoom.us""#),
            Self.replacing(#""pattern":{"#, #""pattern":{"s":"bad","v":1},"pattern":{"#),
        ] {
            #expect(try Self.readPush(text).get() == read, "\(text)")
        }
    }

    /// A row's message is the tree parser's (``JSONValue/parse(_:)``).
    static let notJSON = "not JSON"

    /// Each row: a push, and the message it is refused with. Where a document
    /// has several problems, the row says which one is named.
    static let refusals: [(String, String)] = [
        // Text that is not JSON is named so, whatever else is wrong, with
        // the tree parser's words and place.
        (push + "x", "invalid JSON at byte \(push.utf8.count): unexpected text after the value"),
        (String(push.dropLast()), "invalid JSON at byte \(push.utf8.count - 1): expected ',' or '}'"),
        (
            replacing(#""device":"abc""#, #""device":5"#).replacingOccurrences(of: #""to":1}"#, with: #""to":1,}"#),
            notJSON
        ),
        (replacing(#""v":"zoom.us""#, #""v":\#(String(repeating: "[", count: 70))"#), notJSON),
        (replacing(#""v":"zoom.us""#, #""v":"\#u{1}""#), notJSON),
        (replacing(#""key":"zoom.us""#, #""key":"\x""#), notJSON),
        ("[1]", "the push must be a JSON object"),
        (
            replacing(#""device":"abc""#, #""device":"a b""#),
            #"the push needs "device", this device's id (1 to 64 of A-Z a-z 0-9 . _ : -)"#
        ),
        // The device is named before the changes.
        (
            replacing(#""device":"abc""#, #""device":1"#).replacingOccurrences(
                of: #""key":"zoom.us""#, with: #""key":"""#),
            #"the push needs "device", this device's id (1 to 64 of A-Z a-z 0-9 . _ : -)"#
        ),
        (replacing(#""from":1"#, #""from":0"#), #"the push needs "from" and "to", with 1 <= from <= to"#),
        (replacing(#""changes":[\#(change)]"#, #""changes":{}"#), #"the push needs "changes", an array"#),
        (
            replacing(#""from":1"#, #""from":2"#).replacingOccurrences(of: #""to":1"#, with: #""to":3"#),
            #""from" 2 to "to" 3 is not the 1 change(s) sent"#
        ),
        (replacing(#""seq":1"#, #""seq":2"#), "the changes must be numbered 1 to 1, in order, with none missing"),
        (replacing(#"[\#(change)]"#, "[5]"), "a change must be an object"),
        (replacing(#""seq":1"#, #""seq":"1""#), #"a change needs "seq", a number"#),
        (
            replacing(#""collection":"rules""#, #""collection":"other""#),
            #"a change needs "collection": browsers, rules or settings"#
        ),
        (replacing(#""key":"zoom.us""#, #""key":7"#), #"a change needs "key", a string"#),
        // The key is named before the fields, the fields before the versions.
        (
            replacing(#""key":"zoom.us""#, #""key":"""#).replacingOccurrences(
                of: #""fields":{"#, with: #""fields":[],"x":{"#),
            "change 1: a key must be 1 to 2048 bytes"
        ),
        (
            replacing(#""fields":{"#, #""fields":[],"x":{"#).replacingOccurrences(
                of: #""versions":{"abc":1}"#, with: #""versions":1"#),
            #"change 1 needs "fields", an object of at most 64 fields"#
        ),
        (replacing(#""v":"zoom.us""#, #""value":"zoom.us""#), #"field "pattern" of change 1 needs "v""#),
        (
            replacing(#""pattern":{"s":"\#(stamp)","v":"zoom.us"}"#, #""pattern":"zoom.us""#),
            #"field "pattern" of change 1 needs "v""#
        ),
        (
            replacing(stamp, "not a stamp"),
            #"field "pattern" of change 1 needs "s", an HLC stamp ("# + HLCTimestamp.form + ")"
        ),
        // Of two bad fields, the first by name.
        (
            replacing(#""pattern":{"#, #""b":{"v":1},"a":{"s":1,"v":1},"pattern":{"#),
            #"field "a" of change 1 needs "s", an HLC stamp ("# + HLCTimestamp.form + ")"
        ),
        (
            replacing(
                #"{"pattern":"#,
                "{" + (0...Wire.maxFields + 2).map { #""f\#($0)":{"s":"\#(stamp)","v":1},"# }.joined() + #""pattern":"#),
            #"change 1 needs "fields", an object of at most 64 fields"#
        ),
        (replacing(#","versions":{"abc":1}"#, ""), #"change 1 needs "versions", an object"#),
        (replacing(#""to":1"#, #""to":1,"base":"xyz""#), #""base" must be a change digest (16 hex digits)"#),
        (replacing(#""to":1"#, #""to":1,"since":-1"#), #""since" must be a cursor (0 or more)"#),
        (
            replacing(#""to":1"#, #""to":1,"epoch":"\#(String(repeating: "e", count: 65))""#),
            #""epoch" is at most 64 bytes"#
        ),
        (replacing(#""to":1"#, #""to":1,"key":"K""#), #""key" must be an account key's id (16 hex digits)"#),
    ]

    /// Each row: a push whose one change is well formed but over a limit,
    /// and the reason it is rejected with. The push reads; the change is
    /// set aside alone (``PushRequest/unreadable``) with its number and the
    /// digest its device took of it, so the device's chain goes on.
    static let overLimits: [(String, String)] = [
        (replacing(#""key":"zoom.us""#, #""key":"""#), "change 1: a key must be 1 to 2048 bytes"),
        (replacing(#""key":"zoom.us""#, #""key":"a\u0000b""#), "change 1: a key must not contain control characters"),
        (replacing(#""pattern":"#, #""":"#), "change 1 has a field with no name"),
        (replacing(#""pattern":"#, #""a\u0001":"#), "change 1: a field name must not contain control characters"),
        (
            replacing(#""v":"zoom.us""#, #""v":"\#(String(repeating: "x", count: Wire.maxValueBytes + 1))""#),
            #"field "pattern" of change 1: a value is larger than 65536 bytes"#
        ),
        (
            replacing(
                #""v":"zoom.us""#, #""v":\#(String(repeating: "[", count: 20))\#(String(repeating: "]", count: 20))"#),
            #"field "pattern" of change 1: a value is nested deeper than 16 levels"#
        ),
        (
            replacing(
                #"{"pattern":"#,
                "{" + (0...Wire.maxFields).map { #""f\#($0)":{"s":"\#(stamp)","v":1},"# }.joined() + #""pattern":"#),
            "change 1: a record has more than 64 fields"
        ),
        (
            replacing(#""versions":{"abc":1}"#, #""versions":{"abc":-1}"#),
            #"change 1: version of "abc" must be a count"#
        ),
        (
            replacing(#""versions":{"abc":1}"#, #""versions":{"a b":1}"#),
            "change 1: a version vector names an invalid device id"
        ),
        (
            replacing(
                #""versions":{"abc":1}"#,
                #""versions":{"#
                    + (0...Wire.maxVersionEntries).map { #""d\#($0)":1"# }.joined(separator: ",") + "}"),
            "change 1: a version vector has more than 1024 devices"
        ),
    ]

    @Test(arguments: overLimits) func aChangeOverALimitIsSetAsideAlone(text: String, reason: String) throws {
        let read = try Self.readPush(text).get()
        #expect(
            read.changes.isEmpty && read.unreadable.map(\.reason) == [reason] && read.unreadable.map(\.sequence) == [1])
        // The digest is the one its device took, from the change as it was.
        let tree = try JSONValue.parse(text)
        guard case .object(let push) = tree, case .array(let changes)? = push["changes"],
            case .object(let change) = changes[0],
            case .object(let fields)? = change["fields"], case .string(let key)? = change["key"]
        else {
            Issue.record("not a push")
            return
        }
        var registers: [String: StampedValue] = [:]
        for (name, register) in fields { registers[name] = try StampedValue(json: register, context: "test") }
        let digest = ChangeRecord.digest(
            collection: .rules, key: key, fieldsText: RecordState.encodeFieldBytes(registers)[...])
        #expect(read.unreadable.first?.digest == digest)
        // Beside valid changes, only it is set aside, and the numbers still hold.
        let valid = Self.change.replacingOccurrences(of: #""seq":1"#, with: #""seq":2"#)
        let pair = text.replacingOccurrences(of: #"}],"device""#, with: #"},\#(valid)],"device""#).replacingOccurrences(
            of: #""to":1"#, with: #""to":2"#)
        let both = try Self.readPush(pair).get()
        #expect(both.changes.map(\.sequence) == [2] && both.unreadable.map(\.sequence) == [1], "\(pair.prefix(300))")
        // A later change that is not well formed still refuses the push whole.
        let broken = pair.replacingOccurrences(of: #""seq":2,"versions":{"abc":1}}"#, with: #""seq":2,"versions":7}"#)
        #expect(Self.message(broken) == #"change 2 needs "versions", an object"#)
    }

    @Test(arguments: refusals) func aPushIsRefusedWithOneMessage(text: String, message: String) {
        guard message == Self.notJSON else {
            #expect(Self.message(text) == message)
            return
        }
        #expect(throws: (any Error).self) { try JSONValue.parse(text) }
        do {
            _ = try JSONValue.parse(text)
        } catch {
            #expect(Self.message(text) == error.description)
        }
    }

    @Test func aPushHoldsAtMostItsLimit() {
        let many = (1...Wire.maxPushChanges + 1).map {
            Self.change.replacingOccurrences(of: #""seq":1"#, with: #""seq":\#($0)"#)
        }
        let text = #"{"changes":[\#(many.joined(separator: ","))],"device":"abc","from":1,"to":\#(many.count)}"#
        #expect(Self.message(text) == "a push holds at most 10000 changes")
    }

    @Test func aRelayIsRefusedWithOneMessage() {
        func message(_ text: String) -> String? { Self.message(text, RelayRequest.init(reading:)) }
        #expect(message(#"{"records":[\#(Self.change)]}"#) == nil)
        #expect(message(#"{"records":{}}"#) == #"a relay needs "records", an array"#)
        #expect(message("[]") == #"a relay needs "records", an array"#)
        #expect(message(#"{"records":[\#(Self.change),5]}"#) == "a change must be an object")
        #expect(message(#"{"records":[],"key":1}"#) == #""key" must be an account key's id (16 hex digits)"#)
    }

    /// A page sets aside the records it cannot use, with their sequence, and
    /// reads the rest; a page that is not one is refused as a whole.
    @Test func aPageSetsAsideWhatIsNotValid() throws {
        let bad = Self.change.replacingOccurrences(of: #""key":"zoom.us""#, with: #""key":"""#).replacingOccurrences(
            of: #""seq":1"#, with: #""seq":2"#)
        let page =
            #"{"account":"a","changes":[\#(Self.change),\#(bad),"x"],"clock":"000001a20d32b246-00000001-server","epoch":"e","more":false,"next":2}"#
        let read = try Wire.read(page, PullResponse.init(reading:))
        #expect(read.changes.count == 1 && read.next == 2 && read.account == "a" && !read.more)
        #expect(read.unusable.map(\.sequence) == [2, 0])
        #expect(
            read.unusable.map(\.reason) == ["change 2: a key must be 1 to 2048 bytes", "a change must be an object"])
        for notAPage in [
            "{}", "[]", page.replacingOccurrences(of: #""more":false"#, with: #""more":0"#),
            page.replacingOccurrences(of: "000001a20d32b246-00000001-server", with: "x"),
        ] {
            #expect(throws: Wire.ReadError.invalid(Wire.Problem("not a pull response"))) {
                try Wire.read(notAPage, PullResponse.init(reading:))
            }
        }
    }

    @Test func aStoredRecordSaysWhatIsWrong() throws {
        let fields = #"{"pattern":{"s":"\#(Self.stamp)","v":"zoom.us"}}"#
        #expect(
            try RecordState(fieldsJSON: fields, versionsJSON: #"{"abc":1}"#).fields["pattern"]?.value
                == .string("zoom.us"))
        #expect(throws: Wire.Problem("a stored record is not JSON: invalid JSON at byte 0: unexpected end of input")) {
            try RecordState(fieldsJSON: "", versionsJSON: "{}")
        }
        // Text that is not JSON wins over fields that are not valid.
        #expect(throws: Wire.Problem("a stored record is not JSON: invalid JSON at byte 1: expected a string key")) {
            try RecordState(fieldsJSON: "[]", versionsJSON: "{,}")
        }
        #expect(throws: Wire.Problem(#"a stored record needs "fields", an object of at most 64 fields"#)) {
            try RecordState(fieldsJSON: "[]", versionsJSON: "{}")
        }
        #expect(throws: Wire.Problem(#"a stored record needs "versions", an object"#)) {
            try RecordState(fieldsJSON: fields, versionsJSON: "[]")
        }
    }

    /// The ledger checks read only the stamps of a stored record's fields:
    /// the same stamps the whole reader reads, values of any shape passed
    /// over, and a clear error for text that is not registers.
    @Test func aStoredRecordsStampsReadAlone() throws {
        func stamps(_ text: String) throws(Wire.Problem) -> [String: HLCTimestamp] {
            var text = text
            var reader = HLCTimestamp.Reader()
            let result = text.withUTF8 { bytes in
                Result { () throws(Wire.Problem) in try RecordState.fieldStamps(fieldsUTF8: bytes, reader: &reader) }
            }
            return try result.get()
        }
        let other = "000001a2297e9f5b-00000003-laptop"
        let text = #"""
            { "a": {"v": {"x": [1, -2.5e3, true, null, "q\"u\u00e9"], "y": {}}, "s": "\#(Self.stamp)"},
              "b": {"s": "\#(other)", "v": "plain"}, "c": {"s": "\#(Self.stamp)", "v": [], "extra": false} }
            """#
        let read = try stamps(text)
        #expect(
            read == [
                "a": HLCTimestamp(text: Self.stamp)!, "b": HLCTimestamp(text: other)!,
                "c": HLCTimestamp(text: Self.stamp)!,
            ])
        let whole = try RecordState(
            fieldsJSON: #"{"a":{"s":"\#(Self.stamp)","v":{"x":[1]}},"b":{"s":"\#(other)","v":"p"}}"#, versionsJSON: "{}"
        )
        #expect(
            try stamps(#"{"a":{"s":"\#(Self.stamp)","v":{"x":[1]}},"b":{"s":"\#(other)","v":"p"}}"#)
                == whole.fields.mapValues(\.stamp))
        #expect(try stamps("{}").isEmpty)
        // A name met twice, as the whole reader reads it: the last counts,
        // an earlier one's problem with it (found by FuzzPushDecoder).
        for twice in [
            #"{"a":{"s":"nonsense","v":1},"a":{"s":"\#(other)","v":2}}"#,
            #"{"a":"v","a":{"s":"\#(other)","v":2}}"#,
            #"{"a":{"v":1},"a":{"s":"\#(other)","v":2},"b":{"s":"\#(Self.stamp)","v":3}}"#,
        ] {
            let state = try RecordState(fieldsJSON: twice, versionsJSON: "{}")
            #expect(try stamps(twice) == state.fields.mapValues(\.stamp), "\(twice)")
        }
        #expect(throws: Wire.Problem.self) { try stamps(#"{"a":{"s":"\#(other)","v":1},"a":{"v":2}}"#) }
        #expect(throws: Wire.Problem.self) { try stamps(#"{"a":{"s":"\#(other)","s":5,"v":1}}"#) }
        for (bad, why) in [
            ("", "a stored record's fields are not an object"),
            ("[]", "a stored record's fields are not an object"),
            (#"{"a":"v"}"#, #"field "a" of a stored record is not a register"#),
            (#"{"a":{"v":1}}"#, #"field "a" of a stored record has no stamp"#),
            (#"{"a":{"s":"yesterday","v":1}}"#, #"field "a" of a stored record has no stamp"#),
            (#"{"a":{"s":"\#(Self.stamp)","v":[1,}}"#, "a stored record is not JSON"),
            (#"{"a":{"s":"\#(Self.stamp)","v":"\#u{01}"}}"#, "a stored record is not JSON"),
            (#"{"a":{"s":"\#(Self.stamp)","v":1}} x"#, "a stored record is not JSON"),
            (String(repeating: "[", count: 80), "a stored record's fields are not an object"),
            (#"{"a":{"s":"\#(Self.stamp)","v":"# + String(repeating: "[", count: 80), "nested deeper than 64"),
        ] {
            #expect(throws: Wire.Problem.self, "\(bad)") { try stamps(bad) }
            do {
                _ = try stamps(bad)
            } catch {
                #expect(error.description.contains(why), "\(bad): \(error)")
            }
        }
    }

    @Test func anEncryptRequestSaysWhatIsWrong() throws {
        func message(_ text: String) -> String? { Self.message(text, EncryptRequest.init(reading:)) }
        let asked = EncryptRequest(keyID: "0123456789abcdef", replacing: "fedcba9876543210", seen: 12, account: "acct")
        #expect(
            try asked.body.withUnsafeBufferPointer { bytes throws(Wire.ReadError) in try EncryptRequest(reading: bytes)
            } == asked)
        let rows: [(String, String)] = [
            ("{", "invalid JSON at byte 1: expected a string key"),
            ("[]", #"the body must be {"key": ID} (an account key's id, 16 hex digits)"#),
            (#"{"key":"K"}"#, #"the body must be {"key": ID} (an account key's id, 16 hex digits)"#),
            (#"{"key":"0123456789abcdef","replaces":1}"#, #""replaces" must be an account key's id"#),
            (
                #"{"key":"0123456789abcdef","account":"\#(String(repeating: "a", count: 65))"}"#,
                #""account" must be an account id"#
            ),
            (
                #"{"key":"0123456789abcdef","seen":-1}"#,
                #""seen" must be an account sequence (a whole number, 0 or more)"#
            ),
        ]
        for (text, expected) in rows { #expect(message(text) == expected, "\(text)") }
    }
}
