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
    /// Most fields in one record.
    public static let maxFields = 64
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
        guard let key = object["key"]?.stringValue, !key.isEmpty, key.utf8.count <= Wire.maxKeyBytes else {
            throw Wire.Problem("a change needs \"key\", 1 to \(Wire.maxKeyBytes) bytes")
        }
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

    public init(device: String, from: Int64, to: Int64, changes: [ChangeRecord]) {
        self.device = device
        self.from = from
        self.to = to
        self.changes = changes
    }

    public var json: JSONValue {
        .object(["device": .string(device), "from": .int(from), "to": .int(to), "changes": .array(changes.map(\.json))])
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
        var changes: [ChangeRecord] = []
        changes.reserveCapacity(items.count)
        for item in items { changes.append(try ChangeRecord(json: item)) }
        guard changes.map(\.sequence) == Array(from...to) else {
            throw Wire.Problem("the changes must be numbered \(from) to \(to), in order, with none missing")
        }
        self.init(device: device, from: from, to: to, changes: changes)
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

    public init(acknowledged: Int64, applied: Int, clock: HLCTimestamp, epoch: String, lost: [LostField]) {
        self.acknowledged = acknowledged
        self.applied = applied
        self.clock = clock
        self.epoch = epoch
        self.lost = lost
    }

    public var json: JSONValue {
        .object(["acknowledged": .int(acknowledged), "applied": .int(Int64(applied)), "clock": .string(clock.description),
                 "epoch": .string(epoch), "lost": .array(lost.map(\.json))])
    }

    public init(json: JSONValue) throws(Wire.Problem) {
        guard case .object(let object) = json, let acknowledged = object["acknowledged"]?.intValue,
              let applied = object["applied"]?.intValue, let clockText = object["clock"]?.stringValue,
              let clock = HLCTimestamp(text: clockText), let epoch = object["epoch"]?.stringValue,
              case .array(let lostItems)? = object["lost"]
        else { throw Wire.Problem("not a push response") }
        var lost: [LostField] = []
        for item in lostItems { lost.append(try LostField(json: item)) }
        self.init(acknowledged: acknowledged, applied: Int(applied), clock: clock, epoch: epoch, lost: lost)
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

    public init(changes: [ChangeRecord], next: Int64, more: Bool, epoch: String, clock: HLCTimestamp) {
        self.changes = changes
        self.next = next
        self.more = more
        self.epoch = epoch
        self.clock = clock
    }

    public var json: JSONValue {
        .object(["changes": .array(changes.map(\.json)), "next": .int(next), "more": .bool(more), "epoch": .string(epoch),
                 "clock": .string(clock.description)])
    }

    public init(json: JSONValue) throws(Wire.Problem) {
        guard case .object(let object) = json, case .array(let items)? = object["changes"],
              let next = object["next"]?.intValue, let more = object["more"]?.boolValue,
              let epoch = object["epoch"]?.stringValue, let clockText = object["clock"]?.stringValue,
              let clock = HLCTimestamp(text: clockText)
        else { throw Wire.Problem("not a pull response") }
        var changes: [ChangeRecord] = []
        for item in items { changes.append(try ChangeRecord(json: item)) }
        self.init(changes: changes, next: next, more: more, epoch: epoch, clock: clock)
    }
}

/// An error answer: `{"error": CODE, "message": TEXT}`; codes are stable.
public struct WireError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: String
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public var json: JSONValue { .object(["error": .string(code), "message": .string(message)]) }
    public var description: String { "\(code): \(message)" }

    public init?(json: JSONValue) {
        guard case .object(let object) = json, let code = object["error"]?.stringValue else { return nil }
        self.init(code: code, message: object["message"]?.stringValue ?? "")
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
            registers[name] = try StampedValue(json: register, context: "field \"\(name)\" of \(context)")
        }
        guard case .object(let versionsObject) = versions else { throw Wire.Problem("\(context) needs \"versions\", an object") }
        var counters: [String: UInt64] = [:]
        for (device, counter) in versionsObject {
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
