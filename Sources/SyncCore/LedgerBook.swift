/// A device's own ledger as the device keeps it (Deploy/SECURITY.md, "A
/// device's own writes, counted"): one entry a record it wrote, and what it
/// last sent of them. Pure: the caller gives each write's record tag and
/// keeps the book in its replica.
///
/// Writing goes in two steps, as pushes do. Every batch of a push carries a
/// ``Ledger/Pending`` record of its writes (``pending(for:)``), chained to
/// the one before; once the push is answered, the acknowledged writes are
/// folded into the entries (``fold(_:)``) and the ledger request sends the
/// shards that changed and a head (``ledgerRequest(at:shardsHash:)``),
/// which empties the chain.
public struct LedgerBook: Sendable, Equatable {
    /// One acknowledged write of this device: the record's tag and the
    /// stamp of each field it set.
    public struct Write: Sendable, Hashable {
        public var tag: UInt64
        public var fields: [String: Ledger.Stamp]

        public init(tag: UInt64, fields: [String: Ledger.Stamp]) {
            self.tag = tag
            self.fields = fields
        }
    }

    /// Every entry, by tag.
    public private(set) var entries: [UInt64: Ledger.Entry] = [:]
    /// Field names outside ``Ledger/knownFields`` the entries name by index.
    public private(set) var fieldNames: [String] = []
    /// Earlier ids whose entries this ledger inherited (device index N is `ids[N - 1]`).
    public private(set) var ids: [String] = []
    /// The newest stamp of this device's own writes folded in.
    public private(set) var newest: Ledger.Stamp?
    /// The stamp of the head last sent, which pending records build on.
    public private(set) var headStamp: Ledger.Stamp?
    /// The pending records sent since the last head, oldest first.
    public private(set) var chain: [Ledger.Link] = []
    /// The pending record the last head folded (the newest of its chain).
    public private(set) var lastFolded: Ledger.Link?
    /// The shards the last head counted, and the tags whose entries changed since.
    public private(set) var shardCount = 1
    public private(set) var changedTags: Set<UInt64> = []
    /// The stamp each shard in use was last sent with.
    public private(set) var shardStamps: [Int: Ledger.Stamp] = [:]
    /// The device whose ledger this is.
    public let device: String

    public init(device: String) { self.device = device }

    // MARK: Pending records

    /// The entries of `writes` alone (a pending record describes its batch,
    /// not the whole ledger), ascending by tag.
    public mutating func batchEntries(_ writes: [Write]) -> [Ledger.Entry] {
        var batch: [UInt64: Ledger.Entry] = [:]
        for write in writes { batch[write.tag] = Self.entry(batch[write.tag], adding: write, names: &fieldNames) }
        return batch.values.sorted { $0.tag < $1.tag }
    }

    /// The pending records of a batch of `writes`, each with the slot it goes
    /// in, chained to the pending record before (the batch's entries split
    /// over consecutive slots when they do not fit one record). `stamp`
    /// gives the stamp each record is written with, in order.
    /// Returns nil when the chain would need more than ``Ledger/pendingSlots``
    /// unfolded slots: send a ledger request first.
    public mutating func pending(
        for writes: [Write], stamps: () -> Ledger.Stamp
    ) -> [(slot: Int, record: Ledger.Pending)]? {
        let entries = batchEntries(writes)
        var parts: [[Ledger.Entry]] = []
        var part: [Ledger.Entry] = []
        // A pending record's bytes before its entries: kind, format, base, previous, count.
        let header = 2 + 13 + 14 + 2
        var bytes = header
        for entry in entries {
            let size =
                8
                + entry.groups.reduce(0) { $0 + 14 + ($1.device != 0 || !$1.others.isEmpty ? 2 + $1.others.count : 0) }
            if bytes + size > Ledger.maxBytes || part.count == Ledger.maxEntries {
                parts.append(part)
                part = []
                bytes = header
            }
            part.append(entry)
            bytes += size
        }
        parts.append(part)
        guard chain.count + parts.count <= Ledger.pendingSlots else { return nil }
        var records: [(slot: Int, record: Ledger.Pending)] = []
        for part in parts {
            let slot =
                chain.last.map { ($0.slot + 1) % Ledger.pendingSlots } ?? lastFolded.map {
                    ($0.slot + 1) % Ledger.pendingSlots
                } ?? 0
            let record = Ledger.Pending(base: headStamp, previous: chain.last, entries: part)
            chain.append(Ledger.Link(slot: slot, stamp: stamps()))
            records.append((slot, record))
        }
        return records
    }

    // MARK: Folding and the ledger request

    /// Takes acknowledged (applied, not refused) writes into the entries.
    public mutating func fold(_ writes: [Write]) {
        for write in writes {
            entries[write.tag] = Self.entry(entries[write.tag], adding: write, names: &fieldNames)
            changedTags.insert(write.tag)
            for stamp in write.fields.values where newest.map({ stamp > $0 }) ?? true { newest = stamp }
        }
    }

    /// What a ledger request sends: every shard whose entries changed (all
    /// of them when the shard count changes), the head summing them up, and
    /// the pending slots it empties, every record written at one stamp.
    public struct Request: Sendable, Equatable {
        /// The shards to write (entries are never dropped, so the shard
        /// count only grows, and every shard in use is rewritten when it does).
        public var shards: [Ledger.Shard]
        /// The pending records the head folds, whose slots it empties.
        public var folded: [Ledger.Link]
        public var head: Ledger.Head
        /// The stamp the request's records are written with.
        public var stamp: Ledger.Stamp
    }

    /// The ledger request, its records written at `stamp`. `shardsHash`
    /// makes the head's hash (``Ledger/Head/shardsHash``) of every shard in
    /// use with the stamp it will hold: the request's for those it sends,
    /// the one each was last sent with for the others.
    public func ledgerRequest(
        at stamp: Ledger.Stamp, shardsHash: ([(index: Int, shard: LedgerCheck.Held<Ledger.Shard>)]) -> UInt64
    ) -> Request {
        let count = Ledger.shardCount(forEntries: entries.count)
        var byShard = [[Ledger.Entry]](repeating: [], count: count)
        for entry in entries.values { byShard[entry.shard(of: count)].append(entry) }
        let all = byShard.enumerated().map { index, list in
            Ledger.Shard(index: index, shardCount: count, entries: list.sorted { $0.tag < $1.tag })
        }
        let changed =
            count != shardCount || shardStamps.isEmpty
            ? Set(0..<count) : Set(changedTags.map { Ledger.shard(ofTag: $0, shardCount: count) })
        let held = all.map { shard in
            let written = changed.contains(shard.index) ? stamp : shardStamps[shard.index] ?? stamp
            return (index: shard.index, shard: LedgerCheck.Held(shard, stamp: written.timestamp(device: device)))
        }
        let head = Ledger.Head(
            newest: newest, folded: chain.last ?? lastFolded, ids: ids, fieldNames: fieldNames, shardCount: count,
            entryCount: entries.count, shardsHash: shardsHash(held))
        return Request(shards: all.filter { changed.contains($0.index) }, folded: chain, head: head, stamp: stamp)
    }

    /// Notes that the server took `request`.
    public mutating func sent(_ request: Request) {
        headStamp = request.stamp
        lastFolded = request.head.folded
        chain = []
        shardCount = request.head.shardCount
        for shard in request.shards { shardStamps[shard.index] = request.stamp }
        changedTags = []
    }

    // MARK: Entries

    /// `entry` with `write` taken in: each field the write set leaves the
    /// group it was in when the write is newer, and joins the write's group.
    static func entry(_ entry: Ledger.Entry?, adding write: Write, names: inout [String]) -> Ledger.Entry {
        var groups = entry?.groups ?? []
        for (name, stamp) in write.fields where !name.hasPrefix(Wire.sealedFieldPrefix) {
            let known = Ledger.Group.bit(of: name)
            var other: UInt8?
            if known == nil {
                if let index = names.firstIndex(of: name) {
                    other = UInt8(index)
                } else if names.count < Ledger.maxNames {
                    names.append(name)
                    other = UInt8(names.count - 1)
                } else {
                    continue // more field names than a head lists: this one goes uncounted
                }
            }
            func holds(_ group: Ledger.Group) -> Bool {
                known.map { group.known & $0 != 0 } ?? group.others.contains(other!)
            }
            if let current = groups.firstIndex(where: { $0.device == 0 && holds($0) }) {
                guard groups[current].stamp < stamp else { continue }
                if let known {
                    groups[current].known &= ~known
                } else {
                    groups[current].others.removeAll { $0 == other }
                }
            }
            // An inherited group naming the field is superseded by this device's own write.
            for index in groups.indices where groups[index].device != 0 && holds(groups[index]) {
                if let known { groups[index].known &= ~known } else { groups[index].others.removeAll { $0 == other } }
            }
            if let target = groups.firstIndex(where: { $0.device == 0 && $0.stamp == stamp }) {
                if let known {
                    groups[target].known |= known
                } else {
                    groups[target].others = (groups[target].others + [other!]).sorted()
                }
            } else {
                groups.append(Ledger.Group(known: known ?? 0, others: other.map { [$0] } ?? [], stamp: stamp))
            }
        }
        groups.removeAll { $0.known == 0 && $0.others.isEmpty }
        groups.sort { ($0.stamp, $0.device) < ($1.stamp, $1.device) }
        return Ledger.Entry(tag: write.tag, groups: groups)
    }
}
