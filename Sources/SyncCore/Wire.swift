import Model

/// The JSON of the sync protocol (`/v1/push`, `/v1/pull`), shared by client and
/// server, read and written with ``JSONValue``. See README, "Sync protocol".
public enum Wire {
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
    /// Most devices in one version vector.
    public static let maxVersionEntries = 1024
    /// Most changes (or relayed records) in one request; clients send at most
    /// 1,000 per batch, and the body limit (8 MiB) bounds it too.
    public static let maxPushChanges = 10_000

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
        if name.isEmpty || name.utf8.count > maxFieldNameBytes { return "a field name must be 1 to \(maxFieldNameBytes) bytes" }
        if name.unicodeScalars.contains(where: isControl) { return "a field name must not contain control characters" }
        return nil
    }

    /// Why `value` cannot be a field value, or nil when it can.
    public static func problem(value: JSONValue) -> String? {
        switch value {
        case .null, .bool, .int, .double: return nil
        case .string(let text): return text.utf8.count > maxValueBytes ? "a value is larger than \(maxValueBytes) bytes" : nil
        case .array, .object:
            if depth(of: value) > maxValueDepth { return "a value is nested deeper than \(maxValueDepth) levels" }
            if size(of: value, limit: maxValueBytes) > maxValueBytes { return "a value is larger than \(maxValueBytes) bytes" }
            return nil
        }
    }

    /// The bytes of a value's text and names (punctuation aside), stopping
    /// once past `limit`: a measure of size without writing the JSON.
    static func size(of value: JSONValue, limit: Int) -> Int {
        switch value {
        case .null, .bool, .int, .double: return 8
        case .string(let text): return text.utf8.count + 2
        case .array(let items):
            var total = 2
            for item in items where total <= limit { total += size(of: item, limit: limit) + 1 }
            return total
        case .object(let members):
            var total = 2
            for (name, item) in members where total <= limit { total += name.utf8.count + 4 + size(of: item, limit: limit) }
            return total
        }
    }

    /// Why `state` cannot be stored as one record, or nil when it can (checked
    /// on every record received and on every merge result).
    public static func problem(state: RecordState) -> String? {
        if state.fields.count > maxFields { return "a record has more than \(maxFields) fields" }
        for (name, register) in state.fields {
            if let problem = problem(fieldName: name) { return problem }
            if let problem = problem(value: register.value) { return "field \"\(name)\": \(problem)" }
        }
        if state.versions.counters.count > maxVersionEntries { return "a version vector has more than \(maxVersionEntries) devices" }
        return nil
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

/// One record version: a pushed change (`sequence` is the device's) or a
/// pulled record (`sequence` is the account's).
public struct ChangeRecord: Sendable, Equatable {
    public var sequence: Int64
    public var collection: RecordCollection
    public var key: String
    public var state: RecordState

    public init(sequence: Int64, collection: RecordCollection, key: String, state: RecordState) {
        self.sequence = sequence
        self.collection = collection
        self.key = key
        self.state = state
    }

    /// What identifies this change's content (FNV-1a 64 of its collection,
    /// key and canonical fields, as 16 hex digits). The server keeps the digest
    /// of the last change of each device it applied; a device whose numbers
    /// were reused (a copied home, a home restored from an older copy) is told
    /// by the digest, never by the number alone.
    public var digest: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ bytes: some Sequence<UInt8>) {
            for byte in bytes {
                hash ^= UInt64(byte)
                hash = hash &* 0x0000_0100_0000_01b3
            }
        }
        mix(collection.rawValue.utf8)
        mix([0])
        mix(key.utf8)
        mix([0])
        mix(RecordState.encodeFields(state.fields).utf8)
        let text = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - text.count) + text
    }

    public var json: JSONValue {
        .object([
            "seq": .int(sequence), "collection": .string(collection.rawValue), "key": .string(key),
            "fields": .object(state.fields.mapValues(\.json)),
            "versions": .object(state.versions.counters.mapValues { .int(Int64(clamping: $0)) }),
        ])
    }

    public init(json: JSONValue) throws(Wire.Problem) {
        guard case .object(let object) = json else { throw Wire.Problem("a change must be an object") }
        guard let sequence = object["seq"]?.intValue else { throw Wire.Problem("a change needs \"seq\", a number") }
        guard let name = object["collection"]?.stringValue, let collection = RecordCollection(rawValue: name) else {
            throw Wire.Problem("a change needs \"collection\": browsers, rules or settings")
        }
        guard let key = object["key"]?.stringValue else { throw Wire.Problem("a change needs \"key\", a string") }
        if let problem = Wire.problem(key: key) { throw Wire.Problem("change \(sequence): \(problem)") }
        let state = try RecordState(fields: object["fields"] ?? .null, versions: object["versions"] ?? .null, context: "change \(sequence)")
        self.init(sequence: sequence, collection: collection, key: key, state: state)
    }
}

extension StampedValue {
    public var json: JSONValue { .object(["v": value, "s": .string(stamp.description)]) }

    public init(json: JSONValue, context: String) throws(Wire.Problem) {
        guard case .object(let parts) = json, let value = parts["v"] else { throw Wire.Problem("\(context) needs \"v\"") }
        guard let text = parts["s"]?.stringValue, let stamp = HLCTimestamp(text: text) else {
            throw Wire.Problem("\(context) needs \"s\", an HLC stamp")
        }
        self.init(value, stamp: stamp)
    }
}

/// `POST /v1/push`: this device's change-log entries `from...to`, contiguous.
public struct PushRequest: Sendable, Equatable {
    /// The client's device id (the one in its stamps).
    public var device: String
    public var from: Int64
    public var to: Int64
    public var changes: [ChangeRecord]
    /// The digest of this device's change `from - 1` (absent when `from` is 1):
    /// the server refuses a push that does not continue what it has.
    public var base: String?
    /// The client's pull cursor and the epoch it belongs to: records this push
    /// changes whose previous version the client had pulled are not sent back
    /// to it by its next pull.
    public var since: Int64?
    public var epoch: String?

    public init(device: String, from: Int64, to: Int64, changes: [ChangeRecord], base: String? = nil, since: Int64? = nil, epoch: String? = nil) {
        self.device = device
        self.from = from
        self.to = to
        self.changes = changes
        self.base = base
        self.since = since
        self.epoch = epoch
    }

    public var json: JSONValue {
        var object: [String: JSONValue] = ["device": .string(device), "from": .int(from), "to": .int(to), "changes": .array(changes.map(\.json))]
        if let base { object["base"] = .string(base) }
        if let since { object["since"] = .int(since) }
        if let epoch { object["epoch"] = .string(epoch) }
        return .object(object)
    }

    public init(json: JSONValue) throws(Wire.Problem) {
        guard case .object(let object) = json else { throw Wire.Problem("the push must be a JSON object") }
        guard let device = object["device"]?.stringValue, HLCTimestamp.isValidDevice(device) else {
            throw Wire.Problem("the push needs \"device\", this device's id (1 to 64 of A-Z a-z 0-9 . _ : -)")
        }
        guard let from = object["from"]?.intValue, let to = object["to"]?.intValue, from >= 1, to >= from else {
            throw Wire.Problem("the push needs \"from\" and \"to\", with 1 <= from <= to")
        }
        guard case .array(let items)? = object["changes"] else { throw Wire.Problem("the push needs \"changes\", an array") }
        // The range must be exactly the changes sent (never trust it to size anything).
        guard items.count <= Wire.maxPushChanges else { throw Wire.Problem("a push holds at most \(Wire.maxPushChanges) changes") }
        guard to - from == Int64(items.count) - 1 else {
            throw Wire.Problem("\"from\" \(from) to \"to\" \(to) is not the \(items.count) change(s) sent")
        }
        var changes: [ChangeRecord] = []
        changes.reserveCapacity(items.count)
        for (offset, item) in items.enumerated() {
            let change = try ChangeRecord(json: item)
            guard change.sequence == from + Int64(offset) else {
                throw Wire.Problem("the changes must be numbered \(from) to \(to), in order, with none missing")
            }
            changes.append(change)
        }
        let base = object["base"]?.stringValue
        if let base, !Wire.isDigest(base) { throw Wire.Problem("\"base\" must be a change digest (16 hex digits)") }
        let since = object["since"]?.intValue
        if let since, since < 0 { throw Wire.Problem("\"since\" must be a cursor (0 or more)") }
        let epoch = object["epoch"]?.stringValue
        if let epoch, epoch.utf8.count > 64 { throw Wire.Problem("\"epoch\" is at most 64 bytes") }
        self.init(device: device, from: from, to: to, changes: changes, base: base, since: since, epoch: epoch)
    }
}

/// A change the server did not apply (it would make an unusable record); its
/// sequence number still counts as pushed, so nothing behind it is held up.
public struct RejectedChange: Sendable, Equatable {
    public var sequence: Int64
    public var collection: RecordCollection
    public var key: String
    public var reason: String

    public init(sequence: Int64, collection: RecordCollection, key: String, reason: String) {
        self.sequence = sequence
        self.collection = collection
        self.key = key
        self.reason = reason
    }

    public var json: JSONValue {
        .object(["seq": .int(sequence), "collection": .string(collection.rawValue), "key": .string(key), "reason": .string(reason)])
    }

    public init(json: JSONValue) throws(Wire.Problem) {
        guard case .object(let object) = json, let sequence = object["seq"]?.intValue,
              let collection = object["collection"]?.stringValue.flatMap(RecordCollection.init(rawValue:)),
              let key = object["key"]?.stringValue, let reason = object["reason"]?.stringValue
        else { throw Wire.Problem("a rejected change needs seq, collection, key and reason") }
        self.init(sequence: sequence, collection: collection, key: key, reason: reason)
    }
}

/// `POST /v1/relay`: whole records a client holds, with their stamps and
/// versions as they are, for the server to merge (after a restore, so that
/// nothing a client still holds is lost). Relaying mints nothing: stamps and
/// version vectors stay the devices' own.
public struct RelayRequest: Sendable, Equatable {
    public var records: [ChangeRecord]

    public init(records: [ChangeRecord]) {
        self.records = records
    }

    public var json: JSONValue { .object(["records": .array(records.map(\.json))]) }

    public init(json: JSONValue) throws(Wire.Problem) {
        guard case .object(let object) = json, case .array(let items)? = object["records"] else {
            throw Wire.Problem("a relay needs \"records\", an array")
        }
        guard items.count <= Wire.maxPushChanges else { throw Wire.Problem("a relay holds at most \(Wire.maxPushChanges) records") }
        var records: [ChangeRecord] = []
        records.reserveCapacity(items.count)
        for item in items { records.append(try ChangeRecord(json: item)) }
        self.init(records: records)
    }
}

/// A value that lost in a push: a pushed value older than the server's, or a
/// value on the server that a concurrent pushed edit overwrote.
public struct LostField: Sendable, Equatable {
    public var sequence: Int64
    public var collection: RecordCollection
    public var key: String
    public var field: String
    public var lost: StampedValue
    public var winner: StampedValue

    public init(sequence: Int64, collection: RecordCollection, key: String, field: String, lost: StampedValue, winner: StampedValue) {
        self.sequence = sequence
        self.collection = collection
        self.key = key
        self.field = field
        self.lost = lost
        self.winner = winner
    }

    public var json: JSONValue {
        .object(["seq": .int(sequence), "collection": .string(collection.rawValue), "key": .string(key), "field": .string(field),
                 "lost": lost.json, "winner": winner.json])
    }

    public init(json: JSONValue) throws(Wire.Problem) {
        guard case .object(let object) = json, let sequence = object["seq"]?.intValue,
              let collection = object["collection"]?.stringValue.flatMap(RecordCollection.init(rawValue:)),
              let key = object["key"]?.stringValue, let field = object["field"]?.stringValue,
              let lost = object["lost"], let winner = object["winner"]
        else { throw Wire.Problem("a lost field needs seq, collection, key, field, lost and winner") }
        self.init(sequence: sequence, collection: collection, key: key, field: field,
                  lost: try StampedValue(json: lost, context: "lost"), winner: try StampedValue(json: winner, context: "winner"))
    }
}

/// The answer to a push.
public struct PushResponse: Sendable, Equatable {
    /// The last device sequence the server has applied (now `to`).
    public var acknowledged: Int64
    /// How many of the pushed changes were new to the server (a retry applies none).
    public var applied: Int
    public var clock: HLCTimestamp
    public var epoch: String
    public var lost: [LostField]
    /// The digest of the change numbered `acknowledged` as the server applied
    /// it: the client checks it against its own change log.
    public var acknowledgedDigest: String
    public var rejected: [RejectedChange]
    /// The account's identity (an account switch resets the pull cursor).
    public var account: String
    /// Changes not applied because the server does not have their record (an
    /// edit needs the rest of it): the client relays the whole record.
    public var needed: [Int64]

    public init(acknowledged: Int64, applied: Int, clock: HLCTimestamp, epoch: String, lost: [LostField],
                acknowledgedDigest: String = "", rejected: [RejectedChange] = [], account: String = "", needed: [Int64] = []) {
        self.acknowledged = acknowledged
        self.applied = applied
        self.clock = clock
        self.epoch = epoch
        self.lost = lost
        self.acknowledgedDigest = acknowledgedDigest
        self.rejected = rejected
        self.account = account
        self.needed = needed
    }

    public var json: JSONValue {
        .object(["acknowledged": .int(acknowledged), "applied": .int(Int64(applied)), "clock": .string(clock.description),
                 "epoch": .string(epoch), "lost": .array(lost.map(\.json)), "digest": .string(acknowledgedDigest),
                 "rejected": .array(rejected.map(\.json)), "account": .string(account), "needed": .array(needed.map { .int($0) })])
    }

    public init(json: JSONValue) throws(Wire.Problem) {
        guard case .object(let object) = json, let acknowledged = object["acknowledged"]?.intValue,
              let applied = object["applied"]?.intValue, let clockText = object["clock"]?.stringValue,
              let clock = HLCTimestamp(text: clockText), let epoch = object["epoch"]?.stringValue,
              case .array(let lostItems)? = object["lost"]
        else { throw Wire.Problem("not a push response") }
        var lost: [LostField] = []
        for item in lostItems { lost.append(try LostField(json: item)) }
        var rejected: [RejectedChange] = []
        if case .array(let items)? = object["rejected"] {
            for item in items { rejected.append(try RejectedChange(json: item)) }
        }
        var needed: [Int64] = []
        if case .array(let items)? = object["needed"] {
            for item in items {
                guard let sequence = item.intValue else { throw Wire.Problem("\"needed\" must hold change numbers") }
                needed.append(sequence)
            }
        }
        self.init(acknowledged: acknowledged, applied: Int(applied), clock: clock, epoch: epoch, lost: lost,
                  acknowledgedDigest: object["digest"]?.stringValue ?? "", rejected: rejected,
                  account: object["account"]?.stringValue ?? "", needed: needed)
    }
}

/// The answer to `GET /v1/pull?since=CURSOR&limit=N`.
public struct PullResponse: Sendable, Equatable {
    /// Records changed after the cursor, in the account's sequence order.
    public var changes: [ChangeRecord]
    /// The cursor for the next pull.
    public var next: Int64
    /// Whether more changes wait after `next`.
    public var more: Bool
    public var epoch: String
    public var clock: HLCTimestamp
    /// The account's identity.
    public var account: String
    /// Records that could not be read, each with why: the client reports them
    /// and applies the rest (one bad record never blocks an account).
    public var unusable: [(sequence: Int64, reason: String)] = []
    /// The cursor is below a tombstone the server has purged: the client
    /// pulls everything from 0 and drops what the server no longer has.
    public var reset = false

    public init(changes: [ChangeRecord], next: Int64, more: Bool, epoch: String, clock: HLCTimestamp, account: String = "") {
        self.changes = changes
        self.next = next
        self.more = more
        self.epoch = epoch
        self.clock = clock
        self.account = account
    }

    public static func == (lhs: PullResponse, rhs: PullResponse) -> Bool {
        lhs.changes == rhs.changes && lhs.next == rhs.next && lhs.more == rhs.more && lhs.epoch == rhs.epoch
            && lhs.clock == rhs.clock && lhs.account == rhs.account && lhs.reset == rhs.reset
            && lhs.unusable.map(\.sequence) == rhs.unusable.map(\.sequence) && lhs.unusable.map(\.reason) == rhs.unusable.map(\.reason)
    }

    public var json: JSONValue {
        var object: [String: JSONValue] = ["changes": .array(changes.map(\.json)), "next": .int(next), "more": .bool(more),
                                           "epoch": .string(epoch), "clock": .string(clock.description), "account": .string(account)]
        if reset { object["reset"] = .bool(true) }
        return .object(object)
    }

    /// Reads a page; a change that is not valid is set aside in ``unusable``
    /// (with its sequence when it has one), never applied, and the page is
    /// still read.
    public init(json: JSONValue) throws(Wire.Problem) {
        guard case .object(let object) = json, case .array(let items)? = object["changes"],
              let next = object["next"]?.intValue, let more = object["more"]?.boolValue,
              let epoch = object["epoch"]?.stringValue, let clockText = object["clock"]?.stringValue,
              let clock = HLCTimestamp(text: clockText)
        else { throw Wire.Problem("not a pull response") }
        var changes: [ChangeRecord] = []
        var unusable: [(Int64, String)] = []
        for item in items {
            do {
                changes.append(try ChangeRecord(json: item))
            } catch {
                if case .object(let fields) = item, let sequence = fields["seq"]?.intValue {
                    unusable.append((sequence, error.message))
                } else {
                    unusable.append((0, error.message))
                }
            }
        }
        self.init(changes: changes, next: next, more: more, epoch: epoch, clock: clock, account: object["account"]?.stringValue ?? "")
        self.unusable = unusable
        self.reset = object["reset"]?.boolValue ?? false
    }
}

/// An error answer: `{"error": CODE, "message": TEXT}`; codes are stable.
public struct WireError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: String
    public var message: String
    /// With `gap` and `diverged`: the last device sequence the server applied
    /// for this device, and that change's digest ("" when unknown).
    public var acknowledged: Int64?
    public var digest: String?

    public init(code: String, message: String, acknowledged: Int64? = nil, digest: String? = nil) {
        self.code = code
        self.message = message
        self.acknowledged = acknowledged
        self.digest = digest
    }

    public var json: JSONValue {
        var object: [String: JSONValue] = ["error": .string(code), "message": .string(message)]
        if let acknowledged { object["acknowledged"] = .int(acknowledged) }
        if let digest { object["digest"] = .string(digest) }
        return .object(object)
    }

    public var description: String { "\(code): \(message)" }

    public init?(json: JSONValue) {
        guard case .object(let object) = json, let code = object["error"]?.stringValue else { return nil }
        self.init(code: code, message: object["message"]?.stringValue ?? "", acknowledged: object["acknowledged"]?.intValue,
                  digest: object["digest"]?.stringValue)
    }
}

extension RecordState {
    /// A state from its JSON: fields `{"name": {"s": STAMP, "v": VALUE}}` and
    /// versions `{"device": counter}` (the wire's form, and the stores').
    public init(fields: JSONValue, versions: JSONValue, context: String) throws(Wire.Problem) {
        guard case .object(let fieldsObject) = fields, fieldsObject.count <= Wire.maxFields else {
            throw Wire.Problem("\(context) needs \"fields\", an object of at most \(Wire.maxFields) fields")
        }
        var registers: [String: StampedValue] = [:]
        for (name, register) in fieldsObject {
            guard !name.isEmpty else { throw Wire.Problem("\(context) has a field with no name") }
            if let problem = Wire.problem(fieldName: name) { throw Wire.Problem("\(context): \(problem)") }
            let stamped = try StampedValue(json: register, context: "field \"\(name)\" of \(context)")
            if let problem = Wire.problem(value: stamped.value) { throw Wire.Problem("field \"\(name)\" of \(context): \(problem)") }
            registers[name] = stamped
        }
        guard case .object(let versionsObject) = versions else { throw Wire.Problem("\(context) needs \"versions\", an object") }
        guard versionsObject.count <= Wire.maxVersionEntries else {
            throw Wire.Problem("\(context): a version vector has more than \(Wire.maxVersionEntries) devices")
        }
        var counters: [String: UInt64] = [:]
        for (device, counter) in versionsObject {
            guard HLCTimestamp.isValidDevice(device) else { throw Wire.Problem("\(context): a version vector names an invalid device id") }
            guard let value = counter.intValue, value >= 0 else { throw Wire.Problem("\(context): version of \"\(device)\" must be a count") }
            counters[device] = UInt64(value)
        }
        self.init(fields: registers, versions: VersionVector(counters))
    }

    /// A state from the stored JSON text of its fields and versions.
    public init(fieldsJSON: String, versionsJSON: String) throws(Wire.Problem) {
        do {
            try self.init(fields: try JSONValue.parse(fieldsJSON), versions: try JSONValue.parse(versionsJSON), context: "a stored record")
        } catch let problem as Wire.Problem {
            throw problem
        } catch {
            throw Wire.Problem("a stored record is not JSON: \(error)")
        }
    }
}
