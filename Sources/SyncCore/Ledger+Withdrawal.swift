extension Ledger {
    /// Writes of an earlier id of this device that it looked for and found
    /// nowhere (`DEVICE/withdrawn/SLOT`; Deploy/SECURITY.md, "Writes every
    /// holder lost"): a home restored from an older copy takes a new id, and
    /// the writes its old id made after the copy may be held by no one (the
    /// server was restored too), while a pending record naming them survived.
    /// Each withdrawn entry is bound to the pending record that names it (its
    /// slot, stamp and the hash of its bytes): a checker excuses it only
    /// while it holds that very record, unfolded. Entries a head folded into
    /// a shard are never withdrawn. A withdrawal of no records takes back an
    /// earlier one (its writes were found after all).
    public struct Withdrawal: Sendable, Hashable {
        /// The earlier id whose writes are withdrawn.
        public var former: String
        public var records: [Record]

        /// Entries withdrawn from one pending record of ``former``.
        public struct Record: Sendable, Hashable {
            public var slot: Int
            /// The stamp of the write that made the pending record (its register's).
            public var stamp: Stamp
            /// The first 8 bytes of a SHA-256 over its packed bytes (the
            /// client's `Ledger.pendingHash`).
            public var hash: UInt64
            /// Its entries withdrawn, each with the groups withdrawn, as
            /// the record names them (other fields by its own list).
            public var entries: [Entry]

            public init(slot: Int, stamp: Stamp, hash: UInt64, entries: [Entry]) {
                self.slot = slot
                self.stamp = stamp
                self.hash = hash
                self.entries = entries
            }
        }

        public init(former: String, records: [Record]) {
            self.former = former
            self.records = records
        }

        static let magic = UInt8(ascii: "W")

        public var bytes: [UInt8] {
            var writer = Writer(magic: Self.magic)
            writer.names([former])
            writer.u8(UInt8(clamping: records.count))
            for record in records {
                writer.u8(UInt8(record.slot))
                writer.stamp(record.stamp)
                writer.u64(record.hash)
                writer.entries(record.entries)
            }
            return writer.bytes
        }

        public init(bytes: [UInt8]) throws(Problem) {
            var reader = try Reader(bytes, magic: Self.magic)
            let names = try reader.names()
            guard names.count == 1, let former = names.first, former.utf8.count <= 128 else {
                throw Problem("a withdrawal names \(names.count) earlier ids, not one")
            }
            self.former = former
            let count = Int(try reader.u8())
            guard count <= Ledger.pendingSlots else {
                throw Problem("a withdrawal of \(count) pending records, more than \(Ledger.pendingSlots)")
            }
            records = []
            for _ in 0..<count {
                let slot = Int(try reader.u8())
                guard slot < Ledger.pendingSlots else {
                    throw Problem("pending slot \(slot), not below \(Ledger.pendingSlots)")
                }
                guard !records.contains(where: { $0.slot == slot }) else {
                    throw Problem("pending slot \(slot) is withdrawn from twice")
                }
                let stamp = try reader.stamp()
                let hash = try reader.u64()
                let entries = try reader.entries()
                guard !entries.isEmpty else { throw Problem("a pending record is named with nothing withdrawn") }
                records.append(Record(slot: slot, stamp: stamp, hash: hash, entries: entries))
            }
            try reader.end()
        }

        /// Every group withdrawn, as (slot, tag, group).
        public var groups: Set<WithdrawnGroup> {
            var groups: Set<WithdrawnGroup> = []
            for record in records {
                for entry in record.entries {
                    for group in entry.groups {
                        groups.insert(
                            WithdrawnGroup(slot: record.slot, stamp: record.stamp, tag: entry.tag, group: group))
                    }
                }
            }
            return groups
        }

        /// This withdrawal less every group `other` does not withdraw too
        /// (the same pending record, by slot, stamp and hash).
        public func keeping(_ other: Withdrawal) -> Withdrawal {
            let kept = other.groups
            var narrowed = Withdrawal(former: former, records: [])
            for record in records {
                guard other.records.contains(where: { $0.slot == record.slot && $0.hash == record.hash }) else {
                    continue
                }
                let entries = record.entries.compactMap { entry -> Entry? in
                    let groups = entry.groups.filter {
                        kept.contains(WithdrawnGroup(slot: record.slot, stamp: record.stamp, tag: entry.tag, group: $0))
                    }
                    return groups.isEmpty ? nil : Entry(tag: entry.tag, groups: groups)
                }
                if !entries.isEmpty {
                    narrowed.records.append(
                        Record(slot: record.slot, stamp: record.stamp, hash: record.hash, entries: entries))
                }
            }
            return narrowed
        }

        /// One group withdrawn, from the pending record in `slot` written at `stamp`.
        public struct WithdrawnGroup: Sendable, Hashable {
            public var slot: Int
            public var stamp: Stamp
            public var tag: UInt64
            public var group: Group
        }

        /// Of the unfolded pending records `unfolded` of ``former`` (with the
        /// hash of each one's bytes), the groups withdrawn from each, by
        /// slot: only from a record held with the slot, stamp and bytes the
        /// withdrawal names.
        public func withdrawn(
            from unfolded: [(slot: Int, record: LedgerCheck.Held<Pending>)], hash: (Pending) -> UInt64
        ) -> [Int: [Entry]] {
            var withdrawn: [Int: [Entry]] = [:]
            for named in records {
                guard
                    let held = unfolded.first(where: {
                        $0.slot == named.slot && Stamp($0.record.stamp) == named.stamp
                    }), hash(held.record.value) == named.hash
                else { continue }
                withdrawn[named.slot, default: []] += named.entries
            }
            return withdrawn
        }
    }
}
