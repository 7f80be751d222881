import JSON

/// A value that lost in a push: a pushed value older than the server's, or a
/// value on the server that a concurrent pushed edit overwrote.
public struct LostField: Sendable, Equatable {
    public var sequence: Int64
    public var collection: RecordCollection
    public var key: String
    public var field: String
    public var lost: StampedValue
    public var winner: StampedValue

    public init(
        sequence: Int64, collection: RecordCollection, key: String, field: String, lost: StampedValue,
        winner: StampedValue
    ) {
        self.sequence = sequence
        self.collection = collection
        self.key = key
        self.field = field
        self.lost = lost
        self.winner = winner
    }

    public var json: JSONValue {
        .object([
            "seq": .int(sequence), "collection": .string(collection.rawValue), "key": .string(key),
            "field": .string(field),
            "lost": lost.json, "winner": winner.json,
        ])
    }

    public init(json: JSONValue) throws(Wire.Problem) {
        guard case .object(let object) = json, let sequence = object["seq"]?.intValue,
            let collection = object["collection"]?.stringValue.flatMap(RecordCollection.init(rawValue:)),
            let key = object["key"]?.stringValue, let field = object["field"]?.stringValue,
            let lost = object["lost"], let winner = object["winner"]
        else { throw Wire.Problem("a lost field needs seq, collection, key, field, lost and winner") }
        self.init(
            sequence: sequence, collection: collection, key: key, field: field,
            lost: try StampedValue(json: lost, context: "lost"),
            winner: try StampedValue(json: winner, context: "winner"))
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
    /// Lost values past the answer's budget for them: counted, not listed.
    public var lostOmitted = 0

    public init(
        acknowledged: Int64, applied: Int, clock: HLCTimestamp, epoch: String, lost: [LostField],
        acknowledgedDigest: String = "", rejected: [RejectedChange] = [], account: String = "", needed: [Int64] = []
    ) {
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
        var object: [String: JSONValue] = [
            "acknowledged": .int(acknowledged), "applied": .int(Int64(applied)), "clock": .string(clock.description),
            "epoch": .string(epoch), "lost": .array(lost.map(\.json)), "digest": .string(acknowledgedDigest),
            "rejected": .array(rejected.map(\.json)), "account": .string(account),
            "needed": .array(needed.map { .int($0) }),
        ]
        if lostOmitted > 0 { object["lostOmitted"] = .int(Int64(lostOmitted)) }
        return .object(object)
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
        self.init(
            acknowledged: acknowledged, applied: Int(applied), clock: clock, epoch: epoch, lost: lost,
            acknowledgedDigest: object["digest"]?.stringValue ?? "", rejected: rejected,
            account: object["account"]?.stringValue ?? "", needed: needed)
        lostOmitted = max(0, Int(object["lostOmitted"]?.intValue ?? 0))
    }
}
