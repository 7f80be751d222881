import Foundation
import JSON
import TestSupport
import Testing

@Suite struct JSONValueTests {
    static let documents: [(String, JSONValue)] = [
        ("null", .null),
        (" true ", .bool(true)),
        ("false", .bool(false)),
        ("0", .int(0)),
        ("-12", .int(-12)),
        ("9223372036854775807", .int(Int64.max)),
        ("1.5", .double(1.5)),
        ("-2e3", .double(-2000)),
        ("1E-2", .double(0.01)),
        ("\"\"", .string("")),
        (#""a\"b\\c\/d\n\t\u00e9\ud83d\ude00""#, .string("a\"b\\c/d\n\té😀")),
        ("\"ü 例\"", .string("ü 例")),
        ("[]", .array([])),
        ("[1, [2, []], {}]", .array([.int(1), .array([.int(2), .array([])]), .object([:])])),
        (
            #"{"b": {"s": "x", "v": null}, "a": [true]}"#,
            .object(["a": .array([.bool(true)]), "b": .object(["s": .string("x"), "v": .null])])
        ),
    ]

    @Test("parses", arguments: documents)
    func parses(_ row: (String, JSONValue)) throws {
        #expect(try JSONValue.parse(row.0) == row.1)
        // What it writes, it reads back.
        #expect(try JSONValue.parse(row.1.jsonText) == row.1)
    }

    static let invalid: [(String, String)] = [
        ("", "end of input"),
        ("nul", "end of input"),
        ("tru e", "unexpected"),
        ("01", "after the value"),
        ("1.", "after '.'"),
        ("-", "digits"),
        ("1e", "exponent"),
        ("[1,]", "unexpected character"),
        ("[1 2]", "expected ',' or ']'"),
        ("{\"a\" 1}", "expected ':'"),
        ("{a: 1}", "string key"),
        ("{\"a\": 1,}", "string key"),
        ("\"abc", "unterminated"),
        ("\"a\u{1}b\"", "control character"),
        (#""\x""#, "invalid escape"),
        (#""\ud800""#, "surrogate"),
        (#""\udc00x""#, "surrogate"),
        (#""\u12g4""#, "\\u escape"),
        ("[1] [2]", "after the value"),
        // Doubles that overflow to infinity cannot be written back (a fuzzer found one in a push).
        ("1E616", "out of range"),
        ("-1e400", "out of range"),
        ("[0.5e99999]", "out of range"),
        (String(repeating: "[", count: 600) + String(repeating: "]", count: 600), "deeper than 64"),
    ]

    @Test("rejects with the offset and reason", arguments: invalid)
    func rejects(_ row: (String, String)) {
        #expect {
            _ = try JSONValue.parse(row.0)
        } throws: { error in
            String(describing: error).contains(row.1)
        }
    }

    @Test func invalidUTF8IsRejected() {
        let bytes: [UInt8] = [0x22, 0xFF, 0xFE, 0x22]
        #expect(throws: JSONValue.ParseError.self) {
            _ = try bytes.withUnsafeBufferPointer { try JSONValue.parse(utf8: $0) }
        }
    }

    @Test func writerEscapesAndSortsKeys() {
        let value = JSONValue.object(["z": .string("a\"\u{1}\n"), "a": .double(.infinity), "m": .int(-3)])
        #expect(value.jsonText == #"{"a":null,"m":-3,"z":"a\"\u0001\n"}"#)
    }

    /// Random documents agree with Foundation's reader.
    @Test func agreesWithFoundation() throws {
        var random = SeededRandom.fromEnvironment(fallback: 4242)
        print("JSONValueTests seed: \(random.seed)")
        func make(_ depth: Int) -> JSONValue {
            switch Int.random(in: 0..<(depth > 3 ? 5 : 7), using: &random) {
            case 0: return .null
            case 1: return .bool(Bool.random(using: &random))
            case 2: return .int(Int64.random(in: -1_000_000...1_000_000, using: &random))
            case 3: return .double(Double(2 * Int.random(in: -1000...1000, using: &random) + 1) / 16) // never integral
            case 4:
                return .string(
                    String(
                        (0..<Int.random(in: 0..<8, using: &random)).map { _ in
                            "aZ\"\\/\n\té例😀 ".randomElement(using: &random)!
                        }))
            case 5: return .array((0..<Int.random(in: 0..<4, using: &random)).map { _ in make(depth + 1) })
            default:
                var members: [String: JSONValue] = [:]
                for index in 0..<Int.random(in: 0..<4, using: &random) { members["k\(index)"] = make(depth + 1) }
                return .object(members)
            }
        }
        for _ in 0..<500 {
            let value = make(0)
            let text = value.jsonText
            let foundation = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
            #expect(try JSONValue.parse(text) == foundation, "\(text), seed \(random.seed)")
        }
    }
}

/// `JSONValue(encoding:)` builds the tree straight from a value's `Codable`
/// form: the same value Foundation's encoder's text parses back to.
@Suite struct JSONValueEncodingTests {
    struct Inner: Codable, Equatable {
        var name: String
        var tags: [String]
        var score: Double?
    }

    struct Outer: Codable, Equatable {
        var id: Int
        var small: Int8
        var big: Int64
        var unsigned: UInt32
        var flag: Bool
        var missing: String?
        var present: String?
        var inner: Inner
        var list: [Inner]
        var map: [String: Int]
        var nested: [[Int]]
        var value: JSONValue
        var empty: [String]
        var emptyMap: [String: String]
    }

    static let sample = Outer(
        id: 7, small: -3, big: Int64.max, unsigned: 4_000_000_000, flag: true, missing: nil,
        present: "here \u{2028} \"quoted\"",
        inner: Inner(name: "a", tags: ["x", "y"], score: 1.5), list: [Inner(name: "b", tags: [], score: nil)],
        map: ["one": 1, "two": 2], nested: [[1, 2], [], [3]], value: .object(["k": .array([.null, .bool(false)])]),
        empty: [], emptyMap: [:])

    @Test func theTreeIsWhatFoundationsTextParsesBackTo() throws {
        let direct = try JSONValue(encoding: Self.sample)
        let text = try JSONEncoder().encode(Self.sample)
        let parsed = try text.withUnsafeBytes { try JSONValue.parse(utf8: $0.bindMemory(to: UInt8.self)) }
        #expect(direct == parsed)
        guard case .object(let members) = direct else { Issue.record("not an object: \(direct)"); return }
        #expect(members["missing"] == nil && members["present"] != nil, "an absent optional is left out")
        #expect(try JSONValue(encoding: [Self.sample.inner]) == .array([try JSONValue(encoding: Self.sample.inner)]))
        #expect(try JSONValue(encoding: "text") == .string("text"))
        #expect(try JSONValue(encoding: Optional<Int>.none) == .null)
    }

    @Test func numbersJSONCannotHoldAreRefused() {
        #expect(throws: EncodingError.self) { try JSONValue(encoding: [UInt64.max]) }
        #expect(throws: EncodingError.self) { try JSONValue(encoding: ["x": Double.nan]) }
        #expect(throws: EncodingError.self) { try JSONValue(encoding: Float.infinity) }
    }

    /// Every scalar the canonical text escapes is escaped whether or not the
    /// string holds anything else to escape (docs/protocol.md, "Canonical
    /// JSON"); object members go by their names' bytes.
    @Test func everyUnsafeScalarIsEscapedAlone() {
        for scalar in ["\u{61c}", "\u{180e}", "\u{feff}", "\u{200b}", "\u{2028}", "\u{85}", "\u{7f}"] {
            let text = JSONValue.string("a" + scalar + "b").jsonText
            #expect(!text.unicodeScalars.contains { $0.value >= 0x7F }, "\(text.unicodeScalars.map(\.value))")
        }
        #expect(JSONValue.string("\u{e9}\u{4e2d}").jsonText == "\"\u{e9}\u{4e2d}\"", "other scalars as they are")
        #expect(JSONValue.object(["f": .int(0), "e\u{301}": .int(1)]).jsonText == "{\"e\u{301}\":1,\"f\":0}")
    }
}
