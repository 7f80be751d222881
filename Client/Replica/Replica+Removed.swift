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
                [.integer(Int64(limit))]
            ) { row in try Self.removedRecord(row) }
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
    /// record (``restore(removed:)``). One transaction. A ledger record
    /// that adds something is in neither list: a ledger belongs to its
    /// key's generation (a key change drops every one), so a retired key's
    /// is no one's write, and brsync's own bookkeeping is never the user's
    /// to restore.
    /// - Returns: the records that add nothing (applying them changes
    ///   nothing), and those set aside.
    public func setAsideWhatIsNotHeld(
        _ changes: [ChangeRecord], why: (ChangeRecord) -> String
    ) throws
        -> (held: [ChangeRecord], setAside: [RemovedRecord])
    {
        try transaction {
            var held: [ChangeRecord] = []
            var setAside: [RemovedRecord] = []
            for change in changes {
                let local = try record(change.collection, key: change.key) ?? RecordState()
                if local.merged(with: change.state).state == local {
                    held.append(change)
                    continue
                }
                guard change.collection != .ledger else { continue }
                let reason = why(change)
                try database.run(
                    "INSERT INTO removed (collection, key, fields, versions, removed_at, why) VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        .text(change.collection.rawValue), .text(change.key),
                        .text(RecordState.encodeFields(change.state.fields)),
                        .text(RecordState.encodeVersions(change.state.versions)), .integer(currentMillis),
                        .text(reason),
                    ])
                var record = RemovedRecord(
                    id: database.lastInsertRowID, collection: change.collection.rawValue, key: change.key)
                record.why = reason
                setAside.append(record)
            }
            return (held, setAside)
        }
    }

    /// Values taken out of a record (`taken`, by field) are gone from what
    /// this device's unpushed changes of it said the record held just after
    /// them (their manifests): each names, instead, what the record holds now
    /// at or before its stamp, or nothing. Else a change would go up claiming
    /// a value that the server never gets, and every machine would set the
    /// record aside as one the server cut.
    private func forgetInUnpushedManifests(
        _ taken: [String: StampedValue], collection: RecordCollection, key: String, now: RecordState
    ) throws {
        let pushed = Int64(try meta("pushed_through") ?? "") ?? 0
        let changes = try database.query(
            """
            SELECT device_seq, fields, manifest FROM changes
            WHERE device = ? AND kind = 'local' AND device_seq > ? AND collection = ? AND key = ? AND manifest IS NOT NULL
            """, [.text(deviceID), .integer(pushed), .text(collection.rawValue), .text(key)]
        ) { row in
            (
                sequence: row.int64(0) ?? 0,
                stamp: try RecordCoding.decodeState(fields: row.string(1) ?? "{}", versions: "{}").newestStamp,
                manifest: row.string(2) ?? ""
            )
        }
        for change in changes {
            guard let stamp = change.stamp, let json = try? JSONValue.parse(change.manifest),
                let manifest = try? RecordManifest(json: json, at: stamp)
            else { continue }
            var stamps = manifest.stamps
            for (name, register) in taken where stamps[name] == register.stamp {
                stamps[name] = now.fields[name].map(\.stamp).flatMap { $0 <= stamp ? $0 : nil }
            }
            guard stamps != manifest.stamps else { continue }
            try database.run(
                "UPDATE changes SET manifest = ? WHERE device = ? AND device_seq = ?",
                [
                    .text(RecordManifest(stamps: stamps, versions: manifest.versions).text(at: stamp)),
                    .text(deviceID), .integer(change.sequence),
                ])
        }
    }

    /// A machine that learns of a rotation late (it synced with the old key,
    /// maybe with a server restored from before the rotation, and its user
    /// added the new code) checks what it holds against `reference`, the
    /// new key's account, pulled whole: every value another device wrote
    /// that the account does not hold (at that stamp or a newer one) was
    /// taken in with the retired key after the rotation (by a machine
    /// offline across it, or one that kept the old key) and is set aside:
    /// the value goes back to the account's, or to this machine's own newest
    /// write of it, or leaves (a record nobody vouches for leaves whole),
    /// and what was taken out is kept in `removed` with `why` (the writer's
    /// device id given), restorable. This machine's own writes (its change
    /// log) always stay: they go up with the new key. An honest writer's
    /// value comes back when that machine sends it with the new key (its
    /// stamp is newer than what is left here). Clears the pending vouch
    /// (``EncryptionState/vouchPending``). One transaction.
    /// - Parameter reference: the account's records by `collection/key`.
    public func setAsideUnvouched(
        reference: [String: RecordState], why: (_ writer: String) -> String
    ) throws -> [RemovedRecord] {
        try transaction {
            let own = try ownNewestWrites()
            let held = try database.query(
                "SELECT collection, key, fields, versions FROM records ORDER BY collection, key"
            ) { row in
                (
                    collection: row.string(0) ?? "", key: row.string(1) ?? "",
                    state: try RecordCoding.decodeState(fields: row.string(2) ?? "{}", versions: row.string(3) ?? "{}")
                )
            }
            var setAside: [RemovedRecord] = []
            for record in held {
                // A ledger is its key generation's bookkeeping, never the user's (``setAsideWhatIsNotHeld(_:why:)``).
                guard let collection = RecordCollection(rawValue: record.collection), collection != .ledger else {
                    continue
                }
                let id = "\(record.collection)/\(record.key)"
                let account = reference[id] ?? RecordState()
                var kept = record.state
                var taken: [String: StampedValue] = [:]
                for (name, register) in record.state.fields {
                    if let theirs = account.fields[name], theirs == register || theirs.wins(over: register) { continue }
                    if own.fields[id]?[name] == register { continue }
                    taken[name] = register
                    let candidates = [account.fields[name], own.fields[id]?[name]].compactMap { $0 }
                    kept.fields[name] = candidates.max { $1.wins(over: $0) }
                }
                guard !taken.isEmpty else { continue }
                kept.versions = account.versions.merged(
                    with: VersionVector(record.state.versions.counters.filter { own.devices.contains($0.key) }))
                try keepUnvouched(collection, key: record.key, kept: kept, account: account)
                setAside.append(
                    try keepTakenOut(taken, of: collection, key: record.key, versions: record.state.versions, why: why))
            }
            try setMeta("e2e_vouch", nil)
            // What a device's ledger names may be gone from here now.
            if !setAside.isEmpty { try noteRecordsRemoved() }
            return setAside
        }
    }

    /// This machine's own writes: the newest of each field in its change
    /// log, by `collection/key`, and the device ids it wrote under.
    private func ownNewestWrites() throws -> (fields: [String: [String: StampedValue]], devices: Set<String>) {
        var own: [String: [String: StampedValue]] = [:]
        var ownDevices = Set<String>()
        let local = try database.query(
            "SELECT collection, key, fields, versions, device FROM changes WHERE kind = 'local'"
        ) { row in
            (
                id: "\(row.string(0) ?? "")/\(row.string(1) ?? "")", device: row.string(4) ?? "",
                state: try RecordCoding.decodeState(fields: row.string(2) ?? "{}", versions: row.string(3) ?? "{}")
            )
        }
        for change in local {
            ownDevices.insert(change.device)
            for (name, register) in change.state.fields {
                if let known = own[change.id]?[name], !register.wins(over: known) { continue }
                own[change.id, default: [:]][name] = register
            }
        }
        return (own, ownDevices)
    }

    /// Stores what is left of a record once unvouched values are taken out:
    /// `kept`, or the account's version when that would not be a usable
    /// record (or nothing when the account has none).
    private func keepUnvouched(
        _ collection: RecordCollection, key: String, kept: RecordState, account: RecordState
    ) throws {
        if kept.fields.isEmpty || Wire.problem(state: kept) != nil
            || Self.problem(of: collection, key: key, state: kept) != nil
        {
            if account.fields.isEmpty {
                try database.run(
                    "DELETE FROM records WHERE collection = ? AND key = ?", [.text(collection.rawValue), .text(key)])
                storedStamps?.records[StoredStamps.Key(collection: collection, key: key)] = nil
            } else {
                try storeMerged(collection, key: key, state: account)
            }
        } else {
            try storeMerged(collection, key: key, state: kept)
        }
    }

    /// Keeps the values taken out of a record in `removed`, restorable, and
    /// takes them out of the unpushed manifests.
    private func keepTakenOut(
        _ taken: [String: StampedValue], of collection: RecordCollection, key: String, versions: VersionVector,
        why: (_ writer: String) -> String
    ) throws -> RemovedRecord {
        try forgetInUnpushedManifests(
            taken, collection: collection, key: key, now: try self.record(collection, key: key) ?? RecordState())
        let writer = taken.values.max { $1.wins(over: $0) }?.stamp.device ?? ""
        let reason = why(writer)
        try database.run(
            "INSERT INTO removed (collection, key, fields, versions, removed_at, why) VALUES (?, ?, ?, ?, ?, ?)",
            [
                .text(collection.rawValue), .text(key), .text(RecordState.encodeFields(taken)),
                .text(RecordState.encodeVersions(versions)), .integer(currentMillis), .text(reason),
            ])
        var removed = RemovedRecord(id: database.lastInsertRowID, collection: collection.rawValue, key: key)
        removed.why = reason
        return removed
    }

    /// Whether what was set aside (``RemovedRecord/why``) is in the replica
    /// by now: each of its values held at its stamp or a newer one (it
    /// arrived from another machine, or was restored).
    public func isHeldNow(_ removed: RemovedRecord) throws -> Bool {
        guard removed.why != nil, let state = removed.state,
            let collection = RecordCollection(rawValue: removed.collection),
            let current = try record(collection, key: removed.key)
        else { return false }
        // A deletion is held once the record is deleted here by it or a later write (its other values are gone with it).
        if let deletion = state.fields[RecordState.deletedField], state.isDeleted {
            return current.isDeleted
                && current.fields[RecordState.deletedField].map { !(deletion.stamp > $0.stamp) } ?? false
        }
        return state.fields.allSatisfy { name, register in
            current.fields[name].map { !(register.stamp > $0.stamp) } ?? false
        }
    }

    /// Writes a removed record back as a new edit of each of its values (they
    /// then win, being newest; the server takes the record whole). Marked
    /// restored; restoring twice is refused.
    public func restore(removed id: Int64) throws -> RemovedRecord {
        try transaction {
            let found = try database.queryFirst(
                "SELECT id, collection, key, fields, versions, removed_at, restored_at, why FROM removed WHERE id = ?",
                [.integer(id)]
            ) { row in try Self.removedRecord(row) }
            guard let removed = found, let collection = RecordCollection(rawValue: removed.collection),
                let state = removed.state
            else {
                throw ReplicaError.notFound("no removed record #\(id); see 'brsync log --removed'")
            }
            // Set aside before 2026-12-05 (a retired key's ledger): brsync's own bookkeeping, not a write of the user's.
            guard collection != .ledger else {
                throw ReplicaError.invalidInput(
                    "removed record #\(id) is a ledger record (brsync's own bookkeeping of a retired key), not a rule, browser or "
                        + "setting: there is nothing to restore")
            }
            if let restored = removed.restoredAtMillis {
                throw ReplicaError.invalidInput(
                    "removed record #\(id) was restored already (\(Timestamp.iso8601(millis: restored)))")
            }
            var values = state.fields.mapValues(\.value)
            // A removed record comes back alive; a set-aside write comes back as
            // it was written, a deletion included.
            if removed.why == nil { values[RecordState.deletedField] = .bool(false) }
            try write(collection, key: removed.key, changes: values)
            try database.run(
                "UPDATE removed SET restored_at = ? WHERE id = ?", [.integer(currentMillis), .integer(id)])
            return removed
        }
    }
}
