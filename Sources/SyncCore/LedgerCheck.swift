import JSON

/// The checks a machine runs on a device's ledger at the end of a pull that
/// reached the server's head (Deploy/SECURITY.md, "A device's own writes,
/// counted", checks 0–3): given the ledger records of device D it holds and
/// the registers it holds, which of D's acknowledged writes the server left
/// out. Pure: the caller reads the replica and keeps what failed, holding
/// each failure before it alarms.
public enum LedgerCheck {
    /// A ledger record held, with the stamp of the write that made it (its
    /// register's). A device never deletes its ledger records (slots and
    /// shard keys are written over; a head's fold is what retires pending
    /// records), and servers and replicas refuse a ledger record's deletion
    /// flag, so a server cannot make one look retired.
    public struct Held<Value: Sendable & Hashable>: Sendable, Hashable {
        public var value: Value
        public var stamp: HLCTimestamp

        public init(_ value: Value, stamp: HLCTimestamp) {
            self.value = value
            self.stamp = stamp
        }
    }

    /// Device D's ledger records this machine holds.
    public struct Ledgers: Sendable, Hashable {
        public var head: Held<Ledger.Head>?
        public var shards: [Int: Held<Ledger.Shard>]
        public var pending: [Int: Held<Ledger.Pending>]

        public init(
            head: Held<Ledger.Head>? = nil, shards: [Int: Held<Ledger.Shard>] = [:],
            pending: [Int: Held<Ledger.Pending>] = [:]
        ) {
            self.head = head
            self.shards = shards
            self.pending = pending
        }

        public var isEmpty: Bool { head == nil && shards.isEmpty && pending.isEmpty }

        /// The pending records the head has not folded, oldest first (a
        /// pending record relayed again after the head folded it is ignored).
        public var unfolded: [(slot: Int, record: Held<Ledger.Pending>)] {
            let folded = head?.value.folded
            return pending.filter { _, record in
                guard let folded else { return true }
                return Ledger.Stamp(record.stamp) > folded.stamp
            }.map { (slot: $0.key, record: $0.value) }.sorted { $0.record.stamp < $1.record.stamp }
        }

        /// The newest write of the device the ledger describes: its head's
        /// `newest` or an unfolded pending record's (not the stamps of the
        /// ledger records themselves, which come after every write they
        /// describe: a batch shown in part would pass).
        public func covered(device: String) -> HLCTimestamp? {
            ([head?.value.newest] + unfolded.map { $0.record.value.newest }).compactMap { $0 }.max()
                .map { $0.timestamp(device: device) }
        }
    }

    /// Which entries check 1 reads when not all of them: every entry of the
    /// shards `shards` and of the unfolded pending records, and in any other
    /// shard the entries of `tags`.
    public struct Reading: Sendable, Equatable {
        public var shards: Set<Int>
        public var tags: Set<UInt64>

        public init(shards: Set<Int>, tags: Set<UInt64> = []) {
            self.shards = shards
            self.tags = tags
        }
    }

    /// What a machine holds of a record a ledger entry names.
    public enum Register: Sendable, Hashable {
        /// Applied: the stamp of each field's register.
        case applied([String: HLCTimestamp])
        /// Set aside (it did not open, failed its manifest, …): it meets no entry.
        case setAside
    }

    /// A check that failed, naming what is missing.
    public enum Failure: Sendable, Hashable, CustomStringConvertible {
        /// Check 0: the unfolded pending records do not form one chain from
        /// the head held (one is withheld, or a newer head is).
        case brokenChain(slot: Int, reason: String)
        /// Check 1: a write the ledger names is not held: the record (by
        /// tag) is missing or set aside, or its field is older than written.
        case unmet(tag: UInt64, fields: [String], stamp: HLCTimestamp, setAside: Bool)
        /// Check 2: the shards held are not the ones the head counts.
        case shardsDiffer(reason: String)
        /// Check 3: a register of the device newer than every write its
        /// ledger describes (part of it is withheld, or the device writes
        /// without one).
        case writtenPastLedger(newest: HLCTimestamp, ledger: HLCTimestamp?)

        public var description: String {
            switch self {
            case .brokenChain(let slot, let reason): return "its pending record \(slot) \(reason)"
            case .unmet(_, let fields, let stamp, let setAside):
                let what = fields.joined(separator: ", ")
                let when = Timestamp.iso8601(millis: stamp.wallMillis)
                return setAside
                    ? "a record it wrote (\(what), \(when)) is set aside here"
                    : "its write of \(what) (\(when)) is missing here"
            case .shardsDiffer(let reason): return "its ledger's shards \(reason)"
            case .writtenPastLedger(let newest, let ledger):
                let when = Timestamp.iso8601(millis: newest.wallMillis)
                return ledger.map {
                    "it wrote at \(when), past what its ledger describes (written \(Timestamp.iso8601(millis: $0.wallMillis)))"
                } ?? "it wrote at \(when) and has no ledger here"
            }
        }
    }

    /// Runs checks 0–3 on device `device`'s ledgers.
    /// - Parameters:
    ///   - register: what this machine holds of the record with a tag, nil
    ///     for nothing.
    ///   - newestRegister: the newest stamp of any register of `device`
    ///     this machine ever applied (kept as applied, so an overwrite does
    ///     not erase it); nil for none.
    ///   - shardsHash: the hash of the shards of `ledgers` in use, as the
    ///     head's ``Ledger/Head/shardsHash`` is made (SHA-256 is the
    ///     caller's: this module has no cryptography).
    ///   - reading: which entries check 1 reads; nil for all. An entry left
    ///     out is taken as met (a caller leaves out only entries met at a
    ///     check before, of a shard not written since).
    ///   - withdrawn: groups of unfolded pending records, by slot, that a
    ///     later id of the device withdrew (``Ledger/Withdrawal``, bound to
    ///     the records held): one not held here is excused; one set aside
    ///     here is not (something of it was shown).
    public static func failures(
        device: String, ledgers: Ledgers, register: (UInt64) -> Register?, newestRegister: HLCTimestamp?,
        shardsHash: ([(index: Int, shard: Held<Ledger.Shard>)]) -> UInt64, reading: Reading? = nil,
        withdrawn: [Int: [Ledger.Entry]] = [:]
    ) -> [Failure] {
        chainFailures(ledgers)
            + unmetEntries(
                device: device, ledgers: ledgers, register: register, reading: reading, withdrawn: withdrawn)
            + shardFailures(ledgers, shardsHash: shardsHash)
            + writtenPastLedger(device: device, ledgers: ledgers, newestRegister: newestRegister)
    }

    /// 0. The chain of unfolded pending records is whole, and builds on the head held.
    private static func chainFailures(_ ledgers: Ledgers) -> [Failure] {
        var failures: [Failure] = []
        var previous: (slot: Int, stamp: HLCTimestamp)? = nil
        for (slot, record) in ledgers.unfolded {
            let pending = record.value
            if let previous {
                let expected = Ledger.Link(slot: previous.slot, stamp: Ledger.Stamp(previous.stamp))
                if pending.previous != expected {
                    failures.append(
                        .brokenChain(
                            slot: slot,
                            reason: pending.previous.map { "follows slot \($0.slot) at \($0.stamp), which is not held" }
                                ?? "starts a chain again after slot \(previous.slot)"))
                }
            } else if pending.previous != nil {
                failures.append(.brokenChain(slot: slot, reason: "follows a pending record that is not held"))
            }
            let held = ledgers.head.map { Ledger.Stamp($0.stamp) }
            if pending.base != held {
                failures.append(
                    .brokenChain(
                        slot: slot,
                        reason: pending.base.map { "builds on a head written at \($0), not the one held" }
                            ?? "builds on no head, though one is held"))
            }
            previous = (slot, record.stamp)
        }
        return failures
    }

    /// 1. Every entry is met, field by field.
    private static func unmetEntries(
        device: String, ledgers: Ledgers, register: (UInt64) -> Register?, reading: Reading?,
        withdrawn: [Int: [Ledger.Entry]]
    ) -> [Failure] {
        var failures: [Failure] = []
        func writer(_ group: Ledger.Group) -> String {
            guard group.device != 0 else { return device }
            let ids = ledgers.head?.value.ids ?? []
            return Int(group.device) <= ids.count ? ids[Int(group.device) - 1] : "\(device)#\(group.device)"
        }
        // Shard entries name other fields by the head's list, a pending
        // record's by its own.
        let headNames = ledgers.head?.value.fieldNames ?? []
        func check(_ entry: Ledger.Entry, others: [String], excused: [Ledger.Entry] = []) {
            let held = register(entry.tag)
            for group in entry.groups {
                let stamp = group.stamp.timestamp(device: writer(group))
                let isExcused =
                    group.device == 0 && excused.contains { $0.tag == entry.tag && $0.groups.contains(group) }
                switch held {
                case .applied(let registers):
                    // Every entry of an honest ledger is met: its names are
                    // listed only when one is not.
                    func unmet(_ name: String) -> Bool { registers[name].map { $0 < stamp } ?? true }
                    var met = true
                    for (bit, name) in Ledger.knownFields.enumerated()
                    where group.known & (1 << UInt16(bit)) != 0 && unmet(name) {
                        met = false
                        break
                    }
                    if met {
                        for index in group.others where Int(index) >= others.count || unmet(others[Int(index)]) {
                            met = false
                            break
                        }
                    }
                    guard !met, !isExcused else { continue }
                    let missing = group.fieldNames(others: others).filter(unmet)
                    failures.append(.unmet(tag: entry.tag, fields: missing, stamp: stamp, setAside: false))
                case .setAside:
                    failures.append(
                        .unmet(tag: entry.tag, fields: group.fieldNames(others: others), stamp: stamp, setAside: true))
                case nil:
                    guard !isExcused else { continue }
                    failures.append(
                        .unmet(tag: entry.tag, fields: group.fieldNames(others: others), stamp: stamp, setAside: false))
                }
            }
        }
        for index in ledgers.shards.keys.sorted() {
            guard let shard = ledgers.shards[index]?.value else { continue }
            if let reading, !reading.shards.contains(index) {
                // A shard not read whole: only the entries of the tags named.
                guard !reading.tags.isEmpty else { continue }
                for entry in shard.entries where reading.tags.contains(entry.tag) { check(entry, others: headNames) }
            } else {
                for entry in shard.entries { check(entry, others: headNames) }
            }
        }
        for pending in ledgers.unfolded {
            let excused = withdrawn[pending.slot] ?? []
            for entry in pending.record.value.entries {
                check(entry, others: pending.record.value.fieldNames, excused: excused)
            }
        }
        return failures
    }

    /// 2. Every shard the head counts is held, as counted.
    private static func shardFailures(
        _ ledgers: Ledgers, shardsHash: ([(index: Int, shard: Held<Ledger.Shard>)]) -> UInt64
    ) -> [Failure] {
        var failures: [Failure] = []
        if let head = ledgers.head?.value {
            let inUse = (0..<head.shardCount).compactMap { index in ledgers.shards[index].map { (index, $0) } }
            let counted = inUse.reduce(0) { $0 + $1.1.value.entries.count }
            if inUse.count < head.shardCount {
                let missing = (0..<head.shardCount).filter { ledgers.shards[$0] == nil }
                failures.append(
                    .shardsDiffer(
                        reason: "\(missing.map(String.init).joined(separator: ", ")) of \(head.shardCount) are not held"
                    ))
            } else if let other = inUse.first(where: { $0.1.value.shardCount != head.shardCount }) {
                failures.append(
                    .shardsDiffer(
                        reason: "are of \(other.1.value.shardCount) shards, where the head counts \(head.shardCount)"))
            } else if counted != head.entryCount {
                failures.append(
                    .shardsDiffer(reason: "hold \(counted) entries, where the head counts \(head.entryCount)"))
            } else if shardsHash(inUse.map { (index: $0.0, shard: $0.1) }) != head.shardsHash {
                failures.append(.shardsDiffer(reason: "are not the ones the head sums up"))
            }
        }
        return failures
    }

    /// 3. Nothing of the device newer than what its ledger describes.
    private static func writtenPastLedger(
        device: String, ledgers: Ledgers, newestRegister: HLCTimestamp?
    ) -> [Failure] {
        var failures: [Failure] = []
        if let newestRegister {
            let ledger = ledgers.covered(device: device)
            if ledger.map({ newestRegister > $0 }) ?? true {
                failures.append(.writtenPastLedger(newest: newestRegister, ledger: ledger))
            }
        }
        return failures
    }

    /// What gives a device's shard entries their meaning, as one number: the
    /// ids and field names its head lists (an entry refers to them by
    /// index) and its shard count. Entries met under one identity are met
    /// under it again (``Replica/LedgerChecked``); FNV-1a, not a secret.
    public static func identity(of head: Ledger.Head?) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func add(_ byte: UInt8) {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        func add(_ text: String) {
            for byte in text.utf8 { add(byte) }
            add(0)
        }
        guard let head else { return hash }
        add(1)
        for id in head.ids { add(id) }
        add(2)
        for name in head.fieldNames { add(name) }
        add(3)
        add(String(head.shardCount))
        return hash
    }
}
