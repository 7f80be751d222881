import Glibc
import Model
import Net
import Storage
import Synchronization
import SyncCore

extension ServerStore {
    // MARK: - Sync

    /// Applies a push from `device` in one transaction: the changes after the
    /// device's last applied sequence are merged with the shared merge, each
    /// changed record gets the account's next sequence number, and the device's
    /// last applied sequence is recorded with them. A retried push is
    /// acknowledged and applies nothing; a gap is refused.
    public func push(_ request: PushRequest, from device: Device, maxClockOffsetMilliseconds: Int64) throws -> PushResponse {
        let now = Self.nowMillis()
        for change in request.changes {
            for (name, register) in change.state.fields {
                guard register.stamp.device == request.device else {
                    throw ServerError.foreignStamp("field \"\(name)\" of change \(change.sequence) carries a stamp of device \(register.stamp.device); a device pushes only its own edits")
                }
                let ahead = register.stamp.wallMillis - now
                if ahead > maxClockOffsetMilliseconds {
                    throw ServerError.clockSkew(aheadMilliseconds: ahead, maximumMilliseconds: maxClockOffsetMilliseconds)
                }
            }
        }
        let (acknowledged, applied, lost) = try withDatabase { database in
            try database.transaction(.immediate) { () -> (Int64, Int, [LostField]) in
                guard let current = try database.queryFirst(
                    "SELECT client_device, last_device_seq, revoked FROM devices WHERE id = ?", [.integer(device.id)],
                    { ($0.string(0), $0.int64(1) ?? 0, $0.int(2) == 1) })
                else { throw ServerError.unauthorized("the device no longer exists") }
                if current.2 { throw ServerError.revoked }
                if let bound = current.0, bound != request.device { throw ServerError.deviceMismatch(bound: bound) }
                let last = current.1
                if request.from > last + 1 { throw ServerError.gap(expected: last + 1, got: request.from) }
                var lost: [LostField] = []
                var applied = 0
                if request.to > last {
                    var nextSequence = try database.scalar("SELECT next_seq FROM accounts WHERE id = ?", [.integer(device.accountID)])?.int64Value ?? 1
                    for change in request.changes where change.sequence > last {
                        let existing = try database.queryFirst(
                            "SELECT fields, versions FROM records WHERE account_id = ? AND collection = ? AND key = ?",
                            [.integer(device.accountID), .text(change.collection.rawValue), .text(change.key)]
                        ) { row in try StoredRecord.decode(fields: row.string(0) ?? "{}", versions: row.string(1) ?? "{}") }
                        let base = existing ?? RecordState()
                        let (merged, concurrentLosers) = base.merged(with: change.state)
                        var reported: Set<String> = []
                        for (name, pushed) in change.state.fields {
                            if let winner = merged.fields[name], winner != pushed {
                                reported.insert(name)
                                lost.append(LostField(sequence: change.sequence, collection: change.collection, key: change.key,
                                                      field: name, lost: pushed, winner: winner))
                            }
                        }
                        // Values of another device that this concurrent push overwrote.
                        for loser in concurrentLosers where !reported.contains(loser.field) {
                            lost.append(LostField(sequence: change.sequence, collection: change.collection, key: change.key,
                                                  field: loser.field, lost: loser.lost, winner: loser.winner))
                        }
                        guard merged != base else { continue }
                        try database.run(
                            """
                            INSERT INTO records (account_id, collection, key, fields, versions, seq, deleted, updated_at)
                            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                            ON CONFLICT (account_id, collection, key) DO UPDATE SET
                                fields = excluded.fields, versions = excluded.versions, seq = excluded.seq,
                                deleted = excluded.deleted, updated_at = excluded.updated_at
                            """,
                            [.integer(device.accountID), .text(change.collection.rawValue), .text(change.key),
                             .text(RecordState.encodeFields(merged.fields)), .text(RecordState.encodeVersions(merged.versions)),
                             .integer(nextSequence), DatabaseValue(merged.isDeleted), .integer(now)])
                        nextSequence += 1
                        applied += 1
                    }
                    try database.run("UPDATE accounts SET next_seq = ? WHERE id = ?", [.integer(nextSequence), .integer(device.accountID)])
                }
                try database.run(
                    "UPDATE devices SET last_device_seq = MAX(last_device_seq, ?), client_device = ?, last_seen = ? WHERE id = ?",
                    [.integer(request.to), .text(request.device), .integer(now), .integer(device.id)])
                return (max(last, request.to), applied, lost)
            }
        }
        if let newest = request.changes.lazy.flatMap({ $0.state.fields.values.map(\.stamp) }).max() {
            self.clock.observe(newest, wallMillis: now)
        }
        let stamp = self.clock.tick(wallMillis: now)
        return PushResponse(acknowledged: acknowledged, applied: applied, clock: stamp, epoch: epoch, lost: lost)
    }

    /// Records of `device`'s account changed after `cursor`, in sequence order,
    /// at most `limit`. Sequence numbers are assigned inside write transactions,
    /// which SQLite serialises, and a read sees whole transactions only: a pull
    /// never skips a change that commits while it runs.
    public func pull(since cursor: Int64, limit: Int, device: Device) throws -> PullResponse {
        let (rows, page) = try withDatabase { database in
            let rows = try pullRows(since: cursor, limit: limit, accountID: device.accountID, in: database)
            return (rows, try finishPull(rows, since: cursor, limit: limit, device: device, in: database))
        }
        let changes = try rows.prefix(limit).map { row in
            ChangeRecord(sequence: row.sequence, collection: row.collection, key: row.key,
                         state: try StoredRecord.decode(fields: row.fields, versions: row.versions))
        }
        return PullResponse(changes: Array(changes), next: page.next, more: page.more, epoch: epoch, clock: clockStamp())
    }

    /// Authenticates `token` and answers a pull for its device, as the JSON
    /// text of a ``PullResponse``: one borrowed connection, one read
    /// transaction, and the stored fields and versions spliced in as stored
    /// (they are kept in the wire's form), so serving a page parses nothing.
    public func pullText(token: String, since cursor: Int64, limit: Int) throws -> [UInt8] {
        let (rows, page) = try withDatabase { database in
            let (device, rows) = try database.transaction(.deferred) {
                let device = try authenticate(token: token, in: database)
                return (device, try pullRows(since: cursor, limit: limit, accountID: device.accountID, in: database))
            }
            return (rows, try finishPull(rows, since: cursor, limit: limit, device: device, in: database))
        }
        var output: [UInt8] = []
        output.reserveCapacity(128 + rows.reduce(0) { $0 + $1.fields.utf8.count + $1.versions.utf8.count + $1.key.utf8.count + 64 })
        output += #"{"changes":["#.utf8
        for (index, row) in rows.prefix(limit).enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            output += #"{"collection":""#.utf8
            output += row.collection.rawValue.utf8
            output += #"","fields":"#.utf8
            output += row.fields.utf8
            output += #","key":"#.utf8
            JSONValue.writeString(row.key, into: &output)
            output += #","seq":"#.utf8
            output += String(row.sequence).utf8
            output += #","versions":"#.utf8
            output += row.versions.utf8
            output.append(UInt8(ascii: "}"))
        }
        output += #"],"clock":""#.utf8
        clockStamp().write(into: &output)
        output += #"","epoch":"#.utf8
        JSONValue.writeString(epoch, into: &output)
        output += #","more":"#.utf8
        output += (page.more ? "true" : "false").utf8
        output += #","next":"#.utf8
        output += String(page.next).utf8
        output.append(UInt8(ascii: "}"))
        return output
    }

    /// A stored record version as read for a pull.
    struct PulledRow {
        let sequence: Int64
        let collection: RecordCollection
        let key: String
        let fields: String
        let versions: String
    }

    private func pullRows(since cursor: Int64, limit: Int, accountID: Int64, in database: Database) throws -> [PulledRow] {
        try database.query(
            "SELECT seq, collection, key, fields, versions FROM records WHERE account_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            [.integer(accountID), .integer(cursor), .integer(Int64(limit + 1))]
        ) { row -> PulledRow in
            guard let collection = row.string(1).flatMap(RecordCollection.init(rawValue:)) else {
                throw ServerError.storeUnusable("a stored record has an unknown collection")
            }
            return PulledRow(sequence: row.int64(0) ?? 0, collection: collection, key: row.string(2) ?? "",
                             fields: row.string(3) ?? "{}", versions: row.string(4) ?? "{}")
        }
    }

    /// The page's cursor and "more" flag, and the device's bookkeeping.
    private func finishPull(_ rows: [PulledRow], since cursor: Int64, limit: Int, device: Device, in database: Database) throws -> (next: Int64, more: Bool) {
        // Bookkeeping writes only when something moved: a no-change pull
        // (the common case, every few minutes per machine) stays a pure read.
        // `acknowledged_cursor` and `last_seen` are written once per device and
        // value (last_seen at most once a minute), so concurrent pulls do not
        // queue on the write lock.
        let now = Self.nowMillis()
        let mayWrite = cursor > device.acknowledgedCursor || now - (device.lastSeenMillis ?? 0) > 60_000
        let write = mayWrite && bookkeeping.withLock { state -> Bool in
            var write = false
            if cursor > max(device.acknowledgedCursor, state.acknowledged[device.id] ?? 0) {
                state.acknowledged[device.id] = cursor
                write = true
            }
            if now - (device.lastSeenMillis ?? 0) > 60_000 && now - (state.lastSeen[device.id] ?? 0) > 60_000 {
                state.lastSeen[device.id] = now
                write = true
            }
            return write
        }
        if write {
            try database.run(
                "UPDATE devices SET acknowledged_cursor = MAX(acknowledged_cursor, ?), last_seen = ? WHERE id = ?",
                [.integer(cursor), .integer(now), .integer(device.id)])
        }
        let more = rows.count > limit
        return (rows.prefix(limit).last?.sequence ?? cursor, more)
    }
}

extension ServerStore {
    /// Deletes tombstones older than `retentionMilliseconds` that every
    /// active device of their account has pulled (its acknowledged cursor is
    /// past them): a machine added later never had the record, and a device
    /// that has not pulled keeps every tombstone, however long it stays
    /// offline. The age keeps a tombstone around for edits made long ago and
    /// pushed late, which it must still win against.
    /// - Returns: how many tombstones were removed.
    @discardableResult
    public func purgeTombstones(retentionMilliseconds: Int64) throws -> Int {
        let cutoff = Self.nowMillis() - retentionMilliseconds
        return try withDatabase { database in
            try database.transaction(.immediate) {
                try database.run(
                    """
                    DELETE FROM records WHERE deleted = 1 AND updated_at <= ? AND seq <= (
                        SELECT COALESCE(MIN(acknowledged_cursor), 0) FROM devices
                        WHERE devices.account_id = records.account_id AND revoked = 0)
                    """, [.integer(cutoff)])
                return database.changes
            }
        }
    }
}
