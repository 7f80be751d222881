import Model

/// Pushes and pull pages read straight from their text with ``JSONScanner``:
/// a push of 10,000 sealed rules is 11 MB, and building the ``JSONValue``
/// tree first (eleven dictionaries a record) cost more than everything the
/// server then does with it.
///
/// These readers accept exactly what the ``JSONValue`` decoders accept and
/// give the same values: they check the same limits with the same functions.
/// They decline (nil) anything else: an error, and also what the tree
/// decoders take but that is rare (an unknown or repeated member, a
/// malformed record the pull sets aside). The caller then reads the text
/// through ``JSONValue``, whose decoders say what is wrong. The fuzz target
/// `FuzzPushDecoder` checks both ways on every input it makes.
struct Declined: Error {}

extension ChangeRecord {
    /// One change in the shape ``init(json:)`` reads.
    static func scan(_ scanner: inout JSONScanner) throws -> ChangeRecord {
        var sequence: Int64?
        var collection: RecordCollection?
        var key: String?
        var fields: [String: StampedValue]?
        var versions: VersionVector?
        guard try scanner.beginObject() else { throw Declined() }
        repeat {
            switch try scanner.name() {
            case "seq":
                guard sequence == nil, let value = try scanner.value().intValue else { throw Declined() }
                sequence = value
            case "collection":
                guard collection == nil, let value = RecordCollection(rawValue: try scanner.string()) else { throw Declined() }
                collection = value
            case "key":
                guard key == nil else { throw Declined() }
                let value = try scanner.string()
                guard Wire.problem(key: value) == nil else { throw Declined() }
                key = value
            case "fields":
                guard fields == nil else { throw Declined() }
                fields = try scanFields(&scanner)
            case "versions":
                guard versions == nil else { throw Declined() }
                versions = try scanVersions(&scanner)
            default:
                throw Declined()
            }
        } while try scanner.nextMember()
        guard let sequence, let collection, let key, let fields, let versions else { throw Declined() }
        let state = RecordState(fields: fields, versions: versions)
        guard Wire.fieldCountProblem(state) == nil else { throw Declined() }
        return ChangeRecord(sequence: sequence, collection: collection, key: key, state: state)
    }

    /// `{"name": {"s": STAMP, "v": VALUE}, …}`, checked as ``RecordState/init(fields:versions:context:)`` checks it.
    static func scanFields(_ scanner: inout JSONScanner) throws -> [String: StampedValue] {
        var fields: [String: StampedValue] = [:]
        guard try scanner.beginObject() else { return fields }
        repeat {
            let name = try scanner.name()
            guard fields[name] == nil, fields.count < Wire.maxFields + Wire.maxSealedExtraFields, !name.isEmpty,
                  Wire.problem(fieldName: name) == nil
            else { throw Declined() }
            var stamp: HLCTimestamp?
            var value: JSONValue?
            guard try scanner.beginObject() else { throw Declined() }
            repeat {
                switch try scanner.name() {
                case "s":
                    guard stamp == nil, let parsed = HLCTimestamp(text: try scanner.string()) else { throw Declined() }
                    stamp = parsed
                case "v":
                    guard value == nil else { throw Declined() }
                    value = try scanner.value()
                default:
                    throw Declined()
                }
            } while try scanner.nextMember()
            guard let stamp, let value, Wire.problem(value: value) == nil else { throw Declined() }
            fields[name] = StampedValue(value, stamp: stamp)
        } while try scanner.nextMember()
        return fields
    }

    /// `{"device": counter, …}`.
    static func scanVersions(_ scanner: inout JSONScanner) throws -> VersionVector {
        var counters: [String: UInt64] = [:]
        guard try scanner.beginObject() else { return VersionVector(counters) }
        repeat {
            let device = try scanner.name()
            guard counters[device] == nil, counters.count < Wire.maxVersionEntries, HLCTimestamp.isValidDevice(device),
                  let value = try scanner.value().intValue, value >= 0
            else { throw Declined() }
            counters[device] = UInt64(value)
        } while try scanner.nextMember()
        return VersionVector(counters)
    }

    /// `[change, …]`.
    static func scanArray(_ scanner: inout JSONScanner, limit: Int) throws -> [ChangeRecord] {
        var changes: [ChangeRecord] = []
        guard try scanner.beginArray() else { return changes }
        repeat {
            guard changes.count < limit else { throw Declined() }
            changes.append(try scan(&scanner))
        } while try scanner.nextElement()
        return changes
    }

    /// A document's members, `changesName` read as changes and the others as
    /// values (each at most once).
    static func scanDocument(_ bytes: UnsafeBufferPointer<UInt8>, changesName: String, limit: Int) throws
        -> (object: [String: JSONValue], changes: [ChangeRecord]) {
        var scanner = JSONScanner(bytes)
        var object: [String: JSONValue] = [:]
        var changes: [ChangeRecord]?
        if try scanner.beginObject() {
            repeat {
                let name = try scanner.name()
                if name == changesName {
                    guard changes == nil else { throw Declined() }
                    changes = try scanArray(&scanner, limit: limit)
                } else {
                    guard object[name] == nil else { throw Declined() }
                    object[name] = try scanner.value()
                }
            } while try scanner.nextMember()
        }
        try scanner.end()
        guard let changes else { throw Declined() }
        return (object, changes)
    }
}

extension RecordState {
    /// A stored record's fields and versions read with ``JSONScanner``, or
    /// nil for what ``init(fields:versions:context:)`` would refuse or read
    /// otherwise.
    public static func scanned(fieldsJSON: String, versionsJSON: String) -> RecordState? {
        func document<T>(_ text: String, _ read: (inout JSONScanner) throws -> T) -> T? {
            var text = text
            return text.withUTF8 { bytes in
                var scanner = JSONScanner(bytes)
                guard let value = try? read(&scanner), (try? scanner.end()) != nil else { return nil }
                return value
            }
        }
        guard let fields = document(fieldsJSON, ChangeRecord.scanFields), let versions = document(versionsJSON, ChangeRecord.scanVersions) else {
            return nil
        }
        let state = RecordState(fields: fields, versions: versions)
        return Wire.fieldCountProblem(state) == nil ? state : nil
    }
}

extension PushRequest {
    /// The push in `bytes` read without the ``JSONValue`` tree, or nil when
    /// it is not a valid push or is one of the rare shapes left to
    /// ``init(json:)`` (which then says what is wrong).
    public static func scanned(_ bytes: UnsafeBufferPointer<UInt8>) -> PushRequest? {
        guard let (object, changes) = try? ChangeRecord.scanDocument(bytes, changesName: "changes", limit: Wire.maxPushChanges) else { return nil }
        return try? PushRequest(object: object, scanned: changes)
    }
}

extension RelayRequest {
    /// As ``PushRequest/scanned(_:)``, for a relay.
    public static func scanned(_ bytes: UnsafeBufferPointer<UInt8>) -> RelayRequest? {
        guard let (object, records) = try? ChangeRecord.scanDocument(bytes, changesName: "records", limit: Wire.maxPushChanges) else { return nil }
        do {
            return RelayRequest(records: records, keyID: try Wire.keyID(in: object))
        } catch {
            return nil
        }
    }
}

extension PullResponse {
    /// As ``PushRequest/scanned(_:)``, for a page: nil also when a record is
    /// not valid (``init(json:)`` sets it aside and reads the rest).
    public static func scanned(_ bytes: UnsafeBufferPointer<UInt8>) -> PullResponse? {
        guard let (object, changes) = try? ChangeRecord.scanDocument(bytes, changesName: "changes", limit: .max) else { return nil }
        return try? PullResponse(object: object, scanned: changes)
    }
}
