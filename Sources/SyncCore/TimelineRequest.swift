import JSON

/// `POST /v1/account/timeline`, signed with the account key: a key holder
/// confirms that the account was rolled back (its cursor `since` is past the
/// account's latest record on the timeline `epoch`), so the server starts a
/// new timeline for it. In an end-to-end encrypted account only this starts
/// one: a pull from the future by any other credential (a token without the
/// key, a join code's secret) is answered `rollback_unconfirmed` and changes
/// nothing (docs/protocol.md).
public struct TimelineRequest: Sendable, Equatable {
    /// The pull cursor the asker holds on that timeline.
    public var since: Int64
    /// The timeline (epoch) the cursor belongs to, as the server named it.
    public var epoch: String

    public init(since: Int64, epoch: String) {
        self.since = since
        self.epoch = epoch
    }

    public var body: [UInt8] { Array(JSONValue.object(["since": .int(since), "epoch": .string(epoch)]).jsonText.utf8) }

    private static let form = #"the body must be {"since": CURSOR, "epoch": EPOCH}"#

    public init(reading bytes: UnsafeBufferPointer<UInt8>) throws(Wire.ReadError) {
        let object = try Wire.object(bytes, else: Self.form)
        guard let since = object["since"]?.intValue, since >= 0,
            let epoch = object["epoch"]?.stringValue, !epoch.isEmpty, epoch.utf8.count <= 128,
            epoch.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else {
            throw .invalid(Wire.Problem(Self.form))
        }
        self.init(since: since, epoch: epoch)
    }
}

/// The answer to ``TimelineRequest``: the account's timeline now, and
/// whether this request started it.
public struct TimelineResponse: Sendable, Equatable {
    public var epoch: String
    public var changed: Bool

    public init(epoch: String, changed: Bool) {
        self.epoch = epoch
        self.changed = changed
    }

    public var json: JSONValue { .object(["epoch": .string(epoch), "changed": .bool(changed)]) }

    public init(json: JSONValue) throws(Wire.Problem) {
        guard case .object(let object) = json, let epoch = object["epoch"]?.stringValue, !epoch.isEmpty,
            epoch.utf8.count <= 128,
            let changed = object["changed"]?.boolValue
        else {
            throw Wire.Problem("the answer to the timeline confirmation has no 'epoch' and 'changed'")
        }
        self.init(epoch: epoch, changed: changed)
    }
}
