import JSON
import Replica
import SyncCore

/// Relays: whole records sent for the server to merge (after a restore, a
/// new epoch or a key change, and records the server said it lacks).
extension SyncClient {
    /// Sends every record this replica holds, as it is, for the server to merge
    /// (after a restore: records of devices that no longer sync survive on
    /// every machine that holds them). Batched like pushes (``relay(_:needed:)``
    /// splits by bytes).
    /// - Parameter skippingOwnUnpushed: leave out records made by this device
    ///   alone when none of its changes is pushed yet (right after the switch
    ///   to encryption): the push that follows carries them, and the server
    ///   asks for the whole record (`needed`) if it must.
    /// This device's own ledger records go last, after the writes they
    /// count (as a push's head follows its batches). Inside a push (a
    /// restore found by its answer), records holding a change of this
    /// device not pushed yet wait for the push's batches, which carry the
    /// change with its pending record, after the push has decided whether
    /// this replica forks (relayed first, an edit reached the server under
    /// an id the fork then left, counted by no ledger).
    func relayEverything(skippingOwnUnpushed: Bool = false) throws {
        var after: (RecordCollection?, String) = (nil, "")
        let own = replica.deviceID
        var ownLedger: [ChangeRecord] = []
        let unpushed: Set<String> =
            cipher == nil || !pushingBatches
            ? []
            : Set(
                try replica.unpushedChanges(after: try replica.syncState().pushedThrough, limit: Int(Int32.max)).map {
                    "\($0.collection.rawValue)/\($0.key)"
                })
        while true {
            let candidates = try replica.allRecords(afterCollection: after.0, key: after.1, limit: options.pushBatch)
            guard let last = candidates.last else { break }
            after = (last.collection, last.key)
            var records =
                skippingOwnUnpushed ? candidates.filter { Array($0.state.versions.counters.keys) != [own] } : candidates
            if !unpushed.isEmpty { records.removeAll { unpushed.contains("\($0.collection.rawValue)/\($0.key)") } }
            ownLedger += records.filter { $0.collection == .ledger && Ledger.Key($0.key)?.device == own }
            records.removeAll { $0.collection == .ledger && Ledger.Key($0.key)?.device == own }
            if !records.isEmpty { try relay(records) }
        }
        if !ownLedger.isEmpty { try relay(ownLedger) }
    }

    /// Sends whole records for the server to merge, in batches by bytes.
    /// With `needed`, records the server takes are no longer undelivered, and
    /// those it refuses stay so (sent again at the next sync).
    func relay(_ records: [ChangeRecord], needed: Bool = false) throws {
        let unacknowledged = try unacknowledgedWritesGuarded()
        var remaining = zip(records, try relayedWire(records)).map {
            (plain: $0, wire: $1.wire, text: $1.text)
        }[...]
        while !remaining.isEmpty {
            var batch = remaining.prefix(byteBatch(remaining.lazy.map(\.text.count)))
            remaining = remaining.dropFirst(batch.count)
            var request = RelayRequest(records: batch.map(\.wire), keyID: keyID)
            var ledger = try relayLedger(for: batch.map(\.plain))
            request.ledger = try sealed(ledger?.records ?? [])
            if ledger == nil, holdBack(&batch, in: &request, unacknowledged, needed: needed) { continue }
            let answer: JSONValue
            do {
                answer = try sendRecords(to: "/v1/relay", body: request.body(recordTexts: batch.map(\.text)))
            } catch SyncError.refused(_, let message) where ledger != nil {
                // Refused, perhaps for its pending records (a clock too far
                // ahead, an account past its ledgers' bound): the records go
                // without them, their writes folded once taken, as a relay of
                // writes held before (a refusal of the relay itself comes again).
                ledgerNotTaken("the server did not take this machine's ledger with a relay: \(message)")
                ledger = nil
                request.ledger = []
                if holdBack(&batch, in: &request, unacknowledged, needed: needed) { continue }
                answer = try sendRecords(to: "/v1/relay", body: request.body(recordTexts: batch.map(\.text)))
            }
            let response: PushResponse
            do { response = try PushResponse(json: answer) } catch { throw SyncError.badAnswer(error.message) }
            // The account the records reached, taken in as a pull's answer:
            // a relay left pending by a switch (stopped by a quota, say),
            // sent after the token changed again, went to the account this
            // one names, which then holds them; the pull after is no second
            // switch relaying them again.
            if try noteAccount(response.account, epoch: response.epoch) { summary.accountChanged = true }
            // Rejections name the records as sent (hidden keys when sealed).
            let readable = Self.readableKeys(wire: batch.map(\.wire), plain: batch.map(\.plain))
            for rejected in response.rejected {
                let key = readable["\(rejected.collection.rawValue)/\(rejected.key)"] ?? rejected.key
                let problem =
                    "the server did not take relayed \(rejected.collection.rawValue) '\(key)': \(rejected.reason)"
                // Said once however often a sync relays the record.
                if !summary.problems.contains(problem) { summary.problems.append(problem) }
            }
            let refusedKeys = Set(response.rejected.map { "\($0.collection.rawValue)/\($0.key)" })
            let taken = batch.filter { !refusedKeys.contains("\($0.wire.collection.rawValue)/\($0.wire.key)") }
            if var book = ledger?.book {
                let writes = ownWrites(in: taken.map(\.plain))
                book.answered(acknowledging: writes)
                // Edits not pushed yet that went up here: the server holds
                // them, so a later re-stamp of them goes above.
                let carried = taken.flatMap { $0.plain.state.fields.values.map(\.stamp) }.filter {
                    unacknowledged.contains($0)
                }
                try replica.transaction {
                    try keepLedgerBook(book, tags: writes.map(\.tag))
                    try replica.keepOwnLedgerRecords(ledger?.records ?? [])
                    if let highest = carried.max() { try replica.raiseRestampFloor(to: highest) }
                }
            } else {
                try ledgerRelayed(taken.map(\.plain))
            }
            if needed {
                let refused = refusedKeys
                try replica.markUndelivered(
                    batch.filter { !refused.contains("\($0.wire.collection.rawValue)/\($0.wire.key)") }
                        .map { ($0.plain.collection, $0.plain.key) }, false)
            }
            summary.relayed += batch.count
        }
    }

    /// The stamps of this device's writes the server has not acknowledged,
    /// when a relay must not carry them without pending records of their own
    /// (between a push's batches, in an encrypted account: no answer may come
    /// to fold them); empty otherwise. (Records a batch's answer asks for are
    /// relayed whole: that answer folds their writes into the book it keeps.)
    private func unacknowledgedWritesGuarded() throws -> Set<HLCTimestamp> {
        guard cipher != nil, relayingBetweenBatches else { return [] }
        return try replica.unacknowledgedOwnStamps()
    }

    /// Takes out of `batch` the records holding a write of this device the
    /// server has not acknowledged (`unacknowledged`), when they would go
    /// with no pending record: only a push carries such a write, with its
    /// own. Relayed bare, it would reach the server under this id described
    /// by no ledger if the push were then refused for good or forked (the
    /// id left behind, its write counted by nothing, would fail every
    /// machine's check of it). Those the server asked for (`needed`) stay
    /// undelivered, sent once the push has taken every edit
    /// (``relaysHeldBack``), or at the next sync. `request` is left sending
    /// what remains. - Returns: whether nothing remains to send.
    private func holdBack(
        _ batch: inout ArraySlice<(plain: ChangeRecord, wire: ChangeRecord, text: [UInt8])>,
        in request: inout RelayRequest, _ unacknowledged: Set<HLCTimestamp>, needed: Bool
    ) -> Bool {
        guard !unacknowledged.isEmpty else { return false }
        let kept = batch.filter { !$0.plain.state.fields.values.contains { unacknowledged.contains($0.stamp) } }
        guard kept.count < batch.count else { return false }
        if needed { relaysHeldBack = true }
        batch = kept[...]
        request.records = batch.map(\.wire)
        return batch.isEmpty
    }

    /// Whole records as a relay sends them: each write in a whole box
    /// (``RecordCipher/sealRelayed(_:kept:)``, ``relayedBoxes(of:writes:cipher:marked:)``)
    /// in an account sealed in format 2, and for any record with such a box
    /// whatever the server says of the account (a box that opened is the
    /// account's format 2, mark or not: a field that came in a box is never
    /// sealed again by itself). Other records are sealed as a change never
    /// sent is.
    private func relayedWire(_ records: [ChangeRecord]) throws -> [WireChange] {
        guard let cipher else { return try Self.wireChanges(records, cipher: cipher) }
        // This machine's own writes of each record, read once for both uses.
        func ownWrites(_ record: ChangeRecord) throws -> [ChangeRecord] {
            record.collection == .ledger ? [] : try replica.ownWrites(record.collection, key: record.key)
        }
        guard options.protocolVersion >= Wire.sealedFormatProtocol else {
            return try Self.wireChanges(
                try records.map { Self.withOwnManifest($0, writes: try ownWrites($0), device: replica.deviceID) },
                cipher: cipher)
        }
        let marked = try replica.sealedFormat() == .two
        return try records.map { record in
            let writes = try ownWrites(record)
            let boxes =
                record.collection == .ledger
                ? [] : try relayedBoxes(of: record, writes: writes, cipher: cipher, marked: marked)
            guard marked || !boxes.isEmpty else {
                return try Self.wireChanges(
                    [Self.withOwnManifest(record, writes: writes, device: replica.deviceID)], cipher: cipher)[0]
            }
            do { return WireChange(sent: try cipher.sealRelayed(record, kept: boxes)) } catch {
                throw SyncError.usage("\(error)")
            }
        }
    }

    /// `record`, to be sealed as a change never sent is (format 1), with
    /// the manifest its change log kept when its newest stamp is a write
    /// of this machine's (`device`; `writes`, its writes of the record)
    /// that the record holds as written: what the record held just after
    /// that write, as this machine held it then, not the record as it
    /// holds it now (a value pulled since that the write never saw would be
    /// counted as seen, and its machine would keep no conflict when it
    /// lost). Else as it is (sealed with the record itself as its manifest).
    private static func withOwnManifest(
        _ record: ChangeRecord, writes: [ChangeRecord], device: String
    )
        -> ChangeRecord
    {
        guard let newest = record.state.newestStamp, newest.device == device else { return record }
        for write in writes.reversed() where write.state.newestStamp == newest && holds(record, as: write) {
            var relayed = record
            relayed.manifestText = write.manifestText
            return relayed
        }
        return record
    }

    /// Whether `record` holds each field `write` stamped as `write` holds it
    /// (a copied home may mint a stamp again with other values, a damaged
    /// log may differ).
    private static func holds(_ record: ChangeRecord, as write: ChangeRecord) -> Bool {
        let stamps = Set(write.state.fields.values.map(\.stamp))
        return record.state.fields.allSatisfy { name, register in
            !stamps.contains(register.stamp) || write.state.fields[name] == register
        }
    }

    /// The whole boxes a relay of `record` sends, one per stamp a field of
    /// it holds: this machine's own write of that stamp in the box its push
    /// sealed (the log keeps the write and its manifest, and a box's nonce
    /// is synthetic: the same bytes) when that push was in format 2 or the
    /// account is; else the box a pull kept. Never a part of a write sealed
    /// anew (a server could serve a part with a sibling rolled back behind
    /// it, under another write's manifest: re-review of format 2, F1).
    private func relayedBoxes(
        of record: ChangeRecord, writes: [ChangeRecord], cipher: RecordCipher, marked: Bool
    ) throws -> [StampedValue] {
        let held = Set(record.state.fields.values.map(\.stamp))
        var boxes: [HLCTimestamp: StampedValue] = [:]
        for box in try replica.keptBoxes(record.collection, key: record.key) where held.contains(box.stamp) {
            boxes[box.stamp] = box
        }
        for write in writes
        where (marked || write.sealedFormat == .two)
            && write.state.fields.values.contains(where: { held.contains($0.stamp) })
        {
            // Only a write that is what the record holds at its stamp: else
            // the kept box, if any, stays.
            guard Self.holds(record, as: write) else { continue }
            let sealed: ChangeRecord
            do { sealed = try cipher.seal(write, format: .two) } catch { throw SyncError.usage("\(error)") }
            for register in sealed.state.fields.values
            where held.contains(register.stamp) && RecordState.isBox(register.value) {
                boxes[register.stamp] = register
            }
        }
        return boxes.values.sorted { $0.stamp < $1.stamp }
    }

    /// Weighs the boxes this replica kept before boxes had weights (replica
    /// schema 33 gave them 0, so one box of their stamp a pull brought, a
    /// relay's part of the write too, took their place: re-review of format
    /// 2, F2), once: each opened with the account key to count what it
    /// holds; one that does not open (a key since replaced, a damaged row)
    /// goes, as a relay would seal its fields again anyway. Each round
    /// weighs or drops every box it read, so the loop ends.
    func weighKeptBoxes() throws {
        guard let cipher else { return }
        var seen = Set<Int64>()
        while true {
            // A row weighed or dropped is not read again; one read again (a
            // row the statements cannot change) ends the loop.
            let boxes = try replica.unweighedBoxes(limit: 1_000)
            guard !boxes.isEmpty, boxes.contains(where: { seen.insert($0.id).inserted }) else { return }
            try replica.weighBoxes(
                boxes.map { box in
                    guard let stamp = HLCTimestamp(text: box.stamp),
                        let write = try? cipher.openBox(
                            box.sealed, collection: box.collection,
                            hiddenKey: cipher.hiddenKey(collection: box.collection, key: box.key), stamp: stamp)
                    else { return (box, nil) }
                    return (box, write.weight)
                })
        }
    }
}
