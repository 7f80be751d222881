import Glibc
import Model
import Net
import Storage
import Synchronization
import SyncCore

extension ServerStore {
    // MARK: - Sync

    /// What a push transaction decided; errors are thrown after it ends, so
    /// a detected rollback's new epoch is committed.
    private enum PushOutcome {
        case applied(acknowledged: Int64, digest: String, applied: Int, lost: [LostField], rejected: [RejectedChange], needed: [Int64])
        case gap(expected: Int64, digest: String, newEpoch: String?)
        case diverged(acknowledged: Int64, digest: String)
    }

    /// Checks every stamp of pushed or relayed records: a device pushes only
    /// its own stamps (`ownDevice`; nil for a relay) and no stamp may be
    /// further ahead than allowed of `now`, the later of the server's wall
    /// clock and the newest stamp the account holds (an edit made after seeing
    /// a stamp accepted while the server's clock was fast must be stamped
    /// above it; it is not refused for that).
    func checkStamps(of changes: [ChangeRecord], ownDevice: String?, now: Int64, maxClockOffsetMilliseconds: Int64) throws {
        for change in changes {
            for (name, register) in change.state.fields {
                if let ownDevice, register.stamp.device != ownDevice {
                    throw ServerError.foreignStamp("field \"\(name)\" of change \(change.sequence) carries a stamp of device \(register.stamp.device); a device pushes only its own edits")
                }
                let ahead = register.stamp.wallMillis - now
                if ahead > maxClockOffsetMilliseconds {
                    throw ServerError.clockSkew(aheadMilliseconds: ahead, maximumMilliseconds: maxClockOffsetMilliseconds)
                }
            }
        }
    }

    /// Applies a push from `device` in one transaction: the changes after the
    /// replica's last applied sequence are merged with the shared merge, each
    /// changed record gets the account's next sequence number, and the
    /// replica's last applied sequence and that change's digest are recorded
    /// with them. A retried push is acknowledged and applies nothing; a gap is
    /// refused with what the server has; reused numbers (a copied or restored
    /// replica) are refused as `diverged`. A change whose merged record would
    /// be unusable is rejected alone (reported; its number still counts).
    public func push(_ request: PushRequest, from device: Device, maxClockOffsetMilliseconds: Int64) throws -> PushResponse {
        let now = currentMillis()
        let epoch = self.epoch
        // The chain through each change (see ``ChangeRecord/chained(after:)``),
        // after `base`, the chain through the change before; computed outside
        // the write lock. A push from the first change starts the chain.
        let baseChain = request.base ?? (request.from == 1 ? "" : nil)
        let pushChains = baseChain.map { ChangeRecord.chain(request.changes, after: $0) }
        let outcome = try withDatabase { database in
            try database.transaction(.immediate) { () -> PushOutcome in
                guard let revoked = try database.queryFirst(
                    "SELECT revoked FROM devices WHERE id = ?", [.integer(device.id)], { $0.int(0) == 1 })
                else { throw ServerError.unauthorized("the device no longer exists") }
                if revoked { throw ServerError.revoked }
                let stream = try database.queryFirst(
                    "SELECT last_seq, last_digest FROM device_streams WHERE account_id = ? AND client_device = ?",
                    [.integer(device.accountID), .text(request.device)]) { ($0.int64(0) ?? 0, $0.string(1) ?? "") }
                let last = stream?.0 ?? 0
                let lastDigest = stream?.1 ?? ""
                // Without a base, a push that goes on from the last change goes on from its chain.
                let chains = pushChains ?? (request.from == last + 1 ? ChangeRecord.chain(request.changes, after: lastDigest) : nil)
                func chain(through sequence: Int64) -> String? { chains?[Int(sequence - request.from)] }
                if request.from > last + 1 {
                    // The replica had this stream acknowledged further than the
                    // store has it: the store was restored from an older copy.
                    let newEpoch = stream != nil ? try Self.startNewEpoch(in: database) : nil
                    return .gap(expected: last + 1, digest: lastDigest, newEpoch: newEpoch)
                }
                if !lastDigest.isEmpty {
                    if request.from == last + 1, last > 0, let base = request.base, base != lastDigest {
                        return .diverged(acknowledged: last, digest: lastDigest)
                    }
                    // A retry overlapping what was applied must be the same changes.
                    if request.from <= last, request.to >= last, chain(through: last) != lastDigest {
                        return .diverged(acknowledged: last, digest: lastDigest)
                    }
                }
                guard request.to > last else {
                    // A retry of changes applied already; the client checks the digest.
                    return .applied(acknowledged: last, digest: lastDigest, applied: 0, lost: [], rejected: [], needed: [])
                }
                // Stamps are judged only on changes not applied yet (a retried
                // batch may hold applied ones), and the refusal says where this
                // device stands, so its client re-stamps only what is new.
                let stampHigh = try database.scalar("SELECT stamp_high FROM accounts WHERE id = ?", [.integer(device.accountID)])?.int64Value ?? 0
                let newChanges = request.changes.filter { $0.sequence > last }
                do {
                    try checkStamps(of: newChanges, ownDevice: request.device, now: max(now, stampHigh),
                                    maxClockOffsetMilliseconds: maxClockOffsetMilliseconds)
                } catch ServerError.clockSkew(let ahead, let maximum, _, _) {
                    throw ServerError.clockSkew(aheadMilliseconds: ahead, maximumMilliseconds: maximum, acknowledged: last, digest: lastDigest)
                }
                var lost: [LostField] = []
                var rejected: [RejectedChange] = []
                var needed: [Int64] = []
                var applied = 0
                var nextSequence = try database.scalar("SELECT next_seq FROM accounts WHERE id = ?", [.integer(device.accountID)])?.int64Value ?? 1
                // A cursor of 0 belongs to every timeline; another one only to its epoch.
                let pusherIsCurrent = request.since == 0 || (request.since != nil && request.epoch == epoch)
                for change in request.changes where change.sequence > last {
                    let existing = try database.queryFirst(
                        "SELECT fields, versions, seq FROM records WHERE account_id = ? AND collection = ? AND key = ?",
                        [.integer(device.accountID), .text(change.collection.rawValue), .text(change.key)]
                    ) { row in (try StoredRecord.decode(fields: row.string(0) ?? "{}", versions: row.string(1) ?? "{}"), row.int64(2) ?? 0) }
                    // An edit of a record this store does not have (its tombstone
                    // was purged, or the store was restored or is another
                    // account's) carries only the fields it changed: applying it
                    // would make a partial record. The push stops before it and
                    // is acknowledged up to the change before; the client sends
                    // the whole record (a relay) and then this change again. So
                    // a retry after a lost answer is told the same.
                    if existing == nil && change.state.versions != VersionVector([request.device: 1]) {
                        needed.append(change.sequence)
                        break
                    }
                    let base = existing?.0 ?? RecordState()
                    let (merged, concurrentLosers) = base.merged(with: change.state)
                    // Fields and values were checked when the push was read; a
                    // merge can only make a record too wide.
                    if merged.fields.count > Wire.maxFields {
                        rejected.append(RejectedChange(sequence: change.sequence, collection: change.collection, key: change.key,
                                                       reason: "the record would have more than \(Wire.maxFields) fields"))
                        continue
                    }
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
                    // The pusher had pulled the version this merges into, and
                    // none of its values lost: it holds the result, so its next
                    // pull need not fetch it back. (A value that lost, as two
                    // copies' edits can with the same stamp, was not pulled:
                    // the pusher must fetch the winner.)
                    let knownToPusher = pusherIsCurrent && reported.isEmpty && (existing?.1 ?? 0) <= (request.since ?? -1)
                    try upsertRecord(account: device.accountID, change.collection, key: change.key, state: merged,
                                     sequence: nextSequence, knownTo: knownToPusher ? request.device : nil,
                                     knownAfter: existing?.1 ?? 0, now: now, in: database)
                    nextSequence += 1
                    applied += 1
                }
                let newest = newChanges.lazy.flatMap { $0.state.fields.values.map(\.stamp.wallMillis) }.max() ?? 0
                try database.run("UPDATE accounts SET next_seq = ?, stamp_high = MAX(stamp_high, ?) WHERE id = ?",
                                 [.integer(nextSequence), .integer(newest), .integer(device.accountID)])
                let acknowledged = needed.first.map { $0 - 1 } ?? request.to
                let digest = acknowledged == last ? lastDigest : chain(through: acknowledged) ?? ""
                if acknowledged > last {
                    try database.run(
                        """
                        INSERT INTO device_streams (account_id, client_device, last_seq, last_digest) VALUES (?, ?, ?, ?)
                        ON CONFLICT (account_id, client_device) DO UPDATE SET last_seq = excluded.last_seq, last_digest = excluded.last_digest
                        """, [.integer(device.accountID), .text(request.device), .integer(acknowledged), .text(digest)])
                    try database.run(
                        "UPDATE devices SET last_device_seq = ?, client_device = ?, last_seen = ? WHERE id = ?",
                        [.integer(acknowledged), .text(request.device), .integer(now), .integer(device.id)])
                }
                return .applied(acknowledged: acknowledged, digest: digest, applied: applied, lost: lost, rejected: rejected, needed: needed)
            }
        }
        switch outcome {
        case .gap(let expected, let digest, let newEpoch):
            if let newEpoch { currentEpoch.withLock { $0 = newEpoch } }
            throw ServerError.gap(expected: expected, got: request.from, digest: digest)
        case .diverged(let acknowledged, let digest):
            throw ServerError.diverged(acknowledged: acknowledged, digest: digest)
        case .applied(let acknowledged, let digest, let applied, let lost, let rejected, let needed):
            return PushResponse(acknowledged: acknowledged, applied: applied, clock: clockStamp(), epoch: self.epoch, lost: lost,
                                acknowledgedDigest: digest, rejected: rejected, account: device.accountUID, needed: needed)
        }
    }

    /// Writes a record version with its new sequence number.
    private func upsertRecord(account: Int64, _ collection: RecordCollection, key: String, state: RecordState, sequence: Int64,
                              knownTo: String?, knownAfter: Int64 = 0, now: Int64, in database: Database) throws {
        try database.run(
            """
            INSERT INTO records (account_id, collection, key, fields, versions, seq, deleted, updated_at, known_to, known_after)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (account_id, collection, key) DO UPDATE SET
                fields = excluded.fields, versions = excluded.versions, seq = excluded.seq,
                deleted = excluded.deleted, updated_at = excluded.updated_at, known_to = excluded.known_to,
                known_after = excluded.known_after
            """,
            [.integer(account), .text(collection.rawValue), .text(key),
             .text(RecordState.encodeFields(state.fields)), .text(RecordState.encodeVersions(state.versions)),
             .integer(sequence), DatabaseValue(state.isDeleted), .integer(now), knownTo.map { .text($0) } ?? .null,
             .integer(knownAfter)])
    }

    /// Merges whole records a client relays (after a restore): the same merge,
    /// no change numbers, nothing minted. A record with a stamp too far ahead,
    /// or whose merge would be unusable, is rejected alone.
    public func relay(_ request: RelayRequest, from device: Device, maxClockOffsetMilliseconds: Int64) throws -> (applied: Int, rejected: [RejectedChange], response: PushResponse) {
        let now = currentMillis()
        var rejected: [RejectedChange] = []
        let (applied, tooWide) = try withDatabase { database in
            try database.transaction(.immediate) { () -> (Int, [RejectedChange]) in
                var applied = 0
                var tooWide: [RejectedChange] = []
                let stampHigh = try database.scalar("SELECT stamp_high FROM accounts WHERE id = ?", [.integer(device.accountID)])?.int64Value ?? 0
                var usable: [ChangeRecord] = []
                for record in request.records {
                    do {
                        try checkStamps(of: [record], ownDevice: nil, now: max(now, stampHigh), maxClockOffsetMilliseconds: maxClockOffsetMilliseconds)
                        usable.append(record)
                    } catch let error as ServerError {
                        tooWide.append(RejectedChange(sequence: record.sequence, collection: record.collection, key: record.key, reason: error.description))
                    }
                }
                var nextSequence = try database.scalar("SELECT next_seq FROM accounts WHERE id = ?", [.integer(device.accountID)])?.int64Value ?? 1
                for record in usable {
                    let existing = try database.queryFirst(
                        "SELECT fields, versions FROM records WHERE account_id = ? AND collection = ? AND key = ?",
                        [.integer(device.accountID), .text(record.collection.rawValue), .text(record.key)]
                    ) { row in try StoredRecord.decode(fields: row.string(0) ?? "{}", versions: row.string(1) ?? "{}") }
                    let base = existing ?? RecordState()
                    let merged = base.merged(with: record.state).state
                    if merged.fields.count > Wire.maxFields {
                        tooWide.append(RejectedChange(sequence: record.sequence, collection: record.collection, key: record.key,
                                                      reason: "the record would have more than \(Wire.maxFields) fields"))
                        continue
                    }
                    guard merged != base else { continue }
                    try upsertRecord(account: device.accountID, record.collection, key: record.key, state: merged,
                                     sequence: nextSequence, knownTo: nil, now: now, in: database)
                    nextSequence += 1
                    applied += 1
                }
                let newest = usable.lazy.flatMap { $0.state.fields.values.map(\.stamp.wallMillis) }.max() ?? 0
                try database.run("UPDATE accounts SET next_seq = ?, stamp_high = MAX(stamp_high, ?) WHERE id = ?",
                                 [.integer(nextSequence), .integer(newest), .integer(device.accountID)])
                return (applied, tooWide)
            }
        }
        rejected += tooWide
        let response = PushResponse(acknowledged: 0, applied: applied, clock: clockStamp(), epoch: epoch, lost: [],
                                    rejected: rejected, account: device.accountUID)
        return (applied, rejected, response)
    }

    /// Records of `device`'s account changed after `cursor`, in sequence order,
    /// at most `limit` (decoded; see ``pullText(token:since:limit:clientDevice:clientEpoch:)``).
    public func pull(since cursor: Int64, limit: Int, device: Device, clientDevice: PullingReplica? = nil, clientEpoch: String? = nil) throws -> PullResponse {
        let page = try withDatabase { database in
            var page = try pullPage(since: cursor, limit: limit, device: device, clientDevice: clientDevice, clientEpoch: clientEpoch, in: database)
            try finishPull(&page, since: cursor, device: device, clientEpoch: clientEpoch, in: database)
            return page
        }
        let changes = try page.rows.map { row in
            ChangeRecord(sequence: row.sequence, collection: row.collection, key: row.key,
                         state: try StoredRecord.decode(fields: row.fields, versions: row.versions))
        }
        var response = PullResponse(changes: changes, next: page.next, more: page.more, epoch: page.epoch, clock: clockStamp(), account: device.accountUID)
        response.reset = page.reset
        return response
    }

    /// Authenticates `token` and answers a pull for its device, as the JSON
    /// text of a ``PullResponse``: one borrowed connection, one read
    /// transaction, and the stored fields and versions spliced in as stored
    /// (they are kept in the wire's form), so serving a page parses nothing.
    /// - Parameters:
    ///   - clientDevice: the pulling replica: records its own pushes made
    ///     (from versions it had pulled) are skipped, but only when it proves
    ///     it is the replica that made the stream's latest push (a copy of its
    ///     home shares its device id, not its history).
    ///   - clientEpoch: the epoch the cursor belongs to; a cursor of another
    ///     timeline is not recorded, and a cursor beyond this store's
    ///     high-water mark starts a new epoch (the store was rolled back).
    public func pullText(token: String, since cursor: Int64, limit: Int, clientDevice: PullingReplica? = nil, clientEpoch: String? = nil,
                         reconciling: Bool = false) throws -> [UInt8] {
        let (page, device) = try withDatabase { database in
            var (device, page) = try database.transaction(.deferred) {
                let device = try authenticate(token: token, in: database)
                return (device, try pullPage(since: cursor, limit: limit, device: device, clientDevice: clientDevice, clientEpoch: clientEpoch,
                                             reconciling: reconciling, in: database))
            }
            try finishPull(&page, since: cursor, device: device, clientEpoch: clientEpoch, in: database)
            return (page, device)
        }
        var output: [UInt8] = []
        output.reserveCapacity(128 + page.rows.reduce(0) { $0 + $1.fields.utf8.count + $1.versions.utf8.count + $1.key.utf8.count + 64 })
        output += #"{"account":"#.utf8
        JSONValue.writeString(device.accountUID, into: &output)
        output += #","changes":["#.utf8
        for (index, row) in page.rows.enumerated() {
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
        JSONValue.writeString(page.epoch, into: &output)
        output += #","more":"#.utf8
        output += (page.more ? "true" : "false").utf8
        if page.reset { output += #","reset":true"#.utf8 }
        output += #","next":"#.utf8
        output += String(page.next).utf8
        output.append(UInt8(ascii: "}"))
        return output
    }

    /// Who pulls: a replica's device id, and the number and digest of its last
    /// change the server acknowledged.
    public struct PullingReplica: Sendable {
        public let device: String
        public let acknowledged: Int64
        public let digest: String

        public init(device: String, acknowledged: Int64, digest: String) {
            self.device = device
            self.acknowledged = acknowledged
            self.digest = digest
        }
    }

    /// A stored record version as read for a pull.
    struct PulledRow {
        let sequence: Int64
        let collection: RecordCollection
        let key: String
        let fields: String
        let versions: String
    }

    /// One page: the rows to send, the cursor after every row looked at
    /// (skipped ones included), whether more wait, and the epoch it belongs to.
    struct PulledPage {
        var rows: [PulledRow]
        var next: Int64
        var more: Bool
        var epoch: String
        /// The cursor is beyond what this store has: it was rolled back.
        var rollback: Bool
        /// The cursor is below a purged tombstone: the replica reconciles from zero.
        var reset = false
    }

    /// - Parameter reconciling: the replica is pulling everything after a
    ///   `reset`; its cursor passes below the purge point on the way.
    private func pullPage(since cursor: Int64, limit: Int, device: Device, clientDevice replica: PullingReplica?, clientEpoch: String?,
                          reconciling: Bool = false, in database: Database) throws -> PulledPage {
        let epoch = self.epoch
        var clientDevice: String?
        if let replica, replica.acknowledged > 0, !replica.digest.isEmpty,
           let stream = try database.queryFirst(
               "SELECT last_seq, last_digest FROM device_streams WHERE account_id = ? AND client_device = ?",
               [.integer(device.accountID), .text(replica.device)], { ($0.int64(0) ?? 0, $0.string(1) ?? "") }),
           stream.0 == replica.acknowledged && stream.1 == replica.digest {
            clientDevice = replica.device
        }
        if cursor > 0 && (clientEpoch == nil || clientEpoch == epoch) {
            // Read with the device when it authenticated, in this transaction.
            let (next, purged) = (device.accountNextSequence, device.accountPurgedThrough)
            if cursor > next - 1 { return PulledPage(rows: [], next: 0, more: true, epoch: epoch, rollback: true) }
            if cursor < purged && !reconciling {
                var page = PulledPage(rows: [], next: 0, more: true, epoch: epoch, rollback: false)
                page.reset = true
                return page
            }
        }
        let scannedRows = try database.query(
            "SELECT seq, collection, key, fields, versions, known_to, known_after FROM records WHERE account_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            [.integer(device.accountID), .integer(cursor), .integer(Int64(limit + 1))]
        ) { row -> (PulledRow, String?, Int64) in
            guard let collection = row.string(1).flatMap(RecordCollection.init(rawValue:)) else {
                throw ServerError.storeUnusable("a stored record has an unknown collection")
            }
            return (PulledRow(sequence: row.int64(0) ?? 0, collection: collection, key: row.string(2) ?? "",
                              fields: row.string(3) ?? "{}", versions: row.string(4) ?? "{}"), row.string(5), row.int64(6) ?? 0)
        }
        let scanned = scannedRows.count
        let next = scannedRows.prefix(limit).last?.0.sequence ?? cursor
        // Records this replica's own push made are not sent back: only when its
        // cursor covers the version the push merged into (identical copies can
        // both prove the push; only the cursor says which had that version).
        let rows = scannedRows.prefix(limit).compactMap { row, knownTo, knownAfter in
            clientDevice != nil && knownTo == clientDevice && knownAfter <= cursor ? nil : row
        }
        return PulledPage(rows: rows, next: next, more: scanned > limit, epoch: epoch, rollback: false)
    }

    /// The device's bookkeeping after a page; starts a new epoch on a rollback.
    private func finishPull(_ page: inout PulledPage, since cursor: Int64, device: Device, clientEpoch: String?, in database: Database) throws {
        if page.rollback {
            page.epoch = try database.transaction(.immediate) {
                // Another request may have started it already.
                let stored = try database.scalar("SELECT value FROM meta WHERE key = 'epoch'")?.stringValue ?? ""
                guard stored == page.epoch else { return stored }
                return try Self.startNewEpoch(in: database)
            }
            currentEpoch.withLock { $0 = page.epoch }
            page.more = false
            return
        }
        // A cursor of another timeline says nothing about this one, and one
        // below a purge is being given up.
        if let clientEpoch, clientEpoch != page.epoch { return }
        if page.reset { return }
        // Bookkeeping writes only when something moved: a no-change pull
        // (the common case, every few minutes per machine) stays a pure read.
        // `acknowledged_cursor` and `last_seen` are written once per device and
        // value (last_seen at most once a minute), so concurrent pulls do not
        // queue on the write lock.
        let now = currentMillis()
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
        let cutoff = currentMillis() - retentionMilliseconds
        return try withDatabase { database in
            try database.transaction(.immediate) {
                try database.run(
                    """
                    UPDATE accounts SET purged_through = MAX(purged_through, (
                        SELECT COALESCE(MAX(seq), 0) FROM records WHERE records.account_id = accounts.id AND deleted = 1 AND updated_at <= ?
                        AND seq <= (SELECT COALESCE(MIN(acknowledged_cursor), 0) FROM devices
                                    WHERE devices.account_id = accounts.id AND revoked = 0)))
                    """, [.integer(cutoff)])
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
