import JSON

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
    /// The account the client last met (``PullResponse/account``): a push
    /// from further than the store has its device starts a new timeline only
    /// when it names this account, or none (``CursorOrigin``).
    public var account: String?
    /// Where ``since`` comes from (``epoch`` and ``account``).
    public var origin: CursorOrigin { CursorOrigin(epoch: epoch, account: account) }
    /// The id of the account key the changes are sealed with (end-to-end
    /// encryption): an encrypted account refuses changes sealed with a key
    /// it no longer uses (rotated).
    public var keyID: String?
    /// The pushing device's own ledger records that go with this batch (its
    /// pending records, Deploy/SECURITY.md "A device's own writes,
    /// counted"): no change numbers; the server applies them first and
    /// whole, with the batch, or refuses the push. At most
    /// ``Ledger/pendingSlots``; written only when there are some.
    public var ledger: [ChangeRecord] = []
    /// Read from a push: the changes in the range that are well formed but
    /// over a limit, each rejected alone (``ChangeRecord/Unreadable``);
    /// ``changes`` holds the others. Never written by ``body(changeTexts:)``.
    public var unreadable: [ChangeRecord.Unreadable] = []

    public init(
        device: String, from: Int64, to: Int64, changes: [ChangeRecord], base: String? = nil, since: Int64? = nil,
        epoch: String? = nil,
        keyID: String? = nil
    ) {
        self.device = device
        self.from = from
        self.to = to
        self.changes = changes
        self.base = base
        self.since = since
        self.epoch = epoch
        self.keyID = keyID
    }

    /// The push's JSON text (members in name order), with the changes'
    /// texts when the caller has them already (``ChangeRecord/jsonBytes``,
    /// one per change, in order): a push writes each change once.
    public func body(changeTexts: [[UInt8]]? = nil) -> [UInt8] {
        precondition(changeTexts == nil || changeTexts!.count == changes.count, "one text per change")
        var output: [UInt8] = []
        output.reserveCapacity(256 + (changeTexts?.reduce(0) { $0 + $1.count + 1 } ?? 600 * changes.count))
        output.append(UInt8(ascii: "{"))
        if let account {
            output += #""account":"#.utf8
            JSONValue.writeString(account, into: &output)
            output.append(UInt8(ascii: ","))
        }
        if let base {
            output += #""base":"#.utf8
            JSONValue.writeString(base, into: &output)
            output.append(UInt8(ascii: ","))
        }
        output += #""changes":["#.utf8
        for (index, change) in changes.enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            if let changeTexts { output += changeTexts[index] } else { change.write(into: &output) }
        }
        output += #"],"device":"#.utf8
        JSONValue.writeString(device, into: &output)
        if let epoch {
            output += #","epoch":"#.utf8
            JSONValue.writeString(epoch, into: &output)
        }
        output += #","from":"#.utf8
        output += String(from).utf8
        if let keyID {
            output += #","key":"#.utf8
            JSONValue.writeString(keyID, into: &output)
        }
        if !ledger.isEmpty {
            output += #","ledger":["#.utf8
            for (index, record) in ledger.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                record.write(into: &output)
            }
            output.append(UInt8(ascii: "]"))
        }
        if let since {
            output += #","since":"#.utf8
            output += String(since).utf8
        }
        output += #","to":"#.utf8
        output += String(to).utf8
        output.append(UInt8(ascii: "}"))
        return output
    }

    /// Reads a push (see ``Wire/ReadError``); its checks, in order: the
    /// device, the range, the changes (an array of at most
    /// ``Wire/maxPushChanges``, exactly the range, numbered in order, each
    /// valid or over a limit only: see ``unreadable``), then `base`,
    /// `since`, `epoch`, `account` and `key`.
    public init(reading bytes: UnsafeBufferPointer<UInt8>) throws(Wire.ReadError) {
        try self.init(reading: bytes, secondThread: nil)
    }

    /// - Parameter secondThread: reads a long push in two halves at once, when given.
    public init(reading bytes: UnsafeBufferPointer<UInt8>, secondThread: SecondThread?) throws(Wire.ReadError) {
        let reading = try MessageReading.read(
            bytes, changesName: "changes", limit: Wire.maxPushChanges, untilProblem: true, secondThread: secondThread)
        do throws(Wire.Problem) {
            try self.init(reading)
        } catch {
            throw .invalid(error)
        }
    }

    private init(_ reading: MessageReading) throws(Wire.Problem) {
        guard reading.isObject else { throw Wire.Problem("the push must be a JSON object") }
        let object = reading.members
        guard let device = object["device"]?.stringValue, HLCTimestamp.isValidDevice(device) else {
            throw Wire.Problem("the push needs \"device\", this device's id (1 to 64 of A-Z a-z 0-9 . _ : -)")
        }
        guard let from = object["from"]?.intValue, let to = object["to"]?.intValue, from >= 1, to >= from else {
            throw Wire.Problem("the push needs \"from\" and \"to\", with 1 <= from <= to")
        }
        guard reading.hasChanges else { throw Wire.Problem("the push needs \"changes\", an array") }
        let count = reading.count
        // The range must be exactly the changes sent (never trust it to size anything).
        guard count <= Wire.maxPushChanges else {
            throw Wire.Problem("a push holds at most \(Wire.maxPushChanges) changes")
        }
        guard to - from == Int64(count) - 1 else {
            throw Wire.Problem("\"from\" \(from) to \"to\" \(to) is not the \(count) change(s) sent")
        }
        try Self.checkNumbers(reading, from: from, to: to)
        if let refusal = reading.refusal { throw refusal }
        let base = object["base"]?.stringValue
        if let base, !Wire.isDigest(base) { throw Wire.Problem("\"base\" must be a change digest (16 hex digits)") }
        let since = object["since"]?.intValue
        if let since, since < 0 { throw Wire.Problem("\"since\" must be a cursor (0 or more)") }
        let epoch = object["epoch"]?.stringValue
        if let epoch, epoch.utf8.count > 64 { throw Wire.Problem("\"epoch\" is at most 64 bytes") }
        let account = object["account"]
        if let account, account.stringValue.map(CursorOrigin.isAccountID) != true {
            throw Wire.Problem("\"account\" must be the account id an answer named (lowercase letters and digits)")
        }
        self.init(
            device: device, from: from, to: to, changes: reading.changes, base: base, since: since, epoch: epoch,
            keyID: try Wire.keyID(in: object))
        self.account = account?.stringValue
        ledger = try Self.ledger(in: object)
        unreadable = reading.unreadable
    }

    /// The optional `"ledger"`: at most ``Ledger/pendingSlots`` records of
    /// the `ledger` collection, each read as a change.
    static func ledger(in object: [String: JSONValue]) throws(Wire.Problem) -> [ChangeRecord] {
        guard let value = object["ledger"] else { return [] }
        guard case .array(let items) = value, items.count <= Ledger.pendingSlots else {
            throw Wire.Problem("\"ledger\" must be an array of at most \(Ledger.pendingSlots) ledger records")
        }
        var records: [ChangeRecord] = []
        for item in items {
            let record: ChangeRecord
            do throws(Wire.ReadError) {
                record = try Wire.read(item.jsonText, ChangeRecord.init(reading:))
            } catch {
                throw Wire.Problem("a record of \"ledger\": \(error)")
            }
            guard record.collection == .ledger else {
                throw Wire.Problem("\"ledger\" holds records of the ledger collection only")
            }
            records.append(record)
        }
        return records
    }

    /// The changes read, valid or over a limit, numbered `from` on in order
    /// (up to the first that refuses the push).
    private static func checkNumbers(_ reading: MessageReading, from: Int64, to: Int64) throws(Wire.Problem) {
        var problems: [Int: ChangeRecord.ChangeProblem] = [:]
        for problem in reading.problems { problems[problem.index] = problem.change }
        var changes = reading.changes.makeIterator()
        for index in 0..<reading.count {
            let sequence: Int64
            if let problem = problems[index] {
                guard let unreadable = problem.unreadable else { return }
                sequence = unreadable.sequence
            } else {
                guard let change = changes.next() else { return }
                sequence = change.sequence
            }
            guard sequence == from + Int64(index) else {
                throw Wire.Problem("the changes must be numbered \(from) to \(to), in order, with none missing")
            }
        }
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
        .object([
            "seq": .int(sequence), "collection": .string(collection.rawValue), "key": .string(key),
            "reason": .string(reason),
        ])
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
    /// Set, the relay is that device's **ledger request** (Deploy/SECURITY.md,
    /// "A device's own writes, counted"): its own ledger records only (its
    /// changed shards and its head), which the server applies all together
    /// or refuses whole (400), never one by one. At most
    /// ``Ledger/maxShards`` + 1 records.
    public var ledgerOf: String?
    /// The relaying device's own pending records that describe its writes in
    /// ``records`` the server has not acknowledged before (a key moved
    /// forward, its unpushed edits after a restore): the server applies them
    /// first and whole, with the records, or refuses the relay (400), so no
    /// machine sees those writes without the record that counts them. At
    /// most ``Ledger/pendingSlots``, all one device's pending records;
    /// written only when there are some, never with ``ledgerOf``.
    public var ledger: [ChangeRecord] = []
    /// Read from a relay: the records that are well formed but over a
    /// limit, each rejected alone; ``records`` holds the others.
    public var unreadable: [ChangeRecord.Unreadable] = []

    public init(records: [ChangeRecord], keyID: String? = nil) {
        self.records = records
        self.keyID = keyID
    }

    /// The relay's JSON text, with the records' texts when the caller has
    /// them (``ChangeRecord/jsonBytes``, one per record, in order).
    public func body(recordTexts: [[UInt8]]? = nil) -> [UInt8] {
        precondition(recordTexts == nil || recordTexts!.count == records.count, "one text per record")
        var output: [UInt8] = [UInt8(ascii: "{")]
        if let ledgerOf {
            output += #""device":"#.utf8
            JSONValue.writeString(ledgerOf, into: &output)
            output.append(UInt8(ascii: ","))
        }
        if let keyID {
            output += #""key":"#.utf8
            JSONValue.writeString(keyID, into: &output)
            output.append(UInt8(ascii: ","))
        }
        if !ledger.isEmpty {
            output += #""ledger":["#.utf8
            for (index, record) in ledger.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                record.write(into: &output)
            }
            output += "],".utf8
        }
        output += #""records":["#.utf8
        for (index, record) in records.enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            if let recordTexts { output += recordTexts[index] } else { record.write(into: &output) }
        }
        output += "]}".utf8
        return output
    }

    /// The device whose pending records `ledger` holds (``ledger``): all of
    /// them pending records of one device, in slots of their own.
    public static func pendingDevice(of ledger: [ChangeRecord]) throws(Wire.Problem) -> String {
        var device: String?
        var slots: Set<Int> = []
        for record in ledger {
            guard case .pending(let owner, let slot) = Ledger.Key(record.key), device == nil || device == owner,
                slots.insert(slot).inserted
            else {
                throw Wire.Problem("a relay's \"ledger\" holds one device's pending records, each slot once")
            }
            device = owner
        }
        guard let device else { throw Wire.Problem("a relay's \"ledger\" holds at least one pending record") }
        return device
    }

    /// Reads a relay (see ``Wire/ReadError``): `records`, an array of at
    /// most ``Wire/maxPushChanges`` records, each valid or over a limit
    /// only (``unreadable``), then `key`, then `device` (a ledger request),
    /// then `ledger` (the relaying device's pending records).
    public init(reading bytes: UnsafeBufferPointer<UInt8>) throws(Wire.ReadError) {
        try self.init(reading: bytes, secondThread: nil)
    }

    /// - Parameter secondThread: reads a long relay in two halves at once, when given.
    public init(reading bytes: UnsafeBufferPointer<UInt8>, secondThread: SecondThread?) throws(Wire.ReadError) {
        let reading = try MessageReading.read(
            bytes, changesName: "records", limit: Wire.maxPushChanges, untilProblem: true, secondThread: secondThread)
        do throws(Wire.Problem) {
            guard reading.isObject, reading.hasChanges else {
                throw Wire.Problem("a relay needs \"records\", an array")
            }
            guard reading.count <= Wire.maxPushChanges else {
                throw Wire.Problem("a relay holds at most \(Wire.maxPushChanges) records")
            }
            if let refusal = reading.refusal { throw refusal }
            self.init(records: reading.changes, keyID: try Wire.keyID(in: reading.members))
            unreadable = reading.unreadable
            if let device = reading.members["device"] {
                guard let device = device.stringValue, HLCTimestamp.isValidDevice(device) else {
                    throw Wire.Problem(
                        "a ledger request's \"device\" is the device's id (1 to 64 of A-Z a-z 0-9 . _ : -)")
                }
                guard reading.count <= Ledger.maxShards + 1 else {
                    throw Wire.Problem("a ledger request holds at most \(Ledger.maxShards + 1) records")
                }
                ledgerOf = device
            }
            ledger = try PushRequest.ledger(in: reading.members)
            if !ledger.isEmpty {
                guard ledgerOf == nil else {
                    throw Wire.Problem("a ledger request carries no \"ledger\": its records are the ledger")
                }
                _ = try Self.pendingDevice(of: ledger)
            }
        } catch {
            throw .invalid(error)
        }
    }
}
