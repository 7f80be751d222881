import JSON
import Model
import Storage
import SyncCore

/// A record a reconcile dropped because the server no longer had it (see
/// ``Replica/finishReconcile(keep:)``), kept whole so it can be written back.
public struct RemovedRecord: Sendable, Equatable {
    public let id: Int64
    public let collection: String
    public let key: String
    /// Its fields and versions when it was dropped (nil in a sync's summary).
    public var state: RecordState? = nil
    public var removedAtMillis: Int64 = 0
    /// When it was written back (`brsync restore --removed`), or nil.
    public var restoredAtMillis: Int64? = nil

    public init(id: Int64, collection: String, key: String) {
        self.id = id
        self.collection = collection
        self.key = key
    }
}

extension Replica {
    /// The records reconciles dropped, newest first.
    public func removedRecords(limit: Int) throws -> [RemovedRecord] {
        try read {
            try database.query(
                "SELECT id, collection, key, fields, versions, removed_at, restored_at FROM removed ORDER BY id DESC LIMIT ?",
                [.integer(Int64(limit))]) { row in try Self.removedRecord(row) }
        }
    }

    static func removedRecord(_ row: Row) throws -> RemovedRecord {
        var removed = RemovedRecord(id: row.int64(0) ?? 0, collection: row.string(1) ?? "", key: row.string(2) ?? "")
        removed.state = try RecordState(fieldsJSON: row.string(3) ?? "", versionsJSON: row.string(4) ?? "")
        removed.removedAtMillis = row.int64(5) ?? 0
        removed.restoredAtMillis = row.int64(6)
        return removed
    }

    /// Writes a removed record back as a new edit of each of its values (they
    /// then win, being newest; the server takes the record whole). Marked
    /// restored; restoring twice is refused.
    public func restore(removed id: Int64) throws -> RemovedRecord {
        try transaction {
            let found = try database.queryFirst(
                "SELECT id, collection, key, fields, versions, removed_at, restored_at FROM removed WHERE id = ?",
                [.integer(id)]) { row in try Self.removedRecord(row) }
            guard let removed = found, let collection = RecordCollection(rawValue: removed.collection), let state = removed.state else {
                throw ReplicaError.notFound("no removed record #\(id); see 'brsync log --removed'")
            }
            if let restored = removed.restoredAtMillis {
                throw ReplicaError.invalidInput("removed record #\(id) was restored already (\(Timestamp.iso8601(millis: restored)))")
            }
            var values = state.fields.mapValues(\.value)
            values[RecordState.deletedField] = .bool(false)
            try write(collection, key: removed.key, changes: values)
            try database.run("UPDATE removed SET restored_at = ? WHERE id = ?", [.integer(currentMillis), .integer(id)])
            return removed
        }
    }
}
