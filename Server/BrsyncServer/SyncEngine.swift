import Cryptography
import JSON
import Net
import ServerStore
import SyncCore

/// The sync protocol's decisions and the merge, written once for every store
/// (see ``StoreTransaction``): what a push applies, acknowledges or
/// refuses, what a relay merges, what a pull sends.
enum SyncEngine {
    /// What a push transaction decided; errors are thrown after it ends, so
    /// a detected rollback's new epoch is committed.
    enum PushOutcome {
        case applied(
            acknowledged: Int64, digest: String, applied: Int, lost: [LostField], lostOmitted: Int,
            rejected: [RejectedChange], needed: [Int64])
        case gap(expected: Int64, digest: String, newEpoch: String?)
        case diverged(acknowledged: Int64, digest: String)
    }

    /// What a push's changes are worth computing once, before the write
    /// transaction (outside its lock): each change's fields as stored text
    /// (``RecordState/encodeFields(_:)``; a new record is stored as pushed),
    /// its ``ChangeRecord/digest`` over that text, and the chain through each
    /// change after the push's base.
    /// A push or relay of many changes is read, and a push digested, in two
    /// halves, the second on a spare thread (``SecondThread``).
    static let secondThread = SecondThread(start: SpareThreads.start)

    struct PreparedPush {
        let fieldsTexts: [String]
        let digests: [String]
        let chains: [String]?

        /// - Parameter secondThread: digests a long push in two halves at once, when given.
        init(_ request: PushRequest, secondThread: SecondThread? = SyncEngine.secondThread) {
            var fieldsTexts: [String] = []
            var digests: [String] = []
            fieldsTexts.reserveCapacity(request.changes.count)
            digests.reserveCapacity(request.changes.count)
            let changes = request.changes
            let each: [Digested]
            if let secondThread, changes.count >= secondThread.worthSplitting {
                let middle = changes.count / 2
                let (first, second) = secondThread.both(
                    { Self.digest(changes[..<middle]) }, { Self.digest(changes[middle...]) })
                each = first + second
            } else {
                each = Self.digest(changes[...])
            }
            // In the push's order, the changes over a limit among them (digested as sent, stored never).
            var unreadable = request.unreadable.makeIterator(), nextUnreadable = unreadable.next()
            for (change, digested) in zip(changes, each) {
                while let skipped = nextUnreadable, skipped.sequence < change.sequence {
                    digests.append(skipped.digest)
                    fieldsTexts.append("")
                    nextUnreadable = unreadable.next()
                }
                digests.append(digested.digest)
                fieldsTexts.append(digested.fieldsText)
            }
            while let skipped = nextUnreadable {
                digests.append(skipped.digest)
                fieldsTexts.append("")
                nextUnreadable = unreadable.next()
            }
            self.fieldsTexts = fieldsTexts
            self.digests = digests
            // A push from the first change starts the chain.
            let base = request.base ?? (request.from == 1 ? "" : nil)
            chains = base.map { ChangeRecord.chain(digests: digests, after: $0) }
        }

        /// A change's fields as stored text, and its digest.
        private struct Digested: Sendable {
            let fieldsText: String
            let digest: String
        }

        private static func digest(_ changes: ArraySlice<ChangeRecord>) -> [Digested] {
            changes.map { change in
                let bytes = RecordState.encodeFieldBytes(change.state.fields)
                return Digested(
                    fieldsText: String(decoding: bytes, as: UTF8.self),
                    digest: ChangeRecord.digest(collection: change.collection, key: change.key, fieldsText: bytes[...]))
            }
        }
    }

    /// A push from `device`, inside the store's write transaction: the changes
    /// after the replica's last applied sequence are merged with the shared
    /// merge, each changed record gets the account's next sequence number, and
    /// the replica's last applied sequence and the chain through it are
    /// recorded with them. A retried push is acknowledged and applies nothing
    /// (its refusals, kept, are told again);
    /// a gap is refused with what the server has; reused numbers (a copied or
    /// restored replica) are refused as `diverged`. A change whose merged
    /// record would be unusable is rejected alone (reported; its number still
    /// counts).
    /// - Parameter prepared: the push's changes as stored text and their
    ///   digests, and the chain through each after the push's base (nil
    ///   without a base), computed before the transaction.
    /// - Parameter authority: what the request brings to write (``authorize(_:account:)``).
    /// - Parameter epoch: the store's epoch; the push's timeline is it and
    ///   the account's (``Store/epoch(store:account:)``), returned with the outcome.
    /// - Parameter timelineGate: who may start a readable account's timeline
    ///   (a push from further than the store has the device: a rollback); an
    ///   encrypted account's pushes are signed by a key holder.
    static func push(
        _ request: PushRequest, from device: Store.Device, authority: WriteAuthority, prepared: PreparedPush,
        epoch: String, now: Int64,
        maxClockOffsetMilliseconds: Int64, timelineGate: TimelineGate? = nil,
        in store: some StoreTransaction
    ) throws -> (PushOutcome, timeline: String) {
        try requireLive(device, in: store)
        // Locks the account (in a store shared by processes) before anything
        // of it is read: pushes of one account are serialised.
        let counters = try store.accountCounters(device.accountID) ?? Store.AccountCounters()
        try checkSealing(keyID: request.keyID, account: counters)
        if let first = try authorize(authority, account: counters) {
            try store.registerSigningKey(account: device.accountID, first)
        }
        let outcome = try push(
            request, from: device, prepared: prepared, storeEpoch: epoch, counters: counters,
            clientProtocol: authority.clientProtocol, now: now,
            maxClockOffsetMilliseconds: maxClockOffsetMilliseconds,
            timelineGate: counters.encrypted ? nil : timelineGate, in: store)
        if case .gap(_, _, let newEpoch?) = outcome { return (outcome, newEpoch) }
        return (outcome, Store.epoch(store: epoch, account: counters.epoch))
    }

    /// Throws unless `device` still exists, is not revoked and still has
    /// the token the request came with, read inside the write: a request
    /// authenticated before `device revoke` or `device token` writes
    /// nothing after it.
    static func requireLive(_ device: Store.Device, in store: some StoreTransaction) throws {
        guard let standing = try store.deviceStanding(device.id) else {
            throw ServerError.unauthorized("the device no longer exists")
        }
        if standing.revoked { throw ServerError.revoked }
        if let hash = device.tokenHash, !Crypto.constantTimeEqual(hash, standing.tokenHash) {
            throw ServerError.unauthorized(
                "this device was given a new token: the one this request came with no longer works")
        }
    }

    /// The writer of `merged` (``Store/RecordVersion/writer``): the
    /// change's version vector when the change brought the newest stamp
    /// (equal stamps are one write: the stored writer stays), else the
    /// stored record's writer; nil when that is `merged`'s own vector (no
    /// write it had not seen was merged in) or the record is new.
    static func writer(of merged: RecordState, base: Store.RecordVersion?, change: RecordState) -> VersionVector? {
        guard let base else { return nil }
        let brought =
            switch (change.newestStamp, base.state.newestStamp) {
            case (let theirs?, let stored?): theirs > stored
            case (.some, nil): true
            case (nil, _): false
            }
        let writer = brought ? change.versions : base.writer ?? base.state.versions
        return writer == merged.versions ? nil : writer
    }

    /// A record as a push has merged it so far (see the push's working set).
    typealias WorkingKey = Store.RecordPlace

    /// Writes each record of a push's or relay's working set once, in the
    /// order of their numbers.
    /// Writes a push's or a relay's records, moves the account's counters
    /// past them (the next number, the newest stamp of `changes`), and
    /// checks the account's quota against what the writes made of it.
    static func commit(
        _ working: [WorkingKey: WorkingRecord], of changes: [ChangeRecord], account: Int64, nextSequence: Int64,
        counters: Store.AccountCounters, now: Int64, in store: some StoreTransaction
    ) throws {
        for (place, record) in working.sorted(by: { $0.value.sequence < $1.value.sequence }) {
            try store.upsertRecord(
                account: account, collection: place.collection, key: place.key, state: record.state,
                writer: record.writer,
                fieldsText: record.fieldsText, sequence: record.sequence, knownTo: record.knownTo,
                knownAfter: record.knownAfter, now: now, isNew: record.isNew)
        }
        let newest = changes.lazy.flatMap { $0.state.fields.values.map(\.stamp.wallMillis) }.max() ?? 0
        try store.setAccountCounters(account, nextSequence: nextSequence, stampAtLeast: newest)
        try checkQuota(before: counters, after: try store.accountUsage(account))
    }

    struct WorkingRecord {
        let state: RecordState
        let writer: VersionVector?
        let sequence: Int64
        let fieldsText: String?
        let knownTo: String?
        let knownAfter: Int64
        /// The store held no such record when the transaction read it.
        let isNew: Bool
    }

    /// The values a push's changes lost, within a byte budget: each names a
    /// winner in full, so a small push of many losing edits to a large
    /// record would otherwise make an answer hundreds of times its size.
    /// Past the budget they are counted, not listed.
    struct LostList {
        static let budgetBytes = 1 << 20
        private(set) var fields: [LostField] = []
        private(set) var omitted = 0
        private var bytes = 0

        mutating func append(_ field: LostField) {
            let size =
                64 + field.key.utf8.count + field.field.utf8.count
                + Wire.size(of: field.lost.value, limit: Self.budgetBytes)
                + Wire.size(of: field.winner.value, limit: Self.budgetBytes)
            guard omitted == 0, bytes + size <= Self.budgetBytes else {
                omitted += 1
                return
            }
            bytes += size
            fields.append(field)
        }
    }

    /// One page of a pull, inside the store's read transaction.
    /// - Parameter reconciling: the replica is pulling everything after a
    ///   `reset`; its cursor passes below the purge point on the way.
    /// - Parameter clientProtocol: a pull from zero is answered `reset` on an
    ///   account that purged deletions only for clients of protocol 2 (they
    ///   take `reset` at any cursor); older ones get the records.
    static func pullPage(
        since cursor: Int64, limit: Int, device: Store.Device, clientDevice replica: PullRequest.Pusher?,
        origin: CursorOrigin, epoch: String, reconciling: Bool, clientProtocol: Int,
        in store: some SyncReadTransaction
    ) throws -> Store.PulledPage {
        var clientDevice: String?
        if let replica, replica.pushed > 0, !replica.digest.isEmpty,
            let stream = try store.stream(account: device.accountID, clientDevice: replica.device),
            stream.last == replica.pushed && stream.digest == replica.digest
        {
            clientDevice = replica.device
        }
        // Read with the device when it authenticated, in this transaction.
        let (accountNext, purged) = (device.accountNextSequence, device.accountPurgedThrough)
        // A cursor of another account is not of this one's timeline, even
        // where both accounts share their store's epoch.
        let sameTimeline = origin.isOf(epoch: epoch, account: device.accountUID)
        if cursor > 0 && sameTimeline && cursor > accountNext - 1 {
            return Store.PulledPage(rows: [], next: 0, more: true, epoch: epoch, rollback: true)
        }
        // A cursor below a purged deletion has missed it; so has a pull from
        // zero by a replica that may hold records from before (a device
        // added again, a new epoch): both pull everything, reconciling, and
        // drop what the server no longer has.
        // An encrypted account never asks: it keeps its deletions, and its
        // machines drop nothing on the server's word.
        if cursor < purged && !reconciling && !device.accountEncrypted
            && (cursor == 0 ? clientProtocol >= 2 : sameTimeline)
        {
            var page = Store.PulledPage(rows: [], next: 0, more: true, epoch: epoch, rollback: false)
            page.reset = true
            return page
        }
        let scannedRows = try store.records(account: device.accountID, after: cursor, limit: limit + 1)
        // Cut by the page's byte budget, or past the limit: more follow.
        let more = scannedRows.count > limit || store.truncated
        // The last page has shown everything the account holds: its cursor is
        // the account's latest sequence, which also passes the purge point
        // when the newest records were purged deletions (a cursor left below
        // it would be answered `reset` at every pull).
        let lastRow = scannedRows.prefix(limit).last?.sequence ?? cursor
        let next = more ? lastRow : max(lastRow, accountNext - 1)
        // Records this replica's own push made are not sent back: only when its
        // cursor covers the version the push merged into (identical copies can
        // both prove the push; only the cursor says which had that version).
        // Ledger records go to clients that keep ledgers only (the cursor
        // passes them for the others, which never read them).
        let rows = scannedRows.prefix(limit).filter { row in
            !(clientDevice != nil && row.knownTo == clientDevice && row.knownAfter <= cursor)
                && Wire.sends(collection: row.collection, key: row.key, toProtocol: clientProtocol)
        }
        return Store.PulledPage(rows: rows, next: next, more: more, epoch: epoch, rollback: false)
    }
}

extension Store {
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
        /// The asking replica's stream, echoed when it asked (``PullRequest/chainOf``).
        var chain: ChainEcho?
    }
}
