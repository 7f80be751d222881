import JSON
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
        guard let bytes = packedBytes(row) else { return nil }
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
                    return group.fieldNames(others: pending.fieldNames).contains { name in
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

    /// The decisions about this device's earlier ids whose ledgers
    /// `ledgers` are (each failing here, or withdrawn from before), from
    /// their checks' `failures` (withdrawals honoured) and the withdrawals
    /// this device wrote (`kept`).
    func withdrawalDecisions(
        _ ledgers: [String: LedgerCheck.Ledgers], failures: [String: [LedgerCheck.Failure]],
        kept: [String: (withdrawal: Ledger.Withdrawal, stamp: HLCTimestamp?)],
        registers: [UInt64: [String: HLCTimestamp]], setAside: Set<UInt64>, tag: (RecordCollection, String) -> UInt64
    ) throws -> [String: WithdrawalDecision] {
        // A retracted withdrawal (no records) is done with.
        let due = ledgers.filter {
            !(failures[$0.key] ?? []).isEmpty || !(kept[$0.key]?.withdrawal.records.isEmpty ?? true)
        }
        guard !due.isEmpty else { return [:] }
        var decisions: [String: WithdrawalDecision] = [:]
        for (former, ledger) in due {
            var changedHere: Set<[UInt64]> = []
            for write in try replica.writesLoggedHere(device: former) {
                let tagged = tag(write.collection, write.key)
                for stamp in write.stamps {
                    changedHere.insert([tagged, UInt64(bitPattern: stamp.wallMillis), UInt64(stamp.counter)])
                }
            }
            let wanted = Self.withdrawable(
                former: former, ledger: ledger, registers: registers, setAside: setAside, changedHere: changedHere)
            let groups = wanted?.groups ?? []
            let left = failures[former] ?? []
            let mayWiden =
                !left.isEmpty
                && left.allSatisfy { failure in
                    guard case .unmet(let tag, _, let stamp, false) = failure, stamp.device == former else {
                        return false
                    }
                    return groups.contains { $0.tag == tag && $0.group.stamp == Ledger.Stamp(stamp) }
                }
            decisions[former] = WithdrawalDecision(wanted: wanted, kept: kept[former], mayWiden: mayWiden)
        }
        return decisions
    }

    /// What one run of the checks decided about an earlier id of this
    /// device: what it would withdraw now (nil: nothing is missing), what it
    /// withdrew last (the server took it), and whether it may withdraw more
    /// than that: only when every failure of the id's check is a write it
    /// would withdraw (the chain whole, the shards as counted).
    struct WithdrawalDecision {
        var wanted: Ledger.Withdrawal?
        var kept: (withdrawal: Ledger.Withdrawal, stamp: HLCTimestamp?)?
        var mayWiden: Bool
    }

    /// How long after the server refused a withdrawal the next is tried
    /// (also how long the ask for withdrawals missed waits).
    static let withdrawalRetryMillis: Int64 = 86_400_000

    /// How long the next try of a withdrawal waits after each setback: a
    /// day after a refusal (an older server says no again); an hour after
    /// no answer came, so a server that drops the request cannot have it
    /// sent at every sync, and an honest dropped connection is soon over.
    static func withdrawalWait(after setback: WithdrawalSetback) -> Int64 {
        switch setback {
        case .refused: withdrawalRetryMillis
        case .failed: 3_600_000
        }
    }

    /// Sends this machine's withdrawal of each earlier id whose decision
    /// differs from the one the server last took, as one relay of this
    /// device's ledger holding the one record: more than before only when
    /// the id's check also failed at an earlier pull (its records were asked
    /// for again in between) with nothing but such writes; otherwise only
    /// what is still missing of what it withdrew (writes found after all; one
    /// of no records when none is) at any time. Only once this id has pushed
    /// (a fork's first sync publishes its name), and in a slot whose last
    /// withdrawal met a setback not again until its wait is over
    /// (``withdrawalWait(after:)``: a day after a refusal, as a server
    /// older than ``Wire/withdrawalProtocol`` gives; an hour after no
    /// answer). Nothing it meets stops the sync (each failure is one of its
    /// problems) but a stop asked for (``SyncError/cancelled``), thrown.
    func sendWithdrawals(_ decisions: [String: WithdrawalDecision], failingBefore: Set<String>) throws {
        do {
            guard !decisions.isEmpty, try replica.syncState().pushedThrough > 0 else { return }
            let slots = Dictionary(try replica.formerDeviceIDs().map { ($0.id, $0.slot) }, uniquingKeysWith: { $1 })
            for (former, decision) in decisions.sorted(by: { $0.key < $1.key }) {
                guard let slot = slots[former], decision.wanted != nil || decision.kept != nil else { continue }
                // After a setback, not again until its wait is over (a clock
                // moved by less than the wait, either way, counts as within
                // it; by more, the next try is at once).
                let waiting = try WithdrawalSetback.allCases.contains { setback in
                    try replica.withdrawalSetback(setback, slot: slot).map {
                        abs(replica.currentMillis - $0) < Self.withdrawalWait(after: setback)
                    } ?? false
                }
                guard !waiting else { continue }
                var wanted = decision.wanted ?? Ledger.Withdrawal(former: former, records: [])
                let kept = decision.kept?.withdrawal
                if !wanted.groups.isSubset(of: kept?.groups ?? []),
                    !(decision.mayWiden && failingBefore.contains(former))
                {
                    // Not more: only what is still missing of what was withdrawn.
                    guard let kept else { continue }
                    wanted = kept.keeping(wanted)
                }
                guard wanted != kept else { continue }
                try sendWithdrawal(wanted, slot: slot, after: decision.kept?.stamp)
            }
        } catch SyncError.cancelled {
            throw SyncError.cancelled
        } catch {
            summary.problems.append("this machine's withdrawal of writes lost was not sent: \(error)")
        }
    }

    /// Sends one withdrawal and keeps it once taken. A refusal (the slot is
    /// not tried again that day) and no answer (not within the hour) are
    /// named in the sync's problems.
    private func sendWithdrawal(_ withdrawal: Ledger.Withdrawal, slot: Int, after kept: HLCTimestamp?) throws {
        let device = replica.deviceID
        let stamp = try nextLedgerStamp(after: kept.map(Ledger.Stamp.init))
        let record = ledgerRecord(
            .withdrawal(device: device, slot: slot), bytes: withdrawal.bytes, stamp: stamp, device: device)
        var relay = RelayRequest(records: try sealed([record]), keyID: keyID)
        relay.ledgerOf = device
        // No answer, or one that does not read: the slot waits an hour. Any
        // other error (this machine's database, a stop) ends the sending.
        func noAnswer(_ error: any Error) throws {
            try replica.noteWithdrawalSetback(.failed, slot: slot, at: replica.currentMillis)
            summary.problems.append(
                "this machine's withdrawal of writes lost was not sent (tried again in an hour): \(error)")
        }
        let answer: JSONValue
        do {
            answer = try sendRecords(to: "/v1/relay", body: relay.body())
        } catch SyncError.refused(let code, let message) {
            return try noteRefused(slot: slot, "\(code): \(message)")
        } catch let error as SyncError where error == .cancelled || error.waitsForTheUser {
            throw error
        } catch let error as SyncError {
            return try noAnswer(error) // unreachable, or not the protocol
        }
        let response: PushResponse
        do { response = try PushResponse(json: answer) } catch { return try noAnswer(error) }
        guard response.rejected.isEmpty else {
            return try noteRefused(slot: slot, Set(response.rejected.map(\.reason)).sorted().joined(separator: "; "))
        }
        try replica.transaction {
            try replica.keepOwnLedgerRecords([record])
            try replica.forgetWithdrawalSetbacks(slot: slot)
        }
    }

    private func noteRefused(slot: Int, _ refusal: String) throws {
        try replica.transaction {
            try replica.noteWithdrawalSetback(.refused, slot: slot, at: replica.currentMillis)
            try replica.noteWithdrawalSetback(.failed, slot: slot, at: nil)
        }
        summary.problems.append(
            "the server did not take this machine's withdrawal of writes lost (tried again in a day): \(refusal)")
    }
}

extension SyncClient {
    /// At the server's head: a replica an older brsync pulled (see
    /// ``Replica/withdrawalsMayBeMissed()``) asks for every withdrawal of
    /// the devices whose ledgers it holds (every slot of each), so a check
    /// a withdrawal excuses does not fail here for good. In parts within
    /// ``PullRequest/maxAsked`` keys and the server's request line; what a
    /// cut answer left out is asked again. Done once every key was
    /// answered, or when the server does not know a withdrawal's key (a
    /// `bad_request` to the first part: it is older, and holds none).
    /// Otherwise tried again a day later, not at every sync; nothing it
    /// meets stops the sync (a failure is one of its problems).
    func askForWithdrawalsMissed() {
        do {
            guard try replica.withdrawalsMayBeMissed() else { return }
            guard cipher != nil else { return try replica.noteWithdrawalsRead() }
            if let tried = try replica.withdrawalsAskedAt(),
                abs(replica.currentMillis - tried) < Self.withdrawalRetryMillis
            {
                return
            }
            try replica.noteWithdrawalsAsked(at: replica.currentMillis)
            var left = try replica.heldLedgerDevices().keys.sorted().flatMap { device in
                (0..<Ledger.maxFormerIDs).map { slot in
                    PullRequest.Asked(
                        collection: .ledger, key: Ledger.Key.withdrawal(device: device, slot: slot).description)
                }
            }
            // Each part answers at least one key, or the rest waits a day.
            for part in 0..<(left.count + 1) where !left.isEmpty {
                let next = Self.askedPart(left)
                let answer: (answered: Set<PullRequest.Asked>, cut: Bool)?
                do {
                    answer = try askAgain(next, for: "the withdrawals an older brsync was not sent")
                } catch SyncError.refused(code: .badRequest, _) where part == 0 {
                    return try replica.noteWithdrawalsRead()
                }
                guard let answer else { return }
                let done = answer.cut ? answer.answered : Set(next)
                guard !done.isEmpty else { return }
                left.removeAll { done.contains($0) }
            }
            if left.isEmpty { try replica.noteWithdrawalsRead() }
        } catch {
            summary.problems.append("the withdrawals an older brsync was not sent were not asked for: \(error)")
        }
    }
}
