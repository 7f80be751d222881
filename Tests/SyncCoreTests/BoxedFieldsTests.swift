import JSON
import Testing

@testable import SyncCore

/// Sealed format 2's grouped fields (docs/sealed-format-v2.md, "A record on
/// the wire and in the stores"): the same registers as format 1, each box
/// written once; what no writer makes refuses the push whole.
@Suite struct BoxedFieldsTests {
    static let early = HLCTimestamp(text: "000001a20d32b246-00000001-abc")!
    static let late = HLCTimestamp(text: "000001a20d32b300-00000000-def")!
    /// Two boxes' texts (their contents do not matter here: the grouping never opens them).
    static let boxA = "e2." + String(repeating: "A", count: 70)
    static let boxB = "e2." + String(repeating: "B", count: 64) + "-_"

    /// A record of two writes in boxes (the deletion flag with its twin in
    /// the later one) and a format 1 value kept from before.
    static let registers: [String: StampedValue] = [
        "pattern": StampedValue(.string(boxA), stamp: early),
        "browser": StampedValue(.string(boxB), stamp: late),
        "priority": StampedValue(.string("e1." + String(repeating: "x", count: 40)), stamp: early),
        "deleted": StampedValue(.bool(false), stamp: late),
        "e2e.deleted": StampedValue(.string(boxB), stamp: late),
        "e2e.key": StampedValue(.string(boxB), stamp: late),
        "e2e.manifest": StampedValue(.string(boxB), stamp: late),
    ]

    static func read(_ text: String) throws -> RecordState {
        try RecordState(fieldsJSON: text, versionsJSON: #"{"abc":1}"#)
    }

    @Test func boxesAreWrittenOnceAndReadAsTheRegistersTheyHold() throws {
        let text = RecordState.encodeFields(Self.registers)
        #expect(
            text
                == #"{"e2e.boxes":[{"s":"\#(Self.early)","b":"\#(Self.boxA)"},{"s":"\#(Self.late)","b":"\#(Self.boxB)"}],"browser":1,"deleted":{"v":false,"b":1},"e2e.key":1,"e2e.manifest":1,"pattern":0,"priority":{"s":"\#(Self.early)","v":"e1.\#(String(repeating: "x", count: 40))"}}"#
        )
        #expect(try Self.read(text).fields == Self.registers)
        // Without boxes, the text is format 1's, unchanged.
        let plain = Self.registers.filter { !RecordState.isBox($0.value.value) }
        #expect(!RecordState.encodeFields(plain).contains("e2e.boxes"))
    }

    /// A box stays exactly while a field names it: merged past, it is gone from the text.
    @Test func aBoxGoesWithTheLastFieldNamingIt() throws {
        let newer = HLCTimestamp(text: "000001a20d32b400-00000000-abc")!
        let boxC = "e2." + String(repeating: "C", count: 70)
        var rewrite = RecordState(
            fields: [
                "pattern": StampedValue(.string(boxC), stamp: newer),
                "priority": StampedValue(.string(boxC), stamp: newer),
            ], versions: VersionVector(["abc": 2]))
        let merged = RecordState(fields: Self.registers, versions: VersionVector(["abc": 1])).merged(with: rewrite)
            .state
        let text = RecordState.encodeFields(merged.fields)
        #expect(!text.contains(Self.boxA) && text.contains(Self.boxB) && text.contains(boxC))
        #expect(try Self.read(text).fields == merged.fields)
        // Two writes under one stamp (a copied home) keep both boxes, each field its own.
        rewrite.fields["pattern"] = StampedValue(.string(Self.boxA), stamp: newer)
        let both = RecordState.encodeFields(rewrite.fields)
        #expect(both.contains(Self.boxA) && both.contains(boxC))
        #expect(try Self.read(both).fields == rewrite.fields)
    }

    /// Each row: a fields text no writer makes, refused whole (the push is
    /// a 400, not one change set aside), whatever the rest holds.
    static let malformed: [String] = {
        let boxes = #""e2e.boxes":[{"s":"\#(early)","b":"\#(boxA)"}]"#
        return [
            // the boxes not first
            #"{"pattern":0,\#(boxes)}"#,
            // an index out of range
            #"{\#(boxes),"pattern":1}"#,
            #"{\#(boxes),"pattern":-1}"#,
            // a box no field names
            #"{\#(boxes),"pattern":{"s":"\#(early)","v":1}}"#,
            // no box
            #"{"e2e.boxes":[],"pattern":{"s":"\#(early)","v":1}}"#,
            #"{"e2e.boxes":{},"pattern":0}"#,
            // out of order
            #"{"e2e.boxes":[{"s":"\#(late)","b":"\#(boxA)"},{"s":"\#(early)","b":"\#(boxB)"}],"a":0,"b":1}"#,
            // twice
            #"{"e2e.boxes":[{"s":"\#(early)","b":"\#(boxA)"},{"s":"\#(early)","b":"\#(boxA)"}],"a":0,"b":1}"#,
            // not a box
            #"{"e2e.boxes":[{"s":"\#(early)","b":"e2.short"}],"a":0}"#,
            // a member too many
            #"{"e2e.boxes":[{"s":"\#(early)","b":"\#(boxA)","x":1}],"a":0}"#,
            #"{"e2e.boxes":[{"s":"bad","b":"\#(boxA)"}],"a":0}"#,
            // only the deletion flag names a box with a value
            #"{\#(boxes),"pattern":{"v":"x","b":0}}"#,
            #"{\#(boxes),"deleted":{"v":1,"b":0}}"#,
            // the twin twice
            #"{\#(boxes),"deleted":{"v":true,"b":0},"e2e.deleted":0}"#,
            #"{\#(boxes),"e2e.deleted":0,"deleted":{"v":true,"b":0}}"#,
            // fields out of their names' bytewise order, or named twice
            #"{\#(boxes),"pattern":0,"browser":0}"#,
            #"{\#(boxes),"pattern":0,"pattern":0}"#,
            #"{\#(boxes),"e\u0301":0,"\u00e9":0}"#,
            // a member of its own in a register
            #"{\#(boxes),"pattern":0,"x":{"s":"\#(early)","v":1,"y":2}}"#,
            #"{\#(boxes),"deleted":{"v":true,"b":0,"x":1}}"#,
            // a box as a register's value, not by its index
            #"{\#(boxes),"pattern":0,"x":{"s":"\#(early)","v":"\#(boxB)"}}"#,
        ]
    }()

    @Test(arguments: malformed) func boxesNoWriterMakesRefuseThePushWhole(fields: String) {
        let change =
            #"{"collection":"rules","fields":\#(fields),"key":"h1.x","seq":1,"versions":{"abc":1}}"#
        let push = #"{"changes":[\#(change)],"device":"abc","from":1,"to":1}"#
        #expect(throws: Wire.ReadError.self, "\(fields)") { try Wire.read(push, PushRequest.init(reading:)) }
        #expect(throws: Wire.Problem.self, "\(fields)") { try Self.read(fields) }
    }

    /// A box is larger than a value may be, up to a record's limit sealed.
    @Test func aBoxMayHoldAWholeRecord() throws {
        let large = "e2." + String(repeating: "Q", count: Wire.maxValueBytes * 2)
        let fields = ["pattern": StampedValue(.string(large), stamp: Self.early)]
        #expect(Wire.problem(value: .string(large)) == nil)
        #expect(try Self.read(RecordState.encodeFields(fields)).fields == fields)
        #expect(Wire.problem(value: .string("e2." + String(repeating: "Q", count: Wire.maxSealedBoxBytes))) != nil)
    }
}
