import JSON
import ServerStore
import SyncCore

/// Whole records merged as they are (no change numbers of the client's):
/// a relay, a part at a time (``SyncStore/relayParts(_:)``), and a
/// push's ledger records (``mergeWhole(_:fieldsText:account:counters:into:nextSequence:in:)``).
extension SyncEngine {
    /// What a relay's records are worth computing once, before the write
    /// transaction (outside its lock): each record's fields as stored text
    /// (``RecordState/encodeFields(_:)``), which also settles its size; a
    /// record that wins every field it holds is stored as this text.
    struct PreparedRelay {
        let fieldsTexts: [String]

        init(_ request: RelayRequest) {
            fieldsTexts = request.records.map { RecordState.encodeFields($0.state.fields) }
        }
    }

    /// Whole records a client relays (after a restore), inside the store's
    /// write transaction: the same merge, no change numbers minted for the
    /// client. A record with a stamp too far ahead, or whose merge would be
    /// unusable, is rejected alone; the relaying device's pending records
    /// (``RelayRequest/ledger``) go first, all or the relay is refused.
    static func relay(
        _ request: RelayRequest, prepared: PreparedRelay? = nil, from device: Store.Device, authority: WriteAuthority,
        now: Int64, maxClockOffsetMilliseconds: Int64,
        in store: some StoreTransaction
    ) throws -> (applied: Int, rejected: [RejectedChange], accountEpoch: String) {
        let prepared = prepared ?? PreparedRelay(request)
        // In every part's transaction: a relay authenticated before its
        // device was revoked merges nothing after the revocation.
        try requireLive(device, in: store)
        var rejected: [RejectedChange] = []
        let counters = try store.accountCounters(device.accountID) ?? Store.AccountCounters()
        try checkSealing(keyID: request.keyID, account: counters)
        if let first = try authorize(authority, account: counters) {
            try store.registerSigningKey(account: device.accountID, first)
        }
        if let owner = request.ledgerOf {
            let applied = try applyLedgerRequest(
                request, of: owner, account: device.accountID, counters: counters,
                clientProtocol: authority.clientProtocol, now: now,
                maxClockOffsetMilliseconds: maxClockOffsetMilliseconds, in: store)
            return (applied, [], counters.epoch)
        }
        var nextSequence = counters.nextSequence
        // As a push: each record read and written once, whatever the relay repeats.
        var working: [WorkingKey: WorkingRecord] = [:]
        if !request.ledger.isEmpty {
            try applyLedger(
                request.ledger, of: try RelayRequest.pendingDevice(of: request.ledger), write: "relay",
                account: device.accountID, counters: counters, clientProtocol: authority.clientProtocol, now: now,
                maxClockOffsetMilliseconds: maxClockOffsetMilliseconds, into: &working, nextSequence: &nextSequence,
                in: store)
        }
        var usable: [ChangeRecord] = []
        var texts: [String] = []
        rejected += request.unreadable.map(\.rejection)
        for (record, text) in zip(request.records, prepared.fieldsTexts) {
            if let problem = try recordProblem(
                record, account: counters, clientProtocol: authority.clientProtocol, fieldsBytes: text.utf8.count)
                ?? ledgerWriterProblem(record, pusher: nil, account: device.accountID, in: store)
            {
                rejected.append(
                    RejectedChange(
                        sequence: record.sequence, collection: record.collection, key: record.key, reason: problem))
                continue
            }
            do {
                try checkStamps(
                    of: [record], ownDevice: nil, now: now, newest: counters.stampHigh,
                    maxClockOffsetMilliseconds: maxClockOffsetMilliseconds)
                usable.append(record)
                texts.append(text)
            } catch let error as ServerError {
                rejected.append(
                    RejectedChange(
                        sequence: record.sequence, collection: record.collection, key: record.key,
                        reason: error.description))
            }
        }
        try store.prefetch(account: device.accountID, keys: usable.map { (collection: $0.collection, key: $0.key) })
        // Records changed, each counted once however often the relay repeats it.
        var merged: Set<WorkingKey> = []
        for (record, text) in zip(usable, texts) {
            switch try mergeWhole(
                record, fieldsText: text, account: device.accountID, counters: counters, into: &working,
                nextSequence: &nextSequence, in: store)
            {
            case .merged: merged.insert(WorkingKey(collection: record.collection, key: record.key))
            case .unchanged: break
            case .unusable(let problem):
                rejected.append(
                    RejectedChange(
                        sequence: record.sequence, collection: record.collection, key: record.key, reason: problem))
            }
        }
        try commit(
            working, of: request.ledger.isEmpty ? usable : usable + request.ledger, account: device.accountID,
            nextSequence: nextSequence, counters: counters, now: now, in: store)
        return (merged.count, rejected, counters.epoch)
    }

    /// What merging a whole record into a write's working set did.
    enum WholeMerge {
        case merged, unchanged
        /// The merge would make an unusable record (``mergeProblem(_:collection:account:)``): nothing changed.
        case unusable(String)
    }

    /// Merges a whole record (relayed, or a push's ledger record: stamps and
    /// versions its own, no change number of the client's) into `working`,
    /// read from the store the first time, with the next sequence.
    /// - Parameter fieldsText: the record's fields as
    ///   ``RecordState/encodeFields(_:)`` writes them, when the caller wrote
    ///   them (outside the write lock): a merge that takes the record's
    ///   fields whole is sized and stored by it, not written again.
    static func mergeWhole(
        _ record: ChangeRecord, fieldsText: String? = nil, account: Int64, counters: Store.AccountCounters,
        into working: inout [WorkingKey: WorkingRecord], nextSequence: inout Int64, in store: some StoreTransaction
    ) throws -> WholeMerge {
        let place = WorkingKey(collection: record.collection, key: record.key)
        let existing =
            try working[place].map { Store.RecordVersion(state: $0.state, sequence: $0.sequence, writer: $0.writer) }
            ?? store.record(account: account, collection: record.collection, key: record.key)
        let base = existing?.state ?? RecordState()
        let merged = base.merged(with: record.state).state
        let text = fieldsText.flatMap { merged.fields == record.state.fields ? $0 : nil }
        if let problem = mergeProblem(
            merged, collection: record.collection, account: counters, fieldsBytes: text?.utf8.count)
        {
            return .unusable(problem)
        }
        guard merged != base else { return .unchanged }
        working[place] = WorkingRecord(
            state: merged, writer: writer(of: merged, base: existing, change: record.state), sequence: nextSequence,
            fieldsText: text, knownTo: nil, knownAfter: 0, isNew: working[place]?.isNew ?? (existing == nil))
        nextSequence += 1
        return .merged
    }
}
