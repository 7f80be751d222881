import Model

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
    /// The id of the account key the changes are sealed with (end-to-end
    /// encryption): an encrypted account refuses changes sealed with a key
    /// it no longer uses (rotated).
    public var keyID: String?

    public init(device: String, from: Int64, to: Int64, changes: [ChangeRecord], base: String? = nil, since: Int64? = nil, epoch: String? = nil,
                keyID: String? = nil) {
        self.device = device
        self.from = from
        self.to = to
        self.changes = changes
        self.base = base
        self.since = since
        self.epoch = epoch
        self.keyID = keyID
    }

    public var json: JSONValue {
        var object: [String: JSONValue] = ["device": .string(device), "from": .int(from), "to": .int(to), "changes": .array(changes.map(\.json))]
        if let base { object["base"] = .string(base) }
        if let since { object["since"] = .int(since) }
        if let epoch { object["epoch"] = .string(epoch) }
        if let keyID { object["key"] = .string(keyID) }
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
        self.init(device: device, from: from, to: to, changes: changes, base: base, since: since, epoch: epoch,
                  keyID: try Wire.keyID(in: object))
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
    /// As ``PushRequest/keyID``.
    public var keyID: String?

    public init(records: [ChangeRecord], keyID: String? = nil) {
        self.records = records
        self.keyID = keyID
    }

    public var json: JSONValue {
        var object: [String: JSONValue] = ["records": .array(records.map(\.json))]
        if let keyID { object["key"] = .string(keyID) }
        return .object(object)
    }

    public init(json: JSONValue) throws(Wire.Problem) {
        guard case .object(let object) = json, case .array(let items)? = object["records"] else {
            throw Wire.Problem("a relay needs \"records\", an array")
        }
        guard items.count <= Wire.maxPushChanges else { throw Wire.Problem("a relay holds at most \(Wire.maxPushChanges) records") }
        var records: [ChangeRecord] = []
        records.reserveCapacity(items.count)
        for item in items { records.append(try ChangeRecord(json: item)) }
        self.init(records: records, keyID: try Wire.keyID(in: object))
    }
}
