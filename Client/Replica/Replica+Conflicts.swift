import JSON
import Model
import Storage
import SyncCore

/// Values that lost a merge of concurrent edits (`brsync log --conflicts`,
/// `brsync restore ID`): kept once each, on the machine that wrote them
/// and on the machine whose push overwrote them on the server (docs/sync.md
/// says when one of them cannot tell).
extension Replica {
    /// The values this machine wrote in `local` that lost to `merged` (a
    /// different value), written after everything of this machine that
    /// `writer` (the version vector of the write that won each field; nil:
    /// the merged record's, which saw everything here) had seen: the
    /// counter each was written at comes from this machine's change log.
    /// Under its current id and every id it went by before (a key change
    /// gives it a new one: a value written before one still counts as its
    /// own, under the id it was written under).
    func ownValuesUnseen(
        by writer: (_ field: String) -> VersionVector?, local: RecordState, merged: RecordState,
        collection: RecordCollection, key: String
    ) throws -> [RecordState.LostValue] {
        // The ids of the values here that lost; each of them this machine's
        // (its current id, one it noted when it took a new one, or one
        // whose retirement names it as the successor) is looked at.
        let lostUnder = Set(
            local.fields.compactMap { name, mine -> String? in
                guard let winner = merged.fields[name], winner != mine, winner.value != mine.value else { return nil }
                return mine.stamp.device
            })
        var ids = lostUnder.contains(deviceID) ? [deviceID] : []
        let others = lostUnder.subtracting([deviceID])
        if !others.isEmpty {
            let former = Set(try formerDeviceIDs().map(\.id))
            let names = try deviceNames()
            ids += others.filter { former.contains($0) || names.current($0) == deviceID }.sorted()
        }
        var unseen: [RecordState.LostValue] = []
        for id in ids {
            unseen += try valuesUnseen(
                of: id, by: writer, local: local, merged: merged, collection: collection, key: key
            )
            .filter { value in !unseen.contains { $0.field == value.field } }
        }
        return unseen.sorted { $0.field < $1.field }
    }

    /// ``ownValuesUnseen(by:local:merged:collection:key:)`` of one id this machine wrote under.
    private func valuesUnseen(
        of id: String, by writer: (_ field: String) -> VersionVector?, local: RecordState, merged: RecordState,
        collection: RecordCollection, key: String
    ) throws -> [RecordState.LostValue] {
        let candidates = local.fields.filter { name, mine in
            guard mine.stamp.device == id, let winner = merged.fields[name], let seen = writer(name)?[id] else {
                return false
            }
            return winner != mine && winner.value != mine.value && local.versions[id] > seen
        }
        guard !candidates.isEmpty else { return [] }
        // The counter of this machine's write of each candidate value.
        var counters: [String: UInt64] = [:]
        try forEachOwnChange(by: id, of: collection, key: key) { change, _ in
            for (name, mine) in candidates where counters[name] == nil && change.fields[name] == mine {
                counters[name] = change.versions[id]
            }
            return counters.count < candidates.count
        }
        return candidates.compactMap { name, mine in
            guard let counter = counters[name], let seen = writer(name)?[id], counter > seen,
                let winner = merged.fields[name]
            else { return nil }
            return RecordState.LostValue(field: name, lost: mine, winner: winner)
        }
    }

    /// Whether this machine's change log holds its edit that wrote
    /// `register` to `field` over the register `replaced` (its stamp):
    /// the edit was made after seeing that value.
    func ownEdit(
        _ register: StampedValue, of collection: RecordCollection, key: String, field: String,
        replaced: StampedValue
    ) throws -> Bool {
        var found = false
        try forEachOwnChange(by: register.stamp.device, of: collection, key: key) { change, stamps in
            guard change.fields[field] == register else { return true }
            if case .object(let stamps)? = try? JSONValue.parse(stamps ?? "{}") {
                found = stamps[field]?.stringValue == replaced.stamp.description
            }
            return false
        }
        return found
    }

    /// This machine's changes of a record logged under `device`, newest
    /// first, each with the stamps of the registers it replaced (its
    /// `replaced` text), until `body` says stop.
    private func forEachOwnChange(
        by device: String, of collection: RecordCollection, key: String,
        _ body: (_ change: RecordState, _ replaced: String?) throws -> Bool
    ) throws {
        try database.forEachRow(
            """
            SELECT fields, versions, replaced FROM changes
            WHERE device = ? AND kind = 'local' AND collection = ? AND key = ? ORDER BY device_seq DESC
            """, [.text(device), .text(collection.rawValue), .text(key)]
        ) { row in
            try body(
                try RecordState(fieldsJSON: row.string(0) ?? "{}", versionsJSON: row.string(1) ?? "{}"),
                row.string(2))
        }
    }

    /// Keeps a value that lost a merge (once, however often it is reported).
    /// - Returns: whether it was new (the same loss reported again is kept once).
    @discardableResult
    public func recordConflict(
        collection: RecordCollection, key: String, field: String, lost: StampedValue, winner: StampedValue
    ) throws -> Bool {
        // The id a retired id passed to is brsync's bookkeeping, not the user's: two copies of one
        // home each name theirs (an outside check saw it listed, and offered for restoring).
        if collection == .settings, key.hasPrefix(Self.deviceNamePrefix), field == Self.successorField { return false }
        return try transaction {
            try database.run(
                """
                INSERT OR IGNORE INTO conflicts (collection, key, field, lost_value, lost_stamp, winner_value, winner_stamp, recorded_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(collection.rawValue), .text(key), .text(field), .text(lost.value.jsonText),
                    .text(lost.stamp.description),
                    .text(winner.value.jsonText), .text(winner.stamp.description), .integer(currentMillis),
                ])
            guard database.changes > 0 else { return false }
            // The same value lost before and was written again since (restored
            // on another machine): that earlier loss is written back, and
            // restoring it again would write it over what beat it this time.
            try markRestored(collection, key: key, field: field, value: lost.value, before: lost.stamp)
            return true
        }
    }

    /// Marks the open losses of `value` in a record's `field` written back
    /// (lost before `stamp`, when given). In the caller's transaction.
    func markRestored(
        _ collection: RecordCollection, key: String, field: String, value: JSONValue, before stamp: HLCTimestamp? = nil
    ) throws {
        // Stamps' texts sort as the stamps do (fixed-width hex, then the device).
        try database.run(
            """
            UPDATE conflicts SET restored_at = ?
            WHERE collection = ? AND key = ? AND field = ? AND lost_value = ? AND restored_at IS NULL
              AND (?6 IS NULL OR lost_stamp < ?6)
            """,
            [
                .integer(currentMillis), .text(collection.rawValue), .text(key), .text(field), .text(value.jsonText),
                stamp.map { .text($0.description) } ?? .null,
            ])
    }

    public func conflicts(limit: Int) throws -> [Conflict] {
        try read {
            try database.query(
                """
                SELECT id, collection, key, field, lost_value, lost_stamp, winner_value, winner_stamp, recorded_at, restored_at
                FROM conflicts ORDER BY id DESC LIMIT ?
                """, [.integer(Int64(limit))]
            ) { row in try Self.conflict(row) }
        }
    }

    static func conflict(_ row: Row) throws -> Conflict {
        func register(_ value: Int, _ stamp: Int) throws -> StampedValue {
            guard let text = row.string(stamp), let parsed = HLCTimestamp(text: text) else {
                throw ReplicaError.notAReplica(path: "replica", reason: "a stored conflict is damaged")
            }
            return StampedValue(try JSONValue.parse(row.string(value) ?? "null"), stamp: parsed)
        }
        return Conflict(
            id: row.int64(0) ?? 0, collection: row.string(1) ?? "", key: row.string(2) ?? "",
            field: row.string(3) ?? "",
            lost: try register(4, 5), winner: try register(6, 7), recordedAtMillis: row.int64(8) ?? 0,
            restoredAtMillis: row.int64(9))
    }

    /// Writes a lost value back as a new edit (it then wins, being newest).
    /// Marked restored, so `log --conflicts` says so; restoring twice is refused.
    /// - Returns: the conflict, and whether the record had been deleted
    ///   since and is alive again (every edit says the record is alive).
    @discardableResult
    public func restore(conflict id: Int64) throws -> (conflict: Conflict, revived: Bool) {
        try transaction {
            let found = try database.queryFirst(
                """
                SELECT id, collection, key, field, lost_value, lost_stamp, winner_value, winner_stamp, recorded_at, restored_at
                FROM conflicts WHERE id = ?
                """, [.integer(id)]
            ) { row in try Self.conflict(row) }
            guard let conflict = found else {
                throw ReplicaError.notFound("no conflict #\(id); see 'brsync log --conflicts'")
            }
            if let restored = conflict.restoredAtMillis {
                throw ReplicaError.invalidInput(
                    "conflict #\(id) was restored already (\(Timestamp.iso8601(millis: restored)))")
            }
            guard let collection = RecordCollection(rawValue: conflict.collection) else {
                throw ReplicaError.notFound("no conflict #\(id)")
            }
            let wasDeleted = try record(collection, key: conflict.key)?.isDeleted == true
            try write(collection, key: conflict.key, changes: [conflict.field: conflict.lost.value])
            try database.run(
                "UPDATE conflicts SET restored_at = ? WHERE id = ?", [.integer(currentMillis), .integer(id)])
            let alive = try record(collection, key: conflict.key)?.isDeleted == false
            return (conflict, wasDeleted && alive)
        }
    }
}
