import JSON
import Model
import SyncCore

/// One entry of `brsync log`: an edit made here (`kind` "local", numbered by
/// the change log) or what a pull changed here (`kind` "pulled").
public struct ChangeEntry: Sendable {
    /// The change log's number for a local edit; the received log's for a pulled one.
    public let sequence: Int64
    /// The device that wrote the values (for a pulled entry, the newest of them).
    public let device: String
    public let collection: String
    public let key: String
    /// The values written (for a pulled entry, the ones that changed here).
    public let fields: [String: StampedValue]
    public let kind: String
    public let recordedAtMillis: Int64
    /// Why the server refused this local edit (it was never applied there); nil when taken.
    public var refused: String? = nil

    public var isPulled: Bool { kind == "pulled" }
}

extension Replica {
    /// How many entries of what pulls changed are kept (the oldest go first).
    public static let receivedLogLimit: Int64 = 10_000

    /// The newest `limit` entries of this replica's history, newest first:
    /// local edits and what pulls changed, in the order they happened here.
    public func changeLog(limit: Int) throws -> [ChangeEntry] {
        try read {
            try database.query(
                """
                SELECT * FROM (SELECT seq AS position, 0 AS pulled, seq AS id, device, collection, key, fields, kind, recorded_at,
                                      refused
                               FROM changes ORDER BY seq DESC LIMIT ?1)
                UNION ALL
                SELECT * FROM (SELECT after_seq, 1, id, device, collection, key, fields, 'pulled', recorded_at, NULL
                               FROM received ORDER BY id DESC LIMIT ?1)
                ORDER BY position DESC, pulled DESC, id DESC LIMIT ?1
                """, [.integer(Int64(limit))]
            ) { row in
                let fields = try Self.receivedFields(row.string(6) ?? "{}")
                return ChangeEntry(
                    sequence: row.int64(2) ?? 0, device: row.string(3) ?? "", collection: row.string(4) ?? "",
                    key: row.string(5) ?? "", fields: fields, kind: row.string(7) ?? "local",
                    recordedAtMillis: row.int64(8) ?? 0, refused: row.string(9))
            }
        }
    }

    /// Number of entries in the change log (this device's edits).
    func changeCount() throws -> Int {
        try read { try database.scalar("SELECT COUNT(*) FROM changes")?.intValue ?? 0 }
    }

    /// Notes what a pull changed in a record (inside the pull's transaction):
    /// the fields whose value or stamp differ from what was here.
    /// - Parameter afterFieldsText: `RecordState.encodeFields(after.fields)`,
    ///   the entry's text when every field changed (a new record).
    /// - Parameter newEntry: the entry of `after` new here (`before` holds
    ///   no field), made beforehand (``PreparedRow/newEntry``).
    func logReceived(
        _ collection: RecordCollection, key: String, before: RecordState, after: RecordState,
        afterFieldsText: String? = nil,
        afterSequence: Int64, newEntry: PreparedRow.Entry? = nil
    ) throws {
        let entry: (newest: HLCTimestamp, text: String)
        if before.fields.isEmpty, let newEntry {
            entry = (newEntry.newest, newEntry.text ?? afterFieldsText ?? RecordState.encodeFields(after.fields))
        } else {
            let changed = after.fields.filter { before.fields[$0.key] != $0.value }
            guard let newest = changed.values.map(\.stamp).max() else { return }
            entry = (
                newest,
                Self.oneStampEntry(changed, stamp: newest)
                    ?? (changed.count == after.fields.count ? afterFieldsText : nil)
                    ?? RecordState.encodeFields(changed)
            )
        }
        try database.run(
            "INSERT INTO received (after_seq, device, collection, key, fields, recorded_at) VALUES (?, ?, ?, ?, ?, ?)",
            [
                .integer(afterSequence), .text(entry.newest.device), .text(collection.rawValue), .text(key),
                .text(entry.text),
                .integer(currentMillis),
            ])
    }

    /// A received entry whose values all carry one stamp (one write, the
    /// common case), as `{"s": STAMP, "v": {FIELD: VALUE, …}}`: the stamp
    /// once instead of once a field (a pull of 10,000 new rules wrote its
    /// log at 464 bytes a rule, more than the rules' own rows; now ~190);
    /// nil when the values carry several stamps (written stamped, as before).
    /// Told apart on reading by `s` being a string: a stamped entry's every
    /// member is an object.
    /// Written straight into one buffer, the members in the dictionary's
    /// order (an object's order means nothing): it is made for every record a
    /// pull brings, and sorting and temporary arrays cost it ~13,700
    /// instructions a record (9% of an encrypted pull's apply).
    static func oneStampEntry(_ fields: [String: StampedValue], stamp: HLCTimestamp) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64 + fields.count * 32)
        bytes.append(contentsOf: #"{"s":""#.utf8)
        stamp.write(into: &bytes)
        bytes.append(contentsOf: #"","v":{"#.utf8)
        var first = true
        for (name, register) in fields {
            guard register.stamp == stamp else { return nil }
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            JSONValue.writeString(name, into: &bytes)
            bytes.append(UInt8(ascii: ":"))
            register.value.write(into: &bytes)
        }
        bytes.append(contentsOf: "}}".utf8)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A received entry's fields, written either way (``oneStampEntry(_:stamp:)``).
    static func receivedFields(_ text: String) throws -> [String: StampedValue] {
        if text.hasPrefix(#"{"s":""#), case .object(let entry) = try? JSONValue.parse(text),
            case .string(let stampText)? = entry["s"], case .object(let values)? = entry["v"]
        {
            guard let stamp = HLCTimestamp(text: stampText) else {
                throw ReplicaError.notAReplica(path: "replica", reason: "a received entry's stamp is damaged")
            }
            return values.mapValues { StampedValue($0, stamp: stamp) }
        }
        return try RecordCoding.decodeState(fields: text, versions: "{}").fields
    }

    /// Drops the oldest received entries beyond ``receivedLogLimit``.
    func trimReceivedLog() throws {
        try database.run(
            "DELETE FROM received WHERE id <= (SELECT MAX(id) FROM received) - ?", [.integer(Self.receivedLogLimit)])
    }
}
