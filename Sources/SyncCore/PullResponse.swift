import Model

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
    /// The account is end-to-end encrypted: every record is sealed, and the
    /// client opens it with the account key (protocol 2).
    public var encrypted = false
    /// The id of the account key the records are sealed with (encrypted accounts).
    public var keyID: String?

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
            && lhs.clock == rhs.clock && lhs.account == rhs.account && lhs.reset == rhs.reset && lhs.encrypted == rhs.encrypted && lhs.keyID == rhs.keyID
            && lhs.unusable.map(\.sequence) == rhs.unusable.map(\.sequence) && lhs.unusable.map(\.reason) == rhs.unusable.map(\.reason)
    }

    public var json: JSONValue {
        var object: [String: JSONValue] = ["changes": .array(changes.map(\.json)), "next": .int(next), "more": .bool(more),
                                           "epoch": .string(epoch), "clock": .string(clock.description), "account": .string(account)]
        if reset { object["reset"] = .bool(true) }
        if encrypted { object["encrypted"] = .bool(true) }
        if let keyID { object["key"] = .string(keyID) }
        return .object(object)
    }

    /// Reads a page; a change that is not valid is set aside in ``unusable``
    /// (with its sequence when it has one), never applied, and the page is
    /// still read.
    public init(json: JSONValue) throws(Wire.Problem) {
        guard case .object(let object) = json else { throw Wire.Problem("not a pull response") }
        try self.init(object: object, scanned: nil)
    }

    /// A page from its members; its changes from `object["changes"]`, or
    /// `scanned` when ``scanned(_:)`` read them already (all valid).
    init(object: [String: JSONValue], scanned: [ChangeRecord]?) throws(Wire.Problem) {
        var items: [JSONValue] = []
        if scanned == nil {
            guard case .array(let array)? = object["changes"] else { throw Wire.Problem("not a pull response") }
            items = array
        }
        guard let next = object["next"]?.intValue, let more = object["more"]?.boolValue,
              let epoch = object["epoch"]?.stringValue, let clockText = object["clock"]?.stringValue,
              let clock = HLCTimestamp(text: clockText)
        else { throw Wire.Problem("not a pull response") }
        var changes: [ChangeRecord] = scanned ?? []
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
        self.encrypted = object["encrypted"]?.boolValue ?? false
        self.keyID = object["key"]?.stringValue.flatMap { Wire.isKeyID($0) ? $0 : nil }
    }
}
