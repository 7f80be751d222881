import Model
import SyncCore

/// One entry of the change log.
public struct ChangeEntry: Sendable {
    public let sequence: Int64
    public let device: String
    public let deviceSequence: Int64
    public let collection: String
    public let key: String
    public let fields: [String: StampedValue]
    public let kind: String
    public let recordedAtMillis: Int64
}

extension Replica {
    /// The newest `limit` entries of the change log, newest first.
    public func changeLog(limit: Int) throws -> [ChangeEntry] {
        try read {
            try database.query(
                """
                SELECT seq, device, device_seq, collection, key, fields, kind, recorded_at
                FROM changes ORDER BY seq DESC LIMIT ?
                """, [.integer(Int64(limit))]
            ) { row in
                let fields = try RecordCoding.decodeState(fields: row.string(5) ?? "{}", versions: "{}").fields
                return ChangeEntry(
                    sequence: row.int64(0) ?? 0, device: row.string(1) ?? "", deviceSequence: row.int64(2) ?? 0,
                    collection: row.string(3) ?? "", key: row.string(4) ?? "", fields: fields,
                    kind: row.string(6) ?? "local", recordedAtMillis: row.int64(7) ?? 0)
            }
        }
    }

    /// Number of entries in the change log.
    public func changeCount() throws -> Int {
        try read { try database.scalar("SELECT COUNT(*) FROM changes")?.intValue ?? 0 }
    }
}
