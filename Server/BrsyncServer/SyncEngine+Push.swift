import ServerStore
import SyncCore

/// A push, once the account is locked and the request may write: where the
/// device's stream stands, each change merged, and what is written and
/// answered.
extension SyncEngine {
    static func push(
        _ request: PushRequest, from device: Store.Device, prepared: PreparedPush, storeEpoch: String,
        counters: Store.AccountCounters, clientProtocol: Int, now: Int64, maxClockOffsetMilliseconds: Int64,
        timelineGate: TimelineGate?,
        in store: some StoreTransaction
    ) throws -> PushOutcome {
        let epoch = Store.epoch(store: storeEpoch, account: counters.epoch)
        let stream = try store.stream(account: device.accountID, clientDevice: request.device)
        // Each device id a token pushes under is a stream the store keeps:
        // bounded per account, like its records (a copy or a key change
        // takes a new id; nothing honest needs thousands).
        if stream == nil, case let count = try store.streamCount(account: device.accountID),
            count >= Store.maxStreamsPerAccount
        {
            throw ServerError.quotaExceeded(
                what: "replica streams (device ids that pushed)", would: count + 1, limit: Store.maxStreamsPerAccount)
        }
        let position = StreamPosition(
            last: stream?.last ?? 0, digest: stream?.digest ?? "", isNew: stream == nil, request: request,
            prepared: prepared)
        if let answer = try position.answerWithoutApplying(
            request, from: device, epoch: epoch, storeEpoch: storeEpoch, timelineGate: timelineGate, in: store)
        {
            return answer
        }
        let last = position.last
        // Stamps are judged only on changes not applied yet (a retried
        // batch may hold applied ones), and the refusal says where this
        // device stands, so its client re-stamps only what is new.
        let newChanges = request.changes.filter { $0.sequence > last }
        do {
            try checkStamps(
                of: newChanges, ownDevice: request.device, now: now, newest: counters.stampHigh,
                maxClockOffsetMilliseconds: maxClockOffsetMilliseconds)
        } catch ServerError.clockSkew(let ahead, let maximum, _, _) {
            throw ServerError.clockSkew(
                aheadMilliseconds: ahead, maximumMilliseconds: maximum, acknowledged: last, digest: position.digest)
        }
        var merging = MergingPush(nextSequence: counters.nextSequence)
        try store.prefetch(account: device.accountID, keys: newChanges.map { (collection: $0.collection, key: $0.key) })
        do {
            try applyLedger(
                request.ledger, of: request.device, write: "push", account: device.accountID, counters: counters,
                clientProtocol: clientProtocol, now: now,
                maxClockOffsetMilliseconds: maxClockOffsetMilliseconds, into: &merging.working,
                nextSequence: &merging.nextSequence, in: store)
        } catch ServerError.clockSkew(let ahead, let maximum, _, _) {
            // A pending record's stamp too far ahead says where this device
            // stands too: without it, a client that found the server
            // restored would re-stamp changes the server holds, and fork.
            throw ServerError.clockSkew(
                aheadMilliseconds: ahead, maximumMilliseconds: maximum, acknowledged: last, digest: position.digest)
        }
        let context = PushContext(
            request: request, device: device, prepared: prepared, counters: counters, clientProtocol: clientProtocol,
            // A cursor of 0 belongs to every timeline; another one only to its
            // epoch, of this account.
            pusherIsCurrent: request.since == 0
                || (request.since != nil && request.epoch == epoch
                    && request.origin.isOf(epoch: epoch, account: device.accountUID))
        )
        for change in newChanges {
            try merge(change, context, into: &merging, in: store)
        }
        // Each record once, with the number of the last change to it (the
        // numbers in between are simply not used, as when a record changes again).
        try commit(
            merging.working, of: request.ledger.isEmpty ? newChanges : newChanges + request.ledger,
            account: device.accountID, nextSequence: merging.nextSequence, counters: counters, now: now, in: store)
        return try acknowledge(
            merging, of: request, from: device, position: position, clientProtocol: clientProtocol, now: now,
            in: store)
    }

    /// Where the pushing device's stream stands in the store, and the chain
    /// through the push's changes.
    private struct StreamPosition {
        /// The stream's last applied change (0 for none), and the chain through it.
        let last: Int64
        let digest: String
        /// Whether the store has no stream of the device yet.
        let isNew: Bool
        /// The chain through each of the push's changes, when it can be known.
        let chains: [String]?
        let from: Int64

        init(last: Int64, digest: String, isNew: Bool, request: PushRequest, prepared: PreparedPush) {
            self.last = last
            self.digest = digest
            self.isNew = isNew
            from = request.from
            // Without a base, a push that goes on from the last change goes on from its chain.
            chains =
                prepared.chains
                ?? (request.from == last + 1 ? ChangeRecord.chain(digests: prepared.digests, after: digest) : nil)
        }

        func chain(through sequence: Int64) -> String? { chains?[Int(sequence - from)] }

        /// The answer to a push that applies nothing: one from further than
        /// the store has the device (a gap), one that does not go on from
        /// what the store has (diverged), or a retry of changes applied
        /// already; nil for a push that goes on.
        func answerWithoutApplying(
            _ request: PushRequest, from device: Store.Device, epoch: String, storeEpoch: String,
            timelineGate: TimelineGate?, in store: some StoreTransaction
        ) throws -> PushOutcome? {
            if request.from > last + 1 {
                // The replica had this stream acknowledged further than the
                // store has it: the account was rolled back (a restored copy).
                // A new timeline starts once: a replica still on an older one
                // (another request started it, or the store's own changed) is
                // only told where the store stands.
                var newEpoch: String?
                if !isNew, request.origin.isOf(epoch: epoch, account: device.accountUID) {
                    try timelineGate?.admit(
                        device,
                        because: "it pushed from change \(request.from) of a device the store has through \(last)")
                    newEpoch = Store.epoch(store: storeEpoch, account: try store.startNewAccountEpoch(device.accountID))
                }
                return .gap(expected: last + 1, digest: digest, newEpoch: newEpoch)
            }
            if !digest.isEmpty {
                if request.from == last + 1, last > 0, let base = request.base, base != digest {
                    return .diverged(acknowledged: last, digest: digest)
                }
                // A retry overlapping what was applied must be the same changes.
                if request.from <= last, request.to >= last, chain(through: last) != digest {
                    return .diverged(acknowledged: last, digest: digest)
                }
            }
            guard request.to > last else {
                // A retry of changes applied already; the client checks the
                // digest, and is told again which of them were refused. Its
                // pending records are not taken: a retry is also how a home
                // restored from an older copy of itself first speaks (its
                // client forks at this answer), and its ledger is as old.
                let refused = try store.refusals(
                    account: device.accountID, clientDevice: request.device, from: request.from, through: request.to)
                return .applied(
                    acknowledged: last, digest: digest, applied: 0, lost: [], lostOmitted: 0, rejected: refused,
                    needed: [])
            }
            return nil
        }
    }

    /// What every change of a push is merged with.
    private struct PushContext {
        let request: PushRequest
        let device: Store.Device
        let prepared: PreparedPush
        let counters: Store.AccountCounters
        let clientProtocol: Int
        /// Whether the pusher's cursor is on the account's timeline.
        let pusherIsCurrent: Bool

        /// The change's fields as stored text, as the digest read them.
        func fieldsText(of change: ChangeRecord) -> String {
            prepared.fieldsTexts[Int(change.sequence - request.from)]
        }
    }

    /// A push's changes as they are merged, before anything is written.
    private struct MergingPush {
        var lost = LostList()
        var rejected: [RejectedChange] = []
        /// Changes whose record the store lacks: the client sends it whole first.
        var needed: [Int64] = []
        var applied = 0
        var nextSequence: Int64
        /// The records this push has merged so far, written once each at the
        /// end: a push that edits one large record a thousand times reads and
        /// writes it once, not a thousand times, under the write lock.
        var working: [WorkingKey: WorkingRecord] = [:]

        init(nextSequence: Int64) { self.nextSequence = nextSequence }
    }

    /// Merges one change into the push's working records, or rejects it or
    /// names its record as needed.
    private static func merge(
        _ change: ChangeRecord, _ context: PushContext, into merging: inout MergingPush,
        in store: some StoreTransaction
    ) throws {
        let request = context.request
        let account = context.device.accountID
        // Past the first change whose record this store lacks, nothing
        // more is applied: the others like it are only named, so the
        // client sends all those records whole in one go (one request a
        // record, before, made a copied home's push of 300 such changes
        // look like a server that never lets it finish).
        if merging.needed.isEmpty,
            let problem = try recordProblem(
                change, account: context.counters, clientProtocol: context.clientProtocol,
                fieldsBytes: context.fieldsText(of: change).utf8.count)
                ?? ledgerWriterProblem(change, pusher: request.device, account: account, in: store)
        {
            merging.rejected.append(
                RejectedChange(
                    sequence: change.sequence, collection: change.collection, key: change.key, reason: problem))
            return
        }
        let place = WorkingKey(collection: change.collection, key: change.key)
        let existing =
            try merging.working[place].map {
                Store.RecordVersion(state: $0.state, sequence: $0.sequence, writer: $0.writer)
            }
            ?? store.record(account: account, collection: change.collection, key: change.key)
        // An edit of a record this store does not have (its tombstone
        // was purged, or the store was restored or is another
        // account's) carries only the fields it changed: applying it
        // would make a partial record. The push stops before it and
        // is acknowledged up to the change before; the client sends
        // the whole record (a relay) and then this change again. So
        // a retry after a lost answer is told the same. The later
        // changes of the batch that need the same are named with it.
        if existing == nil && change.state.versions != VersionVector([request.device: 1]) {
            merging.needed.append(change.sequence)
            return
        }
        if !merging.needed.isEmpty { return }
        let base = existing?.state ?? RecordState()
        // Merged into nothing, a change is itself.
        let (merged, concurrentLosers) = existing == nil ? (change.state, []) : base.merged(with: change.state)
        if let problem = Self.mergeProblem(
            merged, collection: change.collection, account: context.counters,
            fieldsBytes: existing == nil ? context.fieldsText(of: change).utf8.count : nil)
        {
            merging.rejected.append(
                RejectedChange(
                    sequence: change.sequence, collection: change.collection, key: change.key, reason: problem))
            return
        }
        let reported = report(change, merged: merged, concurrentLosers: concurrentLosers, into: &merging.lost)
        guard merged != base else { return }
        // The pusher had pulled the version this merges into, and
        // none of its values lost: it holds the result, so its next
        // pull need not fetch it back. (A value that lost, as two
        // copies' edits can with the same stamp, was not pulled:
        // the pusher must fetch the winner.)
        let knownToPusher =
            context.pusherIsCurrent && reported.isEmpty && (existing?.sequence ?? 0) <= (request.since ?? -1)
        // A new record is the change itself: its fields are stored as the digest read them.
        merging.working[place] = WorkingRecord(
            state: merged, writer: Self.writer(of: merged, base: existing, change: change.state),
            sequence: merging.nextSequence,
            fieldsText: existing == nil ? context.fieldsText(of: change) : nil,
            knownTo: knownToPusher ? request.device : nil,
            knownAfter: merging.working[place]?.knownAfter ?? existing?.sequence ?? 0,
            isNew: merging.working[place]?.isNew ?? (existing == nil))
        merging.nextSequence += 1
        merging.applied += 1
    }

    /// Puts the values that lost in this merge on the list: the pushed
    /// values that lost, and values of another device that this concurrent
    /// push overwrote. Returns the fields whose pushed value lost.
    private static func report(
        _ change: ChangeRecord, merged: RecordState, concurrentLosers: [RecordState.LostValue],
        into lost: inout LostList
    ) -> Set<String> {
        var reported: Set<String> = []
        for (name, pushed) in change.state.fields {
            if let winner = merged.fields[name], winner != pushed {
                reported.insert(name)
                lost.append(
                    LostField(
                        sequence: change.sequence, collection: change.collection, key: change.key,
                        field: name, lost: pushed, winner: winner))
            }
        }
        for loser in concurrentLosers where !reported.contains(loser.field) {
            lost.append(
                LostField(
                    sequence: change.sequence, collection: change.collection, key: change.key,
                    field: loser.field, lost: loser.lost, winner: loser.winner))
        }
        return reported
    }

    /// Records how far the device's stream is applied and what was refused,
    /// and makes the answer.
    private static func acknowledge(
        _ merging: MergingPush, of request: PushRequest, from device: Store.Device, position: StreamPosition,
        clientProtocol: Int, now: Int64, in store: some StoreTransaction
    ) throws -> PushOutcome {
        let last = position.last
        let acknowledged = merging.needed.first.map { $0 - 1 } ?? request.to
        var rejected = merging.rejected
        // Changes over a limit were never read as records: rejected alone, their numbers counted.
        rejected += request.unreadable.filter { $0.sequence > last && $0.sequence <= acknowledged }.map(\.rejection)
        rejected.sort { $0.sequence < $1.sequence }
        // Kept, so that a retry is told them too; and the refusals of the
        // changes this request retries (applied before) are told again.
        try store.keepRefusals(account: device.accountID, clientDevice: request.device, rejected)
        if request.from <= last {
            rejected.insert(
                contentsOf: try store.refusals(
                    account: device.accountID, clientDevice: request.device, from: request.from, through: last),
                at: 0)
        }
        let digest = acknowledged == last ? position.digest : position.chain(through: acknowledged) ?? ""
        if acknowledged > last {
            if acknowledged > Store.refusalsKept {
                try store.forgetRefusals(
                    account: device.accountID, clientDevice: request.device, through: acknowledged - Store.refusalsKept)
            }
            try store.setStream(
                account: device.accountID, clientDevice: request.device, last: acknowledged, digest: digest)
            try store.notePush(
                device: device.id, lastDeviceSequence: acknowledged, clientDevice: request.device, now: now,
                protocol: clientProtocol)
            _ = try SyncStore.markSealedFormat(device, clientProtocol: clientProtocol, now: now, in: store)
        }
        return .applied(
            acknowledged: acknowledged, digest: digest, applied: merging.applied, lost: merging.lost.fields,
            lostOmitted: merging.lost.omitted, rejected: rejected, needed: merging.needed)
    }
}
