import JSON

/// The one reader of each sync message (a push, a relay, a pull page, a
/// stored record), straight from its text with ``JSONScanner``: a push of
/// 10,000 sealed rules is 11 MB, and building the ``JSONValue`` tree first
/// (eleven dictionaries a record) cost more than everything the server then
/// does with it.
///
/// Reading goes to the end of the text before anything is judged, so an
/// error in the JSON always wins over what the document means; what the
/// document means is then judged in a fixed order (the order the messages
/// below are listed in), so one document always gets the same message. A
/// repeated member counts once, its last value, and unknown members are read
/// and left alone, as RFC 8259 §4 lets a reader do.
extension Wire {
    /// Why a message could not be read.
    public enum ReadError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The text is not JSON (RFC 8259).
        case notJSON(JSONValue.ParseError)
        /// The text is JSON but not a valid message.
        case invalid(Problem)

        public var description: String {
            switch self {
            case .notJSON(let error): return "\(error)"
            case .invalid(let problem): return problem.message
            }
        }
    }

    /// Reads `text` with `read` (one of the `init(reading:)`s).
    public static func read<Message>(
        _ text: String, _ read: (UnsafeBufferPointer<UInt8>) throws(ReadError) -> Message
    ) throws(ReadError) -> Message {
        var text = text
        let result = text.withUTF8 { bytes in Result { () throws(ReadError) in try read(bytes) } }
        return try result.get()
    }

    /// `bytes` as a JSON object, for a small request read as a tree; not an
    /// object: `form`, the message that says what the body must be.
    static func object(_ bytes: UnsafeBufferPointer<UInt8>, else form: String) throws(ReadError) -> [String: JSONValue]
    {
        let json: JSONValue
        do { json = try JSONValue.parse(utf8: bytes) } catch { throw .notJSON(error) }
        guard case .object(let object) = json else { throw .invalid(Problem(form)) }
        return object
    }

    /// `bytes` as one document read by `read`, which must read one value.
    static func document<Value>(
        _ bytes: UnsafeBufferPointer<UInt8>, _ read: (inout JSONScanner) throws(JSONValue.ParseError) -> Value
    )
        throws(ReadError) -> Value
    {
        var scanner = JSONScanner(bytes)
        do {
            let value = try read(&scanner)
            try scanner.end()
            return value
        } catch {
            throw .notJSON(error)
        }
    }
}

/// What a part of a record read to, or what is wrong with it, worded once
/// the record's context ("change 7", "a stored record") is known.
enum Reading<Value> {
    case value(Value)
    case problem((_ context: String) -> String)

    func get(_ context: String) throws(Wire.Problem) -> Value {
        switch self {
        case .value(let value): return value
        case .problem(let message): throw Wire.Problem(message(context))
        }
    }
}

extension StampedValue {
    /// A register from its members `"s"` (the stamp) and `"v"` (the value);
    /// both nil when it is not an object.
    static func reading(stamp: JSONValue?, value: JSONValue?) -> Reading<StampedValue> {
        reading(parsedStamp: stamp?.stringValue.flatMap(HLCTimestamp.init(text:)), value: value)
    }

    /// The same, from the stamp as parsed (nil: absent or not a stamp).
    static func reading(parsedStamp: HLCTimestamp?, value: JSONValue?) -> Reading<StampedValue> {
        guard let value else { return .problem { "\($0) needs \"v\"" } }
        guard let parsedStamp else { return .problem { "\($0) needs \"s\", an HLC stamp (\(HLCTimestamp.form))" } }
        return .value(StampedValue(value, stamp: parsedStamp))
    }

    /// `{"s": STAMP, "v": VALUE}`.
    static func read(_ scanner: inout JSONScanner) throws(JSONValue.ParseError) -> Reading<StampedValue> {
        guard scanner.peek() == UInt8(ascii: "{") else {
            _ = try scanner.value()
            return reading(stamp: nil, value: nil)
        }
        var stamp: HLCTimestamp?
        var value: JSONValue?
        if try scanner.beginObject() {
            repeat {
                switch try scanner.name() {
                case "s":
                    // Parsed where it lies when it is a string (the stamp of every field of every record).
                    if scanner.peek() == UInt8(ascii: "\"") {
                        stamp = try scanner.withStringBytes { HLCTimestamp(utf8: $0) }
                    } else {
                        _ = try scanner.value()
                        stamp = nil
                    }
                case "v": value = try scanner.value()
                default: _ = try scanner.value()
                }
            } while try scanner.nextMember()
        }
        return reading(parsedStamp: stamp, value: value)
    }

    /// A register inside a tree already parsed (a push answer's conflicts).
    public init(json: JSONValue, context: String) throws(Wire.Problem) {
        guard case .object(let parts) = json else {
            self = try Self.reading(stamp: nil, value: nil).get(context)
            return
        }
        self = try Self.reading(stamp: parts["s"], value: parts["v"]).get(context)
    }
}

extension RecordState {
    /// `{"name": {"s": STAMP, "v": VALUE}, …}`: at most ``Wire/maxFields``
    /// fields (and encryption's own), each name and value within the limits.
    static func readFields(_ scanner: inout JSONScanner) throws(JSONValue.ParseError) -> FieldsReading {
        let limit = Wire.maxFields + Wire.maxSealedExtraFields
        let notFields: Reading<[String: StampedValue]> = .problem {
            "\($0) needs \"fields\", an object of at most \(Wire.maxFields) fields"
        }
        guard scanner.peek() == UInt8(ascii: "{") else {
            _ = try scanner.value()
            return FieldsReading(reading: notFields, flawed: nil)
        }
        var fields: [String: StampedValue] = [:]
        var problems: [String: (String) -> String] = [:]
        // Registers that are well formed but break a limit, and the names of those that are not.
        var flawed: [String: StampedValue] = [:]
        var malformed: Set<String> = []
        // Sealed format 2: the boxes, when the object starts with them.
        var grouping = BoxGrouping()
        var first = true
        if try scanner.beginObject() {
            repeat {
                let name = try scanner.name()
                defer { first = false }
                if try grouping.readBoxes(name: name, first: first, &scanner) { continue }
                guard fields.count + problems.count <= limit else {
                    _ = try scanner.value()
                    continue
                }
                let (register, twin) = try grouping.register(&scanner, name: name, fields: fields)
                // A repeated name counts once, its last value.
                if !problems.isEmpty {
                    problems[name] = nil
                    flawed[name] = nil
                    malformed.remove(name)
                }
                if name.isEmpty {
                    problems[name] = { "\($0) has a field with no name" }
                } else if let problem = Wire.problem(fieldName: name) {
                    problems[name] = { "\($0): \(problem)" }
                } else {
                    switch register {
                    case .problem(let message):
                        problems[name] = { message("field \"\(name)\" of \($0)") }
                    case .value(let stamped):
                        if let problem = Wire.problem(value: stamped.value) {
                            problems[name] = { "field \"\(name)\" of \($0): \(problem)" }
                        } else {
                            fields[name] = stamped
                        }
                    }
                }
                switch register {
                case .problem: malformed.insert(name)
                case .value(let stamped): if problems[name] != nil { flawed[name] = stamped }
                }
                if !problems.isEmpty, problems[name] != nil { fields[name] = nil }
                if let twin { fields[deletedTwinField] = twin }
            } while try scanner.nextMember()
        }
        if fields.count + problems.count > limit { return FieldsReading(reading: notFields, flawed: nil) }
        if let problem = grouping.problem { return FieldsReading(reading: problem, flawed: nil) }
        // Of several, the first by name: one document, one message.
        if let first = problems.min(by: { $0.key < $1.key }) {
            return FieldsReading(
                reading: .problem(first.value), flawed: malformed.isEmpty ? fields.merging(flawed) { $1 } : nil)
        }
        return FieldsReading(reading: .value(fields), flawed: nil)
    }

    /// What ``readFields(_:)`` read: the fields, or what is wrong with them.
    struct FieldsReading {
        var reading: Reading<[String: StampedValue]>
        /// When the fields break only limits (a name, a value's size or
        /// depth) but every register is well formed (a stamp and a value):
        /// all of them, the flawed too. It is what the change's digest
        /// covers, so a change refused for its content still continues its
        /// device's chain (see ``ChangeRecord/Unreadable``).
        var flawed: [String: StampedValue]?
    }

    /// `{"device": counter, …}`: at most ``Wire/maxVersionEntries`` devices.
    static func readVersions(_ scanner: inout JSONScanner) throws(JSONValue.ParseError) -> Reading<VersionVector> {
        guard scanner.peek() == UInt8(ascii: "{") else {
            _ = try scanner.value()
            return .problem { "\($0) needs \"versions\", an object" }
        }
        var counters: [String: UInt64] = [:]
        var problems: [String: (String) -> String] = [:]
        var tooMany = false
        if try scanner.beginObject() {
            repeat {
                let device = try scanner.name()
                let counter = try scanner.value()
                guard !tooMany else { continue }
                // A repeated device counts once, its last value.
                if !problems.isEmpty { problems[device] = nil }
                if !HLCTimestamp.isValidDevice(device) {
                    problems[device] = { "\($0): a version vector names an invalid device id" }
                } else if let value = counter.intValue, value >= 0 {
                    counters[device] = UInt64(value)
                } else {
                    problems[device] = { "\($0): version of \"\(device)\" must be a count" }
                }
                if !problems.isEmpty, problems[device] != nil { counters[device] = nil }
                tooMany = counters.count + problems.count > Wire.maxVersionEntries
            } while try scanner.nextMember()
        }
        if tooMany { return .problem { "\($0): a version vector has more than \(Wire.maxVersionEntries) devices" } }
        if let first = problems.min(by: { $0.key < $1.key }) { return .problem(first.value) }
        return .value(VersionVector(counters))
    }

    /// A state from what was read of its fields and versions, checked in
    /// that order, then the field count as a whole.
    static func make(
        fields: Reading<[String: StampedValue]>, versions: Reading<VersionVector>, context: String
    ) throws(Wire.Problem) -> RecordState {
        let state = RecordState(fields: try fields.get(context), versions: try versions.get(context))
        // Beyond maxFields, only encryption's own fields.
        if let problem = Wire.fieldCountProblem(state) { throw Wire.Problem("\(context): \(problem)") }
        return state
    }

    /// A state from the stored JSON text of its fields and versions (the
    /// wire's form, which the stores keep).
    public init(fieldsJSON: String, versionsJSON: String) throws(Wire.Problem) {
        var fieldsJSON = fieldsJSON
        let result = fieldsJSON.withUTF8 { bytes in
            Result { () throws(Wire.Problem) in try RecordState(fieldsUTF8: bytes, versionsJSON: versionsJSON) }
        }
        self = try result.get()
    }

    /// ``init(fieldsJSON:versionsJSON:)`` from the fields' UTF-8 bytes where
    /// they lie (a database row's), without copying them into a string first.
    public init(fieldsUTF8: UnsafeBufferPointer<UInt8>, versionsJSON: String) throws(Wire.Problem) {
        let fields: Reading<[String: StampedValue]>, versions: Reading<VersionVector>
        do throws(Wire.ReadError) {
            fields = try Wire.document(fieldsUTF8, Self.readFields).reading
            versions = try Wire.read(versionsJSON) { bytes throws(Wire.ReadError) in
                try Wire.document(bytes, Self.readVersions)
            }
        } catch {
            throw Wire.Problem("a stored record is not JSON: \(error)")
        }
        self = try Self.make(fields: fields, versions: versions, context: "a stored record")
    }
}

extension RecordState {
    /// The stamp of each field of a stored record's fields text (the wire's
    /// form, which a replica keeps), without reading the values (passed
    /// over, their structure checked): what the ledger checks compare, for
    /// every record held. Device ids are shared through `reader`.
    /// - Throws: when the text is not a fields object of registers with stamps.
    public static func fieldStamps(
        fieldsUTF8 bytes: UnsafeBufferPointer<UInt8>, reader: inout HLCTimestamp.Reader
    ) throws(Wire.Problem) -> [String: HLCTimestamp] {
        try registerStamps(fieldsUTF8: bytes, reader: &reader) { _, _ throws(JSONValue.ParseError) in false }
    }

    /// ``fieldStamps(fieldsUTF8:reader:)``, handing each register's value
    /// to `value` (the field's name, the scanner at the value): it reads
    /// the value and returns true, or returns false and the value is passed
    /// over.
    static func registerStamps(
        fieldsUTF8 bytes: UnsafeBufferPointer<UInt8>, reader: inout HLCTimestamp.Reader,
        value: (String, inout JSONScanner) throws(JSONValue.ParseError) -> Bool
    ) throws(Wire.Problem) -> [String: HLCTimestamp] {
        var scanner = JSONScanner(bytes)
        var stamps: [String: HLCTimestamp] = [:]
        // What is wrong with each field, by name. A name met twice is read
        // as the whole reader reads it: the last one counts (an earlier
        // one's problem goes with it), and so does a register's last "s".
        var problems: [String: String] = [:]
        // What is wrong with the text, or nil.
        func read() throws(JSONValue.ParseError) -> String? {
            guard scanner.peek() == UInt8(ascii: "{") else { return "a stored record's fields are not an object" }
            if try scanner.beginObject() {
                repeat {
                    let name = try scanner.name()
                    var shown: String { DisplayText.printable(name.prefix(40)) }
                    stamps[name] = nil
                    guard scanner.peek() == UInt8(ascii: "{") else {
                        problems[name] = "field \"\(shown)\" of a stored record is not a register"
                        try scanner.skipValue()
                        continue
                    }
                    var stamp: HLCTimestamp?
                    if try scanner.beginObject() {
                        repeat {
                            switch try scanner.name() {
                            case "s":
                                if scanner.peek() == UInt8(ascii: "\"") {
                                    stamp = try scanner.withStringBytes { reader.stamp(utf8: $0) }
                                } else {
                                    stamp = nil
                                    try scanner.skipValue()
                                }
                            case "v":
                                if try !value(name, &scanner) { try scanner.skipValue() }
                            default:
                                try scanner.skipValue()
                            }
                        } while try scanner.nextMember()
                    }
                    stamps[name] = stamp
                    problems[name] = stamp == nil ? "field \"\(shown)\" of a stored record has no stamp" : nil
                } while try scanner.nextMember()
            }
            try scanner.end()
            return problems.min { $0.key < $1.key }?.value
        }
        let problem: String?
        do throws(JSONValue.ParseError) {
            problem = try read()
        } catch {
            throw Wire.Problem("a stored record is not JSON: \(error)")
        }
        if let problem { throw Wire.Problem(problem) }
        return stamps
    }
}

extension Ledger {
    /// A ledger record's fields as a replica stores them, read for the
    /// checks without building a record: the stamp and value text of its
    /// `ledger` register, and the newest stamp of any register.
    public struct StoredFields: Sendable, Equatable {
        /// The `ledger` register's stamp, and its value as stored (the
        /// base64url text, no quotes), nil when there is none or it is no string.
        public var stamp: HLCTimestamp?
        public var text: [UInt8]?
        /// The newest stamp of any register of the record.
        public var newest: HLCTimestamp?

        public init(stamp: HLCTimestamp? = nil, text: [UInt8]? = nil, newest: HLCTimestamp? = nil) {
            self.stamp = stamp
            self.text = text
            self.newest = newest
        }

        /// Reads `{"NAME":{"s":STAMP,"v":VALUE},…}` as strictly as
        /// ``RecordState/fieldStamps(fieldsUTF8:reader:)`` does (every field
        /// a register with a stamp; of a name met twice, the last counts).
        public init(
            fieldsUTF8 bytes: UnsafeBufferPointer<UInt8>, reader: inout HLCTimestamp.Reader
        )
            throws(Wire.Problem)
        {
            var text: [UInt8]?
            let stamps = try RecordState.registerStamps(fieldsUTF8: bytes, reader: &reader) {
                name, scanner throws(JSONValue.ParseError) in
                guard name == Wire.ledgerField else { return false }
                guard scanner.peek() == UInt8(ascii: "\"") else {
                    text = nil
                    return false
                }
                text = try scanner.withStringBytes { Array($0) }
                return true
            }
            let stamp = stamps[Wire.ledgerField]
            self.init(stamp: stamp, text: stamp == nil ? nil : text, newest: stamps.values.max())
        }
    }
}

extension VersionVector {
    /// A version vector from its stored JSON text (``RecordState/encodeVersions(_:)``).
    public init(json: String) throws(Wire.Problem) {
        let reading: Reading<VersionVector>
        do throws(Wire.ReadError) {
            reading = try Wire.read(json) { bytes throws(Wire.ReadError) in
                try Wire.document(bytes, RecordState.readVersions)
            }
        } catch {
            throw Wire.Problem("a stored version vector is not JSON: \(error)")
        }
        self = try reading.get("a stored version vector")
    }
}

extension ChangeRecord {
    /// One change: `{"seq", "collection", "key", "fields", "versions"}`, or
    /// what is wrong with it, with its `"seq"` when it has one and what
    /// identifies it when it breaks only limits.
    static func read(_ scanner: inout JSONScanner) throws(JSONValue.ParseError) -> Result<ChangeRecord, ChangeProblem> {
        guard scanner.peek() == UInt8(ascii: "{") else {
            _ = try scanner.value()
            return .failure(ChangeProblem(sequence: nil, problem: Wire.Problem("a change must be an object")))
        }
        var sequence: JSONValue?, collection: JSONValue?, key: JSONValue?
        var fields = RecordState.FieldsReading(
            reading: .problem { "\($0) needs \"fields\", an object of at most \(Wire.maxFields) fields" },
            flawed: nil)
        var versions: Reading<VersionVector> = .problem { "\($0) needs \"versions\", an object" }
        var writer: Reading<VersionVector>?
        var fieldsText: String?
        var hasVersions = false
        if try scanner.beginObject() {
            repeat {
                switch try scanner.name() {
                case "seq": sequence = try scanner.value()
                case "collection": collection = try scanner.value()
                case "key": key = try scanner.value()
                case "fields": (fields, fieldsText) = try scanner.withText(RecordState.readFields)
                case "versions":
                    hasVersions = scanner.peek() == UInt8(ascii: "{")
                    versions = try RecordState.readVersions(&scanner)
                case "writer":
                    let isObject = scanner.peek() == UInt8(ascii: "{")
                    writer = try RecordState.readVersions(&scanner)
                    if !isObject { writer = .problem { "\($0): \"writer\" must be a version vector (an object)" } }
                default: _ = try scanner.value()
                }
            } while try scanner.nextMember()
        }
        let number = sequence?.intValue
        guard let number else {
            return .failure(ChangeProblem(sequence: nil, problem: Wire.Problem("a change needs \"seq\", a number")))
        }
        guard let name = collection?.stringValue, let collection = RecordCollection(rawValue: name) else {
            return .failure(
                ChangeProblem(
                    sequence: number,
                    problem: Wire.Problem("a change needs \"collection\": browsers, rules or settings")))
        }
        guard let key = key?.stringValue else {
            return .failure(ChangeProblem(sequence: number, problem: Wire.Problem("a change needs \"key\", a string")))
        }
        do throws(Wire.Problem) {
            // A relay's records carry no change number (0): named by their collection.
            let context = number == 0 ? "a relayed \(collection.rawValue) record" : "change \(number)"
            if let problem = Wire.problem(key: key) { throw Wire.Problem("\(context): \(problem)") }
            let state = try RecordState.make(fields: fields.reading, versions: versions, context: context)
            let writerVersions = try writer?.get(context)
            var change = ChangeRecord(
                sequence: number, collection: collection, key: key, state: state, writerVersions: writerVersions)
            // The text is kept only when it reads as the state whole (no field set aside as flawed).
            if fields.flawed == nil { change.fieldsText = fieldsText }
            return .success(change)
        } catch {
            // Well formed, over a limit: still identified by its digest.
            var registers = fields.flawed
            if case .value(let read) = fields.reading { registers = read }
            let unreadable =
                hasVersions
                ? registers.map {
                    Unreadable(
                        sequence: number, collection: collection, key: key, reason: error.message,
                        digest: ChangeRecord.digest(
                            collection: collection, key: key, fieldsText: RecordState.encodeFieldBytes($0)[...]))
                } : nil
            return .failure(ChangeProblem(sequence: number, problem: error, unreadable: unreadable))
        }
    }

    /// A change that is not valid: why, and its `"seq"` when it has one.
    struct ChangeProblem: Error {
        var sequence: Int64?
        var problem: Wire.Problem
        /// Set when the change is well formed and breaks only the limits
        /// (a key, a field's name or value, the number of fields or of
        /// versions): a push or relay refuses it alone.
        var unreadable: Unreadable? = nil
    }

    /// A change a push or relay carried that is well formed but over a
    /// limit (``Wire/maxKeyBytes``, ``Wire/maxValueBytes``, …): it is
    /// rejected alone, like a change whose record would be unusable, and
    /// its number counts as pushed. Its digest is taken from what was
    /// sent, the way its device took it, so the device's change chain goes
    /// on through it and a copied or restored home is still told apart.
    public struct Unreadable: Sendable, Equatable {
        public var sequence: Int64
        public var collection: RecordCollection
        public var key: String
        public var reason: String
        public var digest: String

        public var rejection: RejectedChange {
            RejectedChange(sequence: sequence, collection: collection, key: key, reason: reason)
        }
    }

    /// One change as a document of its own.
    public init(reading bytes: UnsafeBufferPointer<UInt8>) throws(Wire.ReadError) {
        switch try Wire.document(bytes, Self.read) {
        case .success(let change): self = change
        case .failure(let failure): throw .invalid(failure.problem)
        }
    }
}
