import Replica
import SyncCore

/// The parts of a run of the ledger checks (``SyncClient/checkLedgers()``):
/// the ledgers held, read and put in place; which entries check 1 reads;
/// what a failing or dropping ledger makes this machine ask for again.
extension SyncClient {
    /// What one run of the checks found: what failed, by device (nil: it
    /// passed); what to ask for again (the records held here whose writes a
    /// ledger names and this machine lacks, and the failing devices' ledger
    /// records); what it read of each ledger that passed
    /// (``Replica/LedgerChecked``), and how much it read.
    struct LedgerRun {
        var results: [String: String?] = [:]
        var missing: [PullRequest.Asked] = []
        var checked: [String: Replica.LedgerChecked] = [:]
        var read = LedgerCheckRead()
        /// What is held under this device's own id (``LedgerBook/notWrittenHere(_:ownNewest:)``),
        /// and its rows, read once (the take-in parses them).
        var own = LedgerBook.Held()
        var ownRows: [(row: LedgerRow, key: Ledger.Key)] = []
        /// The writes of this device's id that pulls brought, as read (``Replica/writesFromElsewhere()``).
        var fromElsewhere: [WriteFromElsewhere] = []
        /// The writes each failing ledger names and this machine lacks (``LedgerUnmet``).
        var unmet: [String: [LedgerUnmet]] = [:]
        /// What to withdraw of each earlier id of this device's whose check
        /// fails, or that it withdrew writes of before.
        var withdrawals: [String: WithdrawalDecision] = [:]
    }

    /// The ledger records held, read and put in place by device.
    struct HeldLedgers {
        var ledgers: [String: LedgerCheck.Ledgers] = [:]
        /// Each shard's bytes as held (check 2 hashes them, not packed again).
        var packed: [String: [Int: [UInt8]]] = [:]
        /// Why a device's ledger cannot be checked: a record of it is damaged.
        var damaged: [String: String] = [:]
        /// This device's own records are not checked: only their stamps are
        /// read, to see whether another home wrote any.
        var own = LedgerBook.Held()
        var ownRows: [(row: LedgerRow, key: Ledger.Key)] = []
        /// Withdrawals, by the earlier id whose writes they withdraw (this
        /// device's own too: its checks of its earlier ids honour them).
        var withdrawals: [String: [Ledger.Withdrawal]] = [:]
        var ownWithdrawals: [String: (withdrawal: Ledger.Withdrawal, stamp: HLCTimestamp?)] = [:]
    }

    /// Reads the ledger rows held. Heads first: a pending record its
    /// device's head folded is passed over unread (the checks leave it out:
    /// ``LedgerCheck/Ledgers/unfolded``).
    func readLedgers(_ held: [LedgerRow]) -> HeldLedgers {
        var result = HeldLedgers()
        func isHead(_ key: Ledger.Key) -> Bool { if case .head = key { true } else { false } }
        let rows = held.compactMap { row in Ledger.Key(row.key).map { (row, $0) } }
        for (row, parsed) in rows.filter({ isHead($0.1) }) + rows.filter({ !isHead($0.1) }) {
            let key = row.key
            let device = parsed.device
            if case .withdrawal = parsed {
                // One that does not read (a later format) withdraws nothing.
                if let withdrawal = Self.withdrawal(row), withdrawal.former != device {
                    result.withdrawals[withdrawal.former, default: []].append(withdrawal)
                    if device == replica.deviceID {
                        result.ownWithdrawals[withdrawal.former] = (withdrawal, row.fields.stamp)
                    }
                }
                continue
            }
            guard device != replica.deviceID else {
                result.ownRows.append((row, parsed))
                guard let stamp = row.fields.stamp.map(Ledger.Stamp.init) else { continue }
                switch parsed {
                case .head: result.own.head = stamp
                case .shard(_, let index): result.own.shards[index] = stamp
                case .pending(_, let slot): result.own.pending[slot] = stamp
                case .withdrawal: break // read above
                }
                continue
            }
            if case .pending = parsed, let stamp = row.fields.stamp,
                let folded = result.ledgers[device]?.head?.value.folded, Ledger.Stamp(stamp) <= folded.stamp
            {
                continue
            }
            do throws(Ledger.Problem) {
                // Each record is put in place (a copy of the device's
                // ledgers taken out and put back copied every shard held so
                // far, for each record: a fifth of a live pull's check).
                if let bytes = try Self.place(
                    row, parsed, into: &result.ledgers[device, default: LedgerCheck.Ledgers()])
                {
                    result.packed[device, default: [:]][bytes.index] = bytes.packed
                }
            } catch {
                result.damaged[device] =
                    result.damaged[device] ?? "its ledger record '\(key)' is damaged (\(error.reason))"
            }
        }
        return result
    }

    /// Devices forgotten here (`brsync device forget`) are not checked
    /// while nothing newer of their ledgers or writes arrived; one that
    /// did synced again, and is checked (a server that shows its writes
    /// and hides its ledger gets it named).
    func leaveOutForgotten(
        _ held: inout HeldLedgers, ledgerHighs: [String: HLCTimestamp], writesHighs: [String: HLCTimestamp]
    ) throws {
        for (device, forgotten) in try replica.forgottenDevices() {
            if forgotten.wroteSince(ledgerHigh: ledgerHighs[device], writesHigh: writesHighs[device]) {
                try replica.rememberDevice(device)
            } else {
                held.ledgers[device] = nil
                held.damaged[device] = nil
            }
        }
    }

    /// Which entries each device's check 1 reads, the tags of the records
    /// they name, and each shard's digest as held now.
    struct ReadingPlan {
        /// By device; a device not here is read whole.
        var reading: [String: LedgerCheck.Reading] = [:]
        var tags: Set<UInt64> = []
        /// What changed since, and what a passing check keeps.
        var digests: [String: [Int: UInt64]] = [:]
    }

    /// Plans check 1: of a device whose last check passed under the same
    /// head identity, only the shards changed since, its pending records
    /// and the records set aside; of the others (of all when `whole`), all.
    func readingPlan(_ held: HeldLedgers, setAside: Set<UInt64>, whole: Bool) throws -> ReadingPlan {
        let before = whole ? [:] : try replica.ledgerChecked()
        var plan = ReadingPlan()
        for (device, ledger) in held.ledgers {
            plan.digests[device] = Self.shardDigests(ledger, packed: held.packed[device] ?? [:])
        }
        for (device, ledger) in held.ledgers {
            guard let prior = before[device], prior.head == LedgerCheck.identity(of: ledger.head?.value) else {
                continue
            }
            let digests = plan.digests[device] ?? [:]
            let read = LedgerCheck.Reading(
                shards: Set(ledger.shards.keys.filter { prior.shards[$0] != digests[$0] }), tags: setAside)
            plan.reading[device] = read
            for (index, shard) in ledger.shards {
                for entry in shard.value.entries where read.shards.contains(index) || setAside.contains(entry.tag) {
                    plan.tags.insert(entry.tag)
                }
            }
            for pending in ledger.unfolded {
                for entry in pending.record.value.entries { plan.tags.insert(entry.tag) }
            }
        }
        return plan
    }

    /// The registers check 1 compares with, by tag: of the records the plan
    /// names, or of every record (many records to read by key cost more
    /// than one pass over them all).
    func registers(
        for plan: ReadingPlan, ledgers: Int, keyID: String, tag: (RecordCollection, String) -> UInt64
    ) throws -> [UInt64: [String: HLCTimestamp]] {
        if plan.reading.count == ledgers && plan.tags.count <= 2_000 {
            try replica.tagRecords(keyID: keyID, tag: tag)
            return try replica.registers(tagged: plan.tags)
        }
        // A record a pull opened was checked to be filed under its hidden key: its tag is read from it.
        return try replica.tagAndReadRegisters(keyID: keyID, tag: tag, tagOfFiledKey: Self.tag(ofHiddenKey:))
    }

    /// What the checks ask the server for again: the records that failing
    /// ledgers name, and those ledgers' own records.
    struct AskingAgain {
        let cipher: RecordCipher
        var records: Set<PullRequest.Asked> = []
        var ledgerKeys: [PullRequest.Asked] = []

        mutating func ask(for record: (collection: RecordCollection, key: String)) {
            records.insert(
                PullRequest.Asked(
                    collection: record.collection,
                    key: cipher.hiddenKey(collection: record.collection.rawValue, key: record.key)))
        }
    }

    /// A ledger that passes but no longer names writes an earlier one
    /// named, which never arrived: a failure, and they are asked for again.
    func noteDropped(
        _ device: String, _ dropped: [LedgerUnmet], run: inout LedgerRun, asking: inout AskingAgain
    ) throws {
        run.unmet[device] = dropped
        let named = try replica.records(tagged: Set(dropped.map(\.tag))).compactMapValues(\.first)
        run.results[device] =
            "a newer ledger of it no longer names writes an earlier one named, which never arrived here: "
            + Self.describe(
                dropped.map { .unmet(tag: $0.tag, fields: [$0.field], stamp: $0.stamp, setAside: false) },
                named: named)
        // Asked for again, as a failing check's records are.
        for record in named.values { asking.ask(for: record) }
    }

    /// A device's check result; for a failing one, its ledger and the
    /// records it names are asked for again, and the unmet writes a head
    /// confirmed are kept.
    func noteResult(
        _ device: String, _ ledger: LedgerCheck.Ledgers, _ failures: [LedgerCheck.Failure],
        registers: [UInt64: [String: HLCTimestamp]], run: inout LedgerRun, asking: inout AskingAgain
    ) throws {
        // The records failures name (held ones), as many as a sync asks for again.
        var tags: Set<UInt64> = []
        for case .unmet(let tag, _, _, _) in failures
        where registers[tag] != nil && tags.count < PullRequest.maxAsked {
            tags.insert(tag)
        }
        let named = try replica.records(tagged: tags).compactMapValues(\.first)
        run.results[device] = failures.isEmpty ? nil : Self.describe(failures, named: named)
        guard !failures.isEmpty else { return }
        // Its ledger as the server holds it now (a head, pending records
        // or shards the pull's cursor passed), and the records it names.
        let shards = max(ledger.head?.value.shardCount ?? 1, (ledger.shards.keys.max() ?? 0) + 1)
        let keys: [Ledger.Key] =
            [.head(device: device)] + (0..<Ledger.pendingSlots).map { .pending(device: device, slot: $0) }
            + (0..<shards).map { .shard(device: device, index: $0) }
        asking.ledgerKeys += keys.map { PullRequest.Asked(collection: .ledger, key: $0.description) }
        // Kept: the unmet writes a shard names (a head confirmed them:
        // acknowledged writes, which an honest head of the id keeps
        // naming); a pending record's may be refused changes, which the
        // next head rightly leaves out.
        var confirmed: Set<[UInt64]> = []
        for shard in ledger.shards.values {
            for entry in shard.value.entries {
                for group in entry.groups {
                    confirmed.insert([
                        entry.tag, UInt64(bitPattern: group.stamp.wallMillis), UInt64(group.stamp.counter),
                    ])
                }
            }
        }
        for case .unmet(let tag, let fields, let stamp, false) in failures
        where confirmed.contains([tag, UInt64(bitPattern: stamp.wallMillis), UInt64(stamp.counter)]) {
            run.unmet[device, default: []] += fields.map { (tag, $0, stamp) }
        }
        for case .unmet(let tag, _, _, false) in failures {
            guard let record = named[tag] else { continue }
            asking.ask(for: record)
        }
    }
}
