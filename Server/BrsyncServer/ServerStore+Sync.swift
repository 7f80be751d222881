import Glibc
import Model
import Net
import Storage
import Synchronization
import SyncCore

extension ServerStore {
    // MARK: - Sync

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
        // Each change's stored text, digest and chain (see
        // ``ChangeRecord/chained(after:)``), computed outside the write lock.
        let prepared = SyncEngine.PreparedPush(request)
        let outcome = try withDatabase { database in
            try database.transaction(.immediate) {
                try SyncEngine.push(request, from: device, prepared: prepared, epoch: epoch, now: now,
                                    maxClockOffsetMilliseconds: maxClockOffsetMilliseconds, in: SQLiteSyncTransaction(database: database))
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

    /// Merges whole records a client relays (after a restore): the same merge,
    /// no change numbers, nothing minted. A record with a stamp too far ahead,
    /// or whose merge would be unusable, is rejected alone.
    public func relay(_ request: RelayRequest, from device: Device, maxClockOffsetMilliseconds: Int64) throws -> (applied: Int, rejected: [RejectedChange], response: PushResponse) {
        let now = currentMillis()
        let (applied, rejected) = try withDatabase { database in
            try database.transaction(.immediate) {
                try SyncEngine.relay(request, from: device, now: now, maxClockOffsetMilliseconds: maxClockOffsetMilliseconds,
                                     in: SQLiteSyncTransaction(database: database))
            }
        }
        let response = PushResponse(acknowledged: 0, applied: applied, clock: clockStamp(), epoch: epoch, lost: [],
                                    rejected: rejected, account: device.accountUID)
        return (applied, rejected, response)
    }

    /// Records of `device`'s account changed after `cursor`, in sequence order,
    /// at most `limit` (decoded; see ``pullText(token:since:limit:clientDevice:clientEpoch:reconciling:clientProtocol:)``).
    public func pull(since cursor: Int64, limit: Int, device: Device, clientDevice: PullingReplica? = nil, clientEpoch: String? = nil) throws -> PullResponse {
        let page = try withDatabase { database in
            var page = try pullPage(since: cursor, limit: limit, device: device, clientDevice: clientDevice, clientEpoch: clientEpoch,
                                    clientProtocol: 1, in: database)
            try finishPull(&page, since: cursor, device: device, clientEpoch: clientEpoch, in: database)
            return page
        }
        let changes = try page.rows.map { row in
            ChangeRecord(sequence: row.sequence, collection: row.collection, key: row.key,
                         state: try StoredRecord.decode(fields: row.fields, versions: row.versions))
        }
        var response = PullResponse(changes: changes, next: page.next, more: page.more, epoch: page.epoch, clock: clockStamp(), account: device.accountUID)
        response.reset = page.reset
        response.encrypted = device.accountEncrypted
        response.keyID = device.accountEncrypted ? device.accountKeyID : nil
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
    ///   - clientProtocol: the client's protocol (``Wire/protocolHeader``);
    ///     an encrypted account is refused to protocol 1.
    public func pullText(token: String, since cursor: Int64, limit: Int, clientDevice: PullingReplica? = nil, clientEpoch: String? = nil,
                         reconciling: Bool = false, clientProtocol: Int = Wire.protocolVersion, clientKeyID: String? = nil) throws -> [UInt8] {
        let (page, device) = try withDatabase { database in
            var (device, page) = try database.transaction(.deferred) {
                let device = try authenticate(token: token, in: database)
                try SyncEngine.checkProtocol(clientProtocol, keyID: clientKeyID, of: device)
                return (device, try pullPage(since: cursor, limit: limit, device: device, clientDevice: clientDevice, clientEpoch: clientEpoch,
                                             reconciling: reconciling, clientProtocol: clientProtocol, in: database))
            }
            try finishPull(&page, since: cursor, device: device, clientEpoch: clientEpoch, in: database)
            return (page, device)
        }
        return Self.pullJSON(page, device: device, clock: clockStamp())
    }

    /// A pull's answer as the JSON text of a ``PullResponse``, with the stored
    /// fields and versions spliced in as stored (they are kept in the wire's
    /// form), so serving a page parses nothing.
    static func pullJSON(_ page: PulledPage, device: Device, clock: HLCTimestamp) -> [UInt8] {
        let accountUID = device.accountUID
        var output: [UInt8] = []
        output.reserveCapacity(128 + page.rows.reduce(0) { $0 + $1.fields.utf8.count + $1.versions.utf8.count + $1.key.utf8.count + 64 })
        output += #"{"account":"#.utf8
        JSONValue.writeString(accountUID, into: &output)
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
        clock.write(into: &output)
        output += #"","epoch":"#.utf8
        JSONValue.writeString(page.epoch, into: &output)
        output += #","more":"#.utf8
        output += (page.more ? "true" : "false").utf8
        if page.reset { output += #","reset":true"#.utf8 }
        if device.accountEncrypted {
            output += #","encrypted":true,"key":"#.utf8
            JSONValue.writeString(device.accountKeyID, into: &output)
        }
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

    private func pullPage(since cursor: Int64, limit: Int, device: Device, clientDevice replica: PullingReplica?, clientEpoch: String?,
                          reconciling: Bool = false, clientProtocol: Int, in database: Database) throws -> PulledPage {
        try SyncEngine.pullPage(since: cursor, limit: limit, device: device, clientDevice: replica, clientEpoch: clientEpoch, epoch: epoch,
                                reconciling: reconciling, clientProtocol: clientProtocol, in: SQLiteSyncTransaction(database: database))
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
        let write = Bookkeeping.shouldWrite(bookkeeping, device: device, cursor: cursor, now: now)
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
