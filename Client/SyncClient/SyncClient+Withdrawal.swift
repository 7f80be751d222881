import Cryptography
import Replica
import SyncCore

/// Writes every holder lost (Deploy/SECURITY.md, "Writes every holder
/// lost"): a home restored from an older copy takes a new id, and its old
/// id's last writes may be held by no one (the server was restored too)
/// while a pending record naming them survived, so every machine's check of
/// the old id fails for good. The home, which went by that id, looks for
/// those writes; the ones it finds nowhere and did not write itself (its
/// change log), it withdraws for every machine, each bound to the pending
/// record that names it. A checker excuses a withdrawn write only while it
/// holds that very record, unfolded: a write a head confirmed is never
/// withdrawn.
extension SyncClient {
    /// A withdrawal held (another device's, or this one's), read from its
    /// row; nil for a record that is not one.
    public static func withdrawal(_ row: LedgerRow) -> Ledger.Withdrawal? {
        guard let text = row.fields.text,
            let bytes = text.withUnsafeBufferPointer({ Crypto.base64URLDecode(utf8: $0) })
        else { return nil }
        return try? Ledger.Withdrawal(bytes: bytes)
    }

    /// The groups of `ledger`'s unfolded pending records that `withdrawals`
    /// (of its device) withdraw, by slot.
    static func withdrawn(_ withdrawals: [Ledger.Withdrawal], from ledger: LedgerCheck.Ledgers) -> [Int: [Ledger.Entry]]
    {
        guard !withdrawals.isEmpty else { return [:] }
        let unfolded = ledger.unfolded
        var withdrawn: [Int: [Ledger.Entry]] = [:]
        for withdrawal in withdrawals {
            for (slot, entries) in withdrawal.withdrawn(from: unfolded, hash: Ledger.pendingHash) {
                withdrawn[slot, default: []] += entries
            }
        }
        return withdrawn
    }

    /// What this machine would withdraw of its earlier id `former`, whose
    /// ledger it holds as `ledger`: of each unfolded pending record, the
    /// groups of the records it holds no applied register of at their stamp
    /// or newer, not set aside here (something of it was shown), and not
    /// written here under that id (`changedHere`: tag, wall and counter of
    /// each stamp its change log holds; a fork the server forced holds every
    /// write it made). Nil for nothing.
    public static func withdrawable(
        former: String, ledger: LedgerCheck.Ledgers, registers: [UInt64: [String: HLCTimestamp]],
        setAside: Set<UInt64>, changedHere: Set<[UInt64]>
    ) -> Ledger.Withdrawal? {
        var records: [Ledger.Withdrawal.Record] = []
        for (slot, held) in ledger.unfolded {
            let pending = held.value
            var entries: [Ledger.Entry] = []
            for entry in pending.entries where !setAside.contains(entry.tag) {
                let applied = registers[entry.tag] ?? [:]
                let missing = entry.groups.filter { group in
                    let stamp = group.stamp
                    let logged = [entry.tag, UInt64(bitPattern: stamp.wallMillis), UInt64(stamp.counter)]
                    guard group.device == 0, !changedHere.contains(logged) else { return false }
                    return names(of: group, others: pending.fieldNames).contains { name in
                        applied[name].map { Ledger.Stamp($0) < stamp } ?? true
                    }
                }
                if !missing.isEmpty { entries.append(Ledger.Entry(tag: entry.tag, groups: missing)) }
            }
            guard !entries.isEmpty else { continue }
            records.append(
                Ledger.Withdrawal.Record(
                    slot: slot, stamp: Ledger.Stamp(held.stamp), hash: Ledger.pendingHash(pending), entries: entries))
        }
        return records.isEmpty ? nil : Ledger.Withdrawal(former: former, records: records)
    }

    /// The field names a group names (its known bits, then its others by `others`).
    private static func names(of group: Ledger.Group, others: [String]) -> [String] {
        var names: [String] = []
        for (bit, name) in Ledger.knownFields.enumerated() where group.known & (1 << UInt16(bit)) != 0 {
            names.append(name)
        }
        for index in group.others { names.append(Int(index) < others.count ? others[Int(index)] : "#\(index)") }
        return names
    }

    /// Sends this machine's withdrawal of each earlier id whose check failed
    /// here at an earlier pull too and still fails (its records were asked
    /// for again in between), when it differs from the one the server last
    /// took: one relay of this device's ledger, holding the one record. A
    /// server that refuses it (one older than ``Wire/withdrawalProtocol``)
    /// is named in the sync's problems; nothing else changes.
    func sendWithdrawals(_ withdrawable: [String: Ledger.Withdrawal], failingBefore: Set<String>) throws {
        guard !withdrawable.isEmpty else { return }
        let slots = Dictionary(try replica.formerDeviceIDs().map { ($0.id, $0.slot) }, uniquingKeysWith: { $1 })
        let device = replica.deviceID
        for (former, withdrawal) in withdrawable.sorted(by: { $0.key < $1.key }) {
            guard failingBefore.contains(former), let slot = slots[former] else { continue }
            let key = Ledger.Key.withdrawal(device: device, slot: slot)
            let kept = try replica.record(.ledger, key: key.description)
            let keptStamp = kept?.fields[Wire.ledgerField]?.stamp
            if let kept = kept?.fields[Wire.ledgerField], case .string(let text) = kept.value,
                let bytes = Array(text.utf8).withUnsafeBufferPointer({ Crypto.base64URLDecode(utf8: $0) }),
                (try? Ledger.Withdrawal(bytes: bytes)) == withdrawal
            {
                continue
            }
            let stamp = try nextLedgerStamp(after: keptStamp.map(Ledger.Stamp.init))
            let record = ledgerRecord(key, bytes: withdrawal.bytes, stamp: stamp, device: device)
            var relay = RelayRequest(records: try sealed([record]), keyID: keyID)
            relay.ledgerOf = device
            do {
                let response = try PushResponse(json: try sendRecords(to: "/v1/relay", body: relay.body()))
                guard response.rejected.isEmpty else {
                    let reasons = Set(response.rejected.map(\.reason)).sorted().joined(separator: "; ")
                    summary.problems.append(
                        "the server did not take this machine's withdrawal of writes lost: \(reasons)")
                    continue
                }
            } catch let error as SyncError {
                guard case .refused = error else { throw error }
                summary.problems.append("the server did not take this machine's withdrawal of writes lost: \(error)")
                continue
            }
            try replica.keepOwnLedgerRecords([record])
        }
    }
}
