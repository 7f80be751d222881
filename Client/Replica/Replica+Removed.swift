import JSON
import Model
import Storage
import SyncCore

/// A record a reconcile dropped because the server no longer had it (see
/// ``Replica/finishReconcile(keep:)``), or one set aside rather than applied
/// (``Replica/setAsideWhatIsNotHeld(_:why:)``), kept whole so it can be written back.
public struct RemovedRecord: Sendable, Equatable {
    public let id: Int64
    public let collection: String
    public let key: String
    /// Its fields and versions when it was dropped (nil in a sync's summary).
    public var state: RecordState? = nil
    public var removedAtMillis: Int64 = 0
    /// When it was written back (`brsync restore --removed`), or nil.
    public var restoredAtMillis: Int64? = nil
    /// Why it was set aside rather than applied; nil for a record a reconcile removed.
    public var why: String? = nil

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
                "SELECT id, collection, key, fields, versions, removed_at, restored_at, why FROM removed ORDER BY id DESC LIMIT ?",
                [.integer(Int64(limit))]) { row in try Self.removedRecord(row) }
        }
    }

    static func removedRecord(_ row: Row) throws -> RemovedRecord {
        var removed = RemovedRecord(id: row.int64(0) ?? 0, collection: row.string(1) ?? "", key: row.string(2) ?? "")
        removed.state = try RecordState(fieldsJSON: row.string(3) ?? "", versionsJSON: row.string(4) ?? "")
        removed.removedAtMillis = row.int64(5) ?? 0
        removed.restoredAtMillis = row.int64(6)
        removed.why = row.string(7)
        return removed
    }

    /// Of records pulled from a server, those that add nothing to what this
    /// replica holds (merged in, they change no value, stamp or version),
    /// and the others, set aside whole rather than applied, each with `why`
    /// (``RemovedRecord/why``): kept, named, and restorable like a removed
    /// record (``restore(removed:)``). One transaction.
    /// - Returns: the records that add nothing (applying them changes
    ///   nothing), and those set aside.
    public func setAsideWhatIsNotHeld(_ changes: [ChangeRecord], why: (ChangeRecord) -> String) throws
        -> (held: [ChangeRecord], setAside: [RemovedRecord]) {
        try transaction {
            var held: [ChangeRecord] = []
            var setAside: [RemovedRecord] = []
            for change in changes {
                let local = try record(change.collection, key: change.key) ?? RecordState()
                if local.merged(with: change.state).state == local {
                    held.append(change)
                    continue
                }
                let reason = why(change)
                try database.run("INSERT INTO removed (collection, key, fields, versions, removed_at, why) VALUES (?, ?, ?, ?, ?, ?)",
                                 [.text(change.collection.rawValue), .text(change.key), .text(RecordState.encodeFields(change.state.fields)),
                                  .text(RecordState.encodeVersions(change.state.versions)), .integer(currentMillis), .text(reason)])
                var record = RemovedRecord(id: database.lastInsertRowID, collection: change.collection.rawValue, key: change.key)
                record.why = reason
                setAside.append(record)
            }
            return (held, setAside)
        }
    }

    /// Whether what was set aside (``RemovedRecord/why``) is in the replica
    /// by now: each of its values held at its stamp or a newer one (it
    /// arrived from another machine, or was restored).
    public func isHeldNow(_ removed: RemovedRecord) throws -> Bool {
        guard removed.why != nil, let state = removed.state, let collection = RecordCollection(rawValue: removed.collection),
              let current = try record(collection, key: removed.key) else { return false }
        return state.fields.allSatisfy { name, register in current.fields[name].map { !(register.stamp > $0.stamp) } ?? false }
    }

    /// Writes a removed record back as a new edit of each of its values (they
    /// then win, being newest; the server takes the record whole). Marked
    /// restored; restoring twice is refused.
    public func restore(removed id: Int64) throws -> RemovedRecord {
        try transaction {
            let found = try database.queryFirst(
                "SELECT id, collection, key, fields, versions, removed_at, restored_at, why FROM removed WHERE id = ?",
                [.integer(id)]) { row in try Self.removedRecord(row) }
            guard let removed = found, let collection = RecordCollection(rawValue: removed.collection), let state = removed.state else {
                throw ReplicaError.notFound("no removed record #\(id); see 'brsync log --removed'")
            }
            if let restored = removed.restoredAtMillis {
                throw ReplicaError.invalidInput("removed record #\(id) was restored already (\(Timestamp.iso8601(millis: restored)))")
            }
            var values = state.fields.mapValues(\.value)
            // A removed record comes back alive; a set-aside write comes back as
            // it was written, a deletion included.
            if removed.why == nil { values[RecordState.deletedField] = .bool(false) }
            try write(collection, key: removed.key, changes: values)
            try database.run("UPDATE removed SET restored_at = ? WHERE id = ?", [.integer(currentMillis), .integer(id)])
            return removed
        }
    }
}
