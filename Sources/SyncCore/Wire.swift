import JSON

/// The JSON of the sync protocol (`/v1/push`, `/v1/pull`), shared by client and
/// server, read and written with ``JSONValue``. See docs/protocol.md.
public enum Wire {
    /// The header of every answer that carries the server's wall clock, in
    /// milliseconds since 1970: each client learns its clock's offset from it.
    public static let timeHeader = "Brsync-Time"

    /// Why a document is not valid protocol JSON.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    /// Longest record key, in bytes.
    public static let maxKeyBytes = 2048
    /// Most fields in one record: in one change, and in a record after any merge.
    public static let maxFields = 64
    /// Longest field name, in bytes.
    public static let maxFieldNameBytes = 128
    /// Deepest nesting of arrays and objects inside one field value.
    public static let maxValueDepth = 16
    /// Largest field value, as compact JSON, in bytes.
    public static let maxValueBytes = 64 * 1024
    /// Largest sealed value (`e1.` and base64url; end-to-end encryption): the
    /// sealed form of any value within the limits above, whose JSON text may
    /// be up to 6 times its measured size (control characters escape to six
    /// bytes), with the nonce and the tag.
    public static let maxSealedValueBytes = 3 + 4 * ((7 * maxValueBytes + 28 + 2) / 3)
    /// Fields end-to-end encryption adds to a record (its sealed key, the
    /// deletion flag's sealed twin and its manifest), beyond ``maxFields``.
    public static let maxSealedExtraFields = 3
    /// Most devices in one version vector.
    public static let maxVersionEntries = 1024
    /// Most changes (or relayed records) in one request; clients send at most
    /// 1,000 per batch, and the body limit (8 MiB) bounds it too.
    public static let maxPushChanges = 10_000
    /// The most a record's fields may take as text (stored and sent: its
    /// JSON with escapes): a page of records, which a pull holds in memory
    /// until its client has read it, is never more than the page budget and
    /// one record.
    public static let maxRecordBytes = 512 * 1024

    /// Whether `text` is a change digest: 16 lower-case hex digits.
    public static func isDigest(_ text: String) -> Bool {
        text.utf8.count == 16 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// Why `key` cannot be a record key, or nil when it can: 1 to
    /// ``maxKeyBytes`` bytes, no control characters (a NUL would be cut by C
    /// APIs and make two keys one).
    public static func problem(key: String) -> String? {
        if key.isEmpty || key.utf8.count > maxKeyBytes { return "a key must be 1 to \(maxKeyBytes) bytes" }
        if key.unicodeScalars.contains(where: isControl) { return "a key must not contain control characters" }
        return nil
    }

    /// Why `name` cannot be a field name, or nil when it can.
    public static func problem(fieldName name: String) -> String? {
        if name.isEmpty || name.utf8.count > maxFieldNameBytes {
            return "a field name must be 1 to \(maxFieldNameBytes) bytes"
        }
        // Printable ASCII (nearly every name) is checked by its bytes; anything else scalar by scalar.
        let printable =
            name.utf8.withContiguousStorageIfAvailable { $0.allSatisfy { (0x20..<0x7F).contains($0) } } ?? false
        if !printable, name.unicodeScalars.contains(where: isControl) {
            return "a field name must not contain control characters"
        }
        return nil
    }

    /// Why `value` cannot be a field value, or nil when it can.
    public static func problem(value: JSONValue) -> String? {
        switch value {
        case .null, .bool, .int, .double: return nil
        case .string(let text):
            let count = text.utf8.count
            guard count > maxValueBytes else { return nil }
            // A sealed value is larger than what it seals.
            if count <= maxSealedValueBytes && text.hasPrefix("e1.") { return nil }
            // A box holds a whole write (sealed format 2).
            if count <= maxSealedBoxBytes && RecordState.isBox(value) { return nil }
            return "a value is larger than \(maxValueBytes) bytes"
        case .array, .object:
            if depth(of: value) > maxValueDepth { return "a value is nested deeper than \(maxValueDepth) levels" }
            if size(of: value, limit: maxValueBytes) > maxValueBytes {
                return "a value is larger than \(maxValueBytes) bytes"
            }
            return nil
        }
    }

    /// The bytes of a value's text and names (punctuation aside), stopping
    /// once past `limit`: a measure of size without writing the JSON.
    public static func size(of value: JSONValue, limit: Int) -> Int {
        switch value {
        case .null, .bool, .int, .double: return 8
        case .string(let text): return text.utf8.count + 2
        case .array(let items):
            var total = 2
            for item in items where total <= limit { total += size(of: item, limit: limit) + 1 }
            return total
        case .object(let members):
            var total = 2
            for (name, item) in members where total <= limit {
                total += name.utf8.count + 4 + size(of: item, limit: limit)
            }
            return total
        }
    }

    /// Why `state` cannot be stored as one record, or nil when it can (checked
    /// on every record received and on every merge result).
    public static func problem(state: RecordState) -> String? {
        if let problem = fieldCountProblem(state) { return problem }
        if let problem = recordSizeProblem(state) { return problem }
        for (name, register) in state.fields {
            if let problem = problem(fieldName: name) { return problem }
            if let problem = problem(value: register.value) { return "field \"\(name)\": \(problem)" }
        }
        if state.versions.counters.count > maxVersionEntries {
            return "a version vector has more than \(maxVersionEntries) devices"
        }
        return nil
    }

    /// Why `state` has too many fields, or nil: at most ``maxFields``, and
    /// the fields end-to-end encryption adds (names starting `e2e.`) on top.
    public static func fieldCountProblem(_ state: RecordState) -> String? {
        let count = state.fields.count
        if count <= maxFields { return nil }
        if count > maxFields + maxSealedExtraFields
            || state.fields.keys.filter({ $0.hasPrefix("e2e.") }).count < count - maxFields
        {
            return "a record has more than \(maxFields) fields"
        }
        return nil
    }

    /// Why `state`'s fields are too large as text (``maxRecordBytes``), or
    /// nil. Records are small: a bound that writes nothing (every byte of a
    /// string escaped, six bytes each) settles almost all; the text is
    /// written only past it. A box (base64url, nothing escaped) is written
    /// once however many fields name it.
    public static func recordSizeProblem(_ state: RecordState) -> String? {
        var bound = 2
        var boxes = Set<RecordState.BoxKey>()
        for (name, register) in state.fields where bound <= maxRecordBytes {
            bound += 6 * name.utf8.count + 64
            // A box counted already (the fields of one write name one box).
            if !boxes.isEmpty, boxes.contains(RecordState.BoxKey(register)) { continue }
            if RecordState.isBox(register.value) {
                // `"e2e.boxes":[…]` once, and `{"s":STAMP,"b":TEXT}` once a box (the 64 above holds the stamp).
                if boxes.isEmpty { bound += 32 }
                boxes.insert(RecordState.BoxKey(register))
                bound += 64 + size(of: register.value, limit: maxRecordBytes)
            } else {
                bound += 6 * size(of: register.value, limit: maxRecordBytes)
            }
        }
        guard bound > maxRecordBytes else { return nil }
        return recordSizeProblem(textBytes: RecordState.encodeFieldBytes(state.fields).count)
    }

    /// ``recordSizeProblem(_:)`` from the length of the fields' text as
    /// ``RecordState/encodeFields(_:)`` writes it, for a caller that wrote it
    /// already (never a text as a client sent it, which may be shorter).
    public static func recordSizeProblem(textBytes: Int) -> String? {
        textBytes > maxRecordBytes ? "a record's fields are larger than \(maxRecordBytes / 1024) KiB as text" : nil
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// Nesting depth, stopping one level past the limit (the walk is bounded
    /// whatever the value).
    static func depth(of value: JSONValue, limit: Int = maxValueDepth + 1) -> Int {
        guard limit > 0 else { return 1 }
        switch value {
        case .array(let items): return 1 + (items.lazy.map { depth(of: $0, limit: limit - 1) }.max() ?? 0)
        case .object(let members): return 1 + (members.values.lazy.map { depth(of: $0, limit: limit - 1) }.max() ?? 0)
        default: return 0
        }
    }
}
