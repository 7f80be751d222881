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
    func relayEverything(skippingOwnUnpushed: Bool = false) throws {
        var after: (RecordCollection?, String) = (nil, "")
        let own = replica.deviceID
        while true {
            let candidates = try replica.allRecords(afterCollection: after.0, key: after.1, limit: options.pushBatch)
            guard let last = candidates.last else { return }
            after = (last.collection, last.key)
            let records =
                skippingOwnUnpushed ? candidates.filter { Array($0.state.versions.counters.keys) != [own] } : candidates
            if !records.isEmpty { try relay(records) }
        }
    }

    /// Sends whole records for the server to merge, in batches by bytes.
    /// With `needed`, records the server takes are no longer undelivered, and
    /// those it refuses stay so (sent again at the next sync).
    func relay(_ records: [ChangeRecord], needed: Bool = false) throws {
        var remaining = zip(records, try Self.wireChanges(records, cipher: cipher)).map {
            (plain: $0, wire: $1.wire, text: $1.text)
        }[...]
        while !remaining.isEmpty {
            let batch = remaining.prefix(byteBatch(remaining.lazy.map(\.text.count)))
            remaining = remaining.dropFirst(batch.count)
            let wire = batch.map(\.wire)
            let answer = try sendRecords(
                to: "/v1/relay", body: RelayRequest(records: wire, keyID: keyID).body(recordTexts: batch.map(\.text)))
            let response: PushResponse
            do { response = try PushResponse(json: answer) } catch { throw SyncError.badAnswer(error.message) }
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
            try ledgerRelayed(
                batch.filter { !refusedKeys.contains("\($0.wire.collection.rawValue)/\($0.wire.key)") }.map(\.plain))
            if needed {
                let refused = refusedKeys
                try replica.markUndelivered(
                    batch.filter { !refused.contains("\($0.wire.collection.rawValue)/\($0.wire.key)") }
                        .map { ($0.plain.collection, $0.plain.key) }, false)
            }
            summary.relayed += batch.count
        }
    }
}
