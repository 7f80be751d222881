import JSON

/// Sealed format 2's grouping (docs/sealed-format-v2.md, "A record on the
/// wire and in the stores"). A box is one write of a record sealed once;
/// every field it holds is the register (the box's stamp, the box's text),
/// so the merge, the limits and the checks see the same registers as in
/// format 1. Only the text groups them: the fields object starts with the
/// member `e2e.boxes`, each box once with its stamp, and a field naming a
/// box is its index; `deleted` with its sealed twin in a box is
/// `{"v": BOOL, "b": INDEX}`.
extension RecordState {
    /// The member of a fields object that lists its boxes.
    public static let boxesMember = "e2e.boxes"
    /// The sealed twin of the deletion flag.
    public static let deletedTwinField = "e2e.deleted"
    /// How a box's text starts.
    public static let boxPrefix = "e2."
    /// The fewest bytes a box's text has: the prefix and 60 base64url
    /// characters (a nonce, a tag and the smallest write, sealed).
    static let minimumBoxBytes = 63

    /// Whether `value` is a box's text: ``boxPrefix`` and at least 60
    /// base64url characters; nothing readable a user writes looks like one.
    public static func isBox(_ value: JSONValue) -> Bool {
        // Most values are short or readable: settled by the count and the first byte, no copy.
        guard case .string(let text) = value, text.utf8.count >= minimumBoxBytes,
            text.utf8.first == UInt8(ascii: "e")
        else { return false }
        return text.utf8.withContiguousStorageIfAvailable(isBoxText)
            ?? Array(text.utf8).withUnsafeBufferPointer(isBoxText)
    }

    /// ``isBox(_:)`` of a string's UTF-8 bytes.
    static func isBoxText(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        utf8.count >= minimumBoxBytes && utf8.starts(with: boxPrefix.utf8)
            && Wire.allBase64URL(UnsafeBufferPointer(rebasing: utf8[boxPrefix.utf8.count...]))
    }

    /// A box's register as a set member or dictionary key: hashed by its
    /// stamp alone (a record's boxes have a stamp each, mostly, and a box's
    /// text is hundreds of bytes that a hash would read for every field
    /// naming it), equal when stamp and text are.
    public struct BoxKey: Hashable, Sendable {
        public let register: StampedValue

        public init(_ register: StampedValue) { self.register = register }

        public func hash(into hasher: inout Hasher) { hasher.combine(register.stamp) }

        public static func == (a: BoxKey, b: BoxKey) -> Bool { a.register == b.register }
    }

    /// The boxes `fields` hold, each once, ascending by stamp then text bytewise.
    static func boxes(of fields: [String: StampedValue]) -> [StampedValue] {
        // A record holds a box or two: a list searched by stamp first beats
        // hashing, and each box's text is read once (``isBox(_:)``).
        var boxes: [StampedValue] = []
        for register in fields.values
        where !boxes.contains(where: { $0.stamp == register.stamp && $0.value == register.value })
            && isBox(register.value)
        {
            boxes.append(register)
        }
        return boxes.sorted { a, b in
            if a.stamp != b.stamp { return a.stamp < b.stamp }
            return a.value.stringValue!.utf8.lexicographicallyPrecedes(b.value.stringValue!.utf8)
        }
    }

    /// Whether `deleted` is written with its twin's box (``writeFields(_:into:)``).
    static func deletedInBox(_ fields: [String: StampedValue]) -> Bool {
        guard let flag = fields[deletedField], case .bool = flag.value, let twin = fields[deletedTwinField] else {
            return false
        }
        return twin.stamp == flag.stamp && isBox(twin.value)
    }

    /// Appends the grouped fields object of `fields`, which hold `boxes`
    /// (``boxes(of:)``, not empty).
    static func writeBoxedFields(
        _ fields: [String: StampedValue], boxes: [StampedValue], into output: inout [UInt8]
    ) {
        var stamps = HLCTimestamp.TextCache()
        // `{"s":STAMP,"MEMBER":VALUE}`: a box (member `b`), or a register as format 1 writes it (`v`).
        func append(_ register: StampedValue, as member: StaticString) {
            output += #"{"s":""#.utf8
            output += stamps.text(of: register.stamp)
            output += #"",""#.utf8
            output += UnsafeBufferPointer(start: member.utf8Start, count: member.utf8CodeUnitCount)
            output += #"":"#.utf8
            register.value.write(into: &output)
            output.append(UInt8(ascii: "}"))
        }
        output += #"{"e2e.boxes":["#.utf8
        // A field's box by stamp first (a record holds a box or two).
        func index(of register: StampedValue) -> Int? {
            boxes.firstIndex { $0.stamp == register.stamp && $0.value == register.value }
        }
        for (position, box) in boxes.enumerated() {
            if position > 0 { output.append(UInt8(ascii: ",")) }
            append(box, as: "b")
        }
        output.append(UInt8(ascii: "]"))
        let coupled = deletedInBox(fields)
        for name in fields.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        where !(coupled && name == deletedTwinField) {
            let register = fields[name]! // name comes from fields.keys
            output.append(UInt8(ascii: ","))
            JSONValue.writeString(name, into: &output)
            output.append(UInt8(ascii: ":"))
            if coupled && name == deletedField {
                output += #"{"v":"#.utf8
                register.value.write(into: &output)
                output += #","b":"#.utf8
                output += String(index(of: fields[deletedTwinField]!)!).utf8
                output.append(UInt8(ascii: "}"))
            } else if let position = index(of: register) {
                output += String(position).utf8
            } else {
                append(register, as: "v")
            }
        }
        output.append(UInt8(ascii: "}"))
    }

    /// Reads a fields object's `e2e.boxes` member (its first): a non-empty
    /// array of `{"s": STAMP, "b": BOX}`, ascending by stamp then text, each
    /// once; nil when it is not that (the change is not well formed).
    static func readBoxes(_ scanner: inout JSONScanner) throws(JSONValue.ParseError) -> [StampedValue]? {
        guard scanner.peek() == UInt8(ascii: "[") else {
            try scanner.skipValue()
            return nil
        }
        var boxes: [StampedValue] = []
        var wellFormed = true
        if try scanner.beginArray() {
            repeat {
                guard wellFormed, boxes.count < Wire.maxFields, scanner.peek() == UInt8(ascii: "{") else {
                    wellFormed = false
                    try scanner.skipValue()
                    continue
                }
                var stamp: HLCTimestamp?, text: String?, members = 0
                if try scanner.beginObject() {
                    repeat {
                        members += 1
                        switch try scanner.name() {
                        case "s" where scanner.peek() == UInt8(ascii: "\""):
                            stamp = try scanner.withStringBytes { HLCTimestamp(utf8: $0) }
                        case "b" where scanner.peek() == UInt8(ascii: "\""):
                            text = try scanner.string()
                        default:
                            try scanner.skipValue()
                            wellFormed = false
                        }
                    } while try scanner.nextMember()
                }
                guard let stamp, let text, members == 2, text.utf8.count <= Wire.maxSealedBoxBytes,
                    isBox(.string(text))
                else {
                    wellFormed = false
                    continue
                }
                let box = StampedValue(.string(text), stamp: stamp)
                if let last = boxes.last,
                    last.stamp > stamp
                        || (last.stamp == stamp
                            && !last.value.stringValue!.utf8.lexicographicallyPrecedes(text.utf8))
                {
                    wellFormed = false
                }
                boxes.append(box)
            } while try scanner.nextElement()
        }
        return wellFormed && !boxes.isEmpty ? boxes : nil
    }

    /// A field of a grouped fields object: a box's index, or
    /// `{"v": VALUE, "b": INDEX}` (the deletion flag with its twin in the
    /// box), or a register as format 1 writes it. `used` marks the boxes
    /// named; `stray` is set for what no writer makes: a member other than
    /// those, or a box written as a register's value instead of by its index.
    static func readBoxedRegister(
        _ scanner: inout JSONScanner, name: String, boxes: [StampedValue], used: inout [Bool], stray: inout Bool
    ) throws(JSONValue.ParseError) -> (register: Reading<StampedValue>, twin: StampedValue?) {
        func box(_ value: JSONValue?) -> StampedValue? {
            guard let index = value?.intValue, index >= 0, index < boxes.count else { return nil }
            let position = Int(index)
            used[position] = true
            return boxes[position]
        }
        let notABox: Reading<StampedValue> = .problem { "field \"\(name)\" of \($0) names no box of its record" }
        switch scanner.peek() {
        case UInt8(ascii: "{"):
            var stamp: JSONValue?, value: JSONValue?, index: JSONValue?
            if try scanner.beginObject() {
                repeat {
                    switch try scanner.name() {
                    case "s": stamp = try scanner.value()
                    case "v": value = try scanner.value()
                    case "b": index = try scanner.value()
                    default:
                        try scanner.skipValue()
                        stray = true
                    }
                } while try scanner.nextMember()
            }
            guard let index else {
                if let value, isBox(value) { stray = true }
                return (StampedValue.reading(stamp: stamp, value: value), nil)
            }
            guard name == deletedField, stamp == nil, case .bool? = value, let twin = box(index) else {
                return (notABox, nil)
            }
            return (.value(StampedValue(value!, stamp: twin.stamp)), twin)
        case let first? where first == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first):
            guard let register = box(try scanner.value()) else { return (notABox, nil) }
            return (.value(register), nil)
        default:
            _ = try scanner.value()
            return (StampedValue.reading(stamp: nil, value: nil), nil)
        }
    }
}

extension RecordState {
    /// What a fields object's reader knows of its boxes (sealed format 2).
    struct BoxGrouping {
        /// The boxes, when the object starts with them.
        private var boxes: [StampedValue]?
        /// Which boxes a field named.
        private var used: [Bool] = []
        /// Something no writer makes: boxes not well formed or out of order,
        /// listed twice, or a twin written twice; fields out of order (by
        /// their names' bytes) or named twice; a register with a member of
        /// its own, or a box as a register's value.
        private var broken = false
        /// The last field's name read after the boxes.
        private var lastName: String?

        /// Reads member `name` as the boxes when it is them (the object's
        /// `first`); false, reading nothing, when it is a field.
        mutating func readBoxes(
            name: String, first: Bool, _ scanner: inout JSONScanner
        ) throws(JSONValue.ParseError)
            -> Bool
        {
            guard name == boxesMember else { return false }
            if first {
                boxes = try RecordState.readBoxes(&scanner)
                used = Array(repeating: false, count: boxes?.count ?? 0)
                broken = boxes == nil
            } else {
                broken = true
                try scanner.skipValue()
            }
            return true
        }

        /// Field `name`'s register (as format 2 or format 1 writes it), and
        /// the deletion flag's twin when the flag names its box; `fields`: those read so far.
        mutating func register(
            _ scanner: inout JSONScanner, name: String, fields: [String: StampedValue]
        ) throws(JSONValue.ParseError) -> (Reading<StampedValue>, twin: StampedValue?) {
            guard let boxes else { return (try StampedValue.read(&scanner), nil) }
            // In order by bytes, and once even as Swift compares names (canonical equivalents are one key).
            if let lastName, !lastName.utf8.lexicographicallyPrecedes(name.utf8) || fields[name] != nil {
                broken = true
            }
            lastName = name
            let (register, twin) = try readBoxedRegister(
                &scanner, name: name, boxes: boxes, used: &used, stray: &broken)
            // The twin once: with its flag, or by itself.
            if (twin != nil || name == deletedTwinField) && fields[deletedTwinField] != nil { broken = true }
            return (register, twin)
        }

        /// What is wrong with the boxes once the object is read (one named by
        /// no field too), or nil. No writer makes it: the push is refused whole.
        var problem: Reading<[String: StampedValue]>? {
            guard broken || used.contains(false) else { return nil }
            return .problem { "\($0): its boxes (\(boxesMember)) are not a list of {\"s\", \"b\"} named by its fields" }
        }
    }
}

extension Wire {
    /// The longest box text: a record's fields (``maxRecordBytes``), sealed and in base64url.
    public static let maxSealedBoxBytes = 3 + 4 * ((maxRecordBytes + 28 + 2) / 3)
}
