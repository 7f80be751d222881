import JSON
import ServerStore
import SyncCore

/// Ledger records (Deploy/SECURITY.md, "A device's own writes, counted")
/// as a write takes them: a push's pending records, first and whole with
/// its batch, and a device's ledger request (its shards and head), all
/// together or refused whole. Either way a device writes only its own.
extension SyncEngine {
    /// A write's own ledger records (a push's ``PushRequest/ledger``, a
    /// relay's ``RelayRequest/ledger``): `device`'s pending records, merged
    /// into `working` before the write's records, all of them or none: one
    /// that is not `device`'s own, not in a ledger record's form, stamped too
    /// far ahead or unusable once merged refuses the whole write (400), so
    /// writes are never applied without the pending record that describes
    /// them. `write` names the write in the refusal ("push", "relay").
    static func applyLedger(
        _ ledger: [ChangeRecord], of device: String, write: String, account: Int64,
        counters: Store.AccountCounters, clientProtocol: Int, now: Int64, maxClockOffsetMilliseconds: Int64,
        into working: inout [WorkingKey: WorkingRecord], nextSequence: inout Int64, in store: some StoreTransaction
    ) throws {
        guard !ledger.isEmpty else { return }
        func refuse(_ record: ChangeRecord, _ problem: String) -> ServerError {
            .badRequest(
                "ledger record '\(DisplayText.printable(record.key.prefix(80)))': \(problem); the \(write) is refused whole"
            )
        }
        // A stamp too far ahead is refused as a change's is (the client
        // re-stamps on that code), the whole write with it.
        try checkStamps(
            of: ledger, ownDevice: device, now: now, newest: counters.stampHigh,
            maxClockOffsetMilliseconds: maxClockOffsetMilliseconds)
        for record in ledger {
            if let problem = try recordProblem(record, account: counters, clientProtocol: clientProtocol)
                ?? ledgerWriterProblem(record, pusher: device, account: account, in: store)
            {
                throw refuse(record, problem)
            }
            if case .unusable(let problem) = try mergeWhole(
                record, account: account, counters: counters, into: &working, nextSequence: &nextSequence, in: store)
            {
                throw refuse(record, problem)
            }
        }
    }

    /// A device's ledger request (``RelayRequest/ledgerOf``): its own ledger
    /// records, each in a ledger record's form, from a device id that
    /// pushed to the account, stamped within the clock's allowance, all merged in
    /// one write or none (400, naming the first that is not; 422 `clock_skew`
    /// for a stamp too far ahead): a head is never taken without the shards it counts.
    /// - Returns: how many records changed.
    static func applyLedgerRequest(
        _ request: RelayRequest, of owner: String, account: Int64, counters: Store.AccountCounters,
        clientProtocol: Int, now: Int64, maxClockOffsetMilliseconds: Int64, in store: some StoreTransaction
    ) throws -> Int {
        func refuse(_ key: String, _ problem: String) -> ServerError {
            .badRequest(
                "ledger record '\(DisplayText.printable(key.prefix(80)))': \(problem); the ledger request is refused whole"
            )
        }
        guard try store.stream(account: account, clientDevice: owner) != nil else {
            throw ServerError.badRequest(
                "device '\(DisplayText.printable(owner.prefix(60)))' never pushed to this account: it has no ledger to send"
            )
        }
        if let unreadable = request.unreadable.first {
            throw refuse(unreadable.key, unreadable.reason)
        }
        for record in request.records {
            guard record.collection == .ledger, Ledger.Key(record.key)?.device == owner else {
                throw refuse(
                    record.key,
                    "a ledger request holds device '\(DisplayText.printable(owner.prefix(60)))'s own ledger records only"
                )
            }
            if let problem = recordProblem(record, account: counters, clientProtocol: clientProtocol) {
                throw refuse(record.key, problem)
            }
        }
        // A stamp too far ahead keeps the clock's code (422), as a push's
        // does: the client then stamps its next request from its clock.
        do {
            try checkStamps(
                of: request.records, ownDevice: owner, now: now, newest: counters.stampHigh,
                maxClockOffsetMilliseconds: maxClockOffsetMilliseconds)
        } catch let error as ServerError {
            if case .clockSkew = error { throw error }
            throw ServerError.badRequest("\(error.description); the ledger request is refused whole")
        }
        var working: [WorkingKey: WorkingRecord] = [:]
        var nextSequence = counters.nextSequence
        var applied = 0
        try store.prefetch(account: account, keys: request.records.map { (collection: $0.collection, key: $0.key) })
        for record in request.records {
            switch try mergeWhole(
                record, account: account, counters: counters, into: &working, nextSequence: &nextSequence, in: store)
            {
            case .merged: applied += 1
            case .unchanged: break
            case .unusable(let problem): throw refuse(record.key, problem)
            }
        }
        try commit(
            working, of: request.records, account: account, nextSequence: nextSequence, counters: counters, now: now,
            in: store)
        return applied
    }
}
