/// A device's own ledger as the device keeps it (Deploy/SECURITY.md, "A
/// device's own writes, counted"): one entry a record it wrote, and what it
/// last sent of them. Pure: the caller gives each write's record tag and
/// keeps the book in its replica.
///
/// Writing follows the push. Every batch carries a ``Ledger/Pending``
/// record of its writes (``pending(for:stamps:)``), chained to the one
/// before; each batch's answer folds the writes it acknowledged into the
/// entries (``answered(acknowledging:)``); then the ledger request sends the
/// shards that changed and a head that folds the whole chain
/// (``ledgerRequest(at:shardsHash:)``), until the server confirms it
/// (``confirmed()``). A request whose answer was lost is sent again, the
/// same, before any new batch: a new pending record built on a head the
/// server may hold would break the chain.
public struct LedgerBook: Sendable, Equatable {
    /// One write of this device: the record's tag and the stamp of each field it set.
    public struct Write: Sendable, Hashable {
        public var tag: UInt64
        public var fields: [String: Ledger.Stamp]

        public init(tag: UInt64, fields: [String: Ledger.Stamp]) {
            self.tag = tag
            self.fields = fields
        }
    }

    /// A chain one of the book's heads folded, and the heads its records were built on.
    public struct FoldedChain: Sendable, Equatable {
        /// The book's head when the chain was folded.
        public var base: Ledger.Stamp?
        /// The book's ``LedgerBook/chainBase`` then.
        public var chainBase: Ledger.Stamp?
        public var links: [Ledger.Link]

        public init(base: Ledger.Stamp?, chainBase: Ledger.Stamp?, links: [Ledger.Link]) {
            self.base = base
            self.chainBase = chainBase
            self.links = links
        }
    }

    /// Why the book cannot make a ledger request.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// Every entry, by tag.
    public internal(set) var entries: [UInt64: Ledger.Entry] = [:]
    /// Field names outside ``Ledger/knownFields`` the entries name by index.
    public internal(set) var fieldNames: [String] = []
    /// Fields written past the ``Ledger/maxNames``th other name: a ledger
    /// cannot name them, so their writes go uncounted (no brsync writes
    /// such fields; a newer client's records might).
    public internal(set) var uncountedFields = 0
    /// Earlier ids whose entries this ledger inherited (device index N is `ids[N - 1]`).
    public internal(set) var ids: [String] = []
    /// The newest stamp of this device's own writes folded in.
    public internal(set) var newest: Ledger.Stamp?
    /// The stamp of the head last confirmed, which pending records build on.
    public internal(set) var headStamp: Ledger.Stamp?
    /// The pending records sent since the last head, oldest first.
    public internal(set) var chain: [Ledger.Link] = [] {
        didSet { if chain.isEmpty { chainBase = nil } }
    }
    /// The head the chain's first records were built on when it is not
    /// ``headStamp``: a chain kept through ``adopt(_:)`` goes on from the
    /// other home's head.
    public internal(set) var chainBase: Ledger.Stamp?
    /// Batches whose pending records were made and whose answer has not come.
    public internal(set) var unanswered = 0
    /// The ledger request made and not confirmed yet.
    public internal(set) var unconfirmed: Request?
    /// The pending record the last head folded (the newest of its chain).
    public internal(set) var lastFolded: Ledger.Link?
    /// The chains this book's last heads folded, oldest first, at most
    /// ``Ledger/pendingSlots`` links in all (the ring of slots holds no
    /// older record of this book's). A head of this book can lose to
    /// another home's newer one under the same id (Deploy/SECURITY.md, "Two
    /// live homes under one id"): the records it folded are then held above
    /// the winning head's fold, and are still this home's
    /// (``isOwnPending(_:_:at:)``).
    public internal(set) var foldedChains: [FoldedChain] = []
    /// The shards the last head counted, and the tags whose entries changed since.
    public internal(set) var shardCount = 1
    public internal(set) var changedTags: Set<UInt64> = []
    /// The stamp each shard in use was last sent with.
    public internal(set) var shardStamps: [Int: Ledger.Stamp] = [:]
    /// The device whose ledger this is.
    public let device: String

    public init(device: String) { self.device = device }

    // MARK: Pending records

    /// The pending records of a batch of `writes`, each with the slot it goes
    /// in, chained to the pending record before (the batch's entries split
    /// over consecutive slots when they do not fit one record). `stamps`
    /// gives the stamp each record is written with, in order.
    /// Returns nil while a ledger request waits for its confirmation, or
    /// when the chain would need more than ``Ledger/pendingSlots`` unfolded
    /// slots: send the ledger request first.
    public mutating func pending(
        for writes: [Write], stamps: () -> Ledger.Stamp
    ) -> [(slot: Int, record: Ledger.Pending)]? {
        guard unconfirmed == nil else { return nil }
        var batch: [UInt64: Ledger.Entry] = [:]
        for write in writes {
            if let entry = entry(batch[write.tag], adding: write, counting: false) { batch[write.tag] = entry }
        }
        let entries = batch.values.sorted { $0.tag < $1.tag }
        // Before its entries: kind, format, base, previous, newest, the names.
        let header = 2 + 13 + 14 + 13 + 1 + fieldNames.reduce(0) { $0 + 1 + $1.utf8.count } + 2
        var parts: [[Ledger.Entry]] = []
        var part: [Ledger.Entry] = []
        var bytes = header
        for entry in entries {
            let size = Self.packedSize(entry)
            if !part.isEmpty && (bytes + size > Ledger.maxBytes || part.count == Ledger.maxEntries) {
                parts.append(part)
                part = []
                bytes = header
            }
            part.append(entry)
            bytes += size
        }
        parts.append(part)
        guard chain.count + parts.count <= Ledger.pendingSlots else { return nil }
        // The batch's newest write goes in its last part only: a later part
        // withheld then leaves the batch's newest writes uncovered (check
        // 3), whichever part holds them.
        let newest = entries.flatMap { $0.groups.filter { $0.device == 0 }.map(\.stamp) }.max()
        var records: [(slot: Int, record: Ledger.Pending)] = []
        for (index, part) in parts.enumerated() {
            let slot = ((chain.last ?? lastFolded).map { $0.slot + 1 } ?? 0) % Ledger.pendingSlots
            let record = Ledger.Pending(
                base: headStamp, previous: chain.last, newest: index == parts.count - 1 ? newest : nil,
                fieldNames: fieldNames, entries: part)
            chain.append(Ledger.Link(slot: slot, stamp: stamps()))
            records.append((slot, record))
        }
        unanswered += 1
        return records
    }

    /// The answer to a batch came: the writes it acknowledged (applied, not
    /// refused) go into the entries; refused ones never do. Its pending
    /// records stay in the chain (a retry's answer may not have taken them,
    /// but then the first try did: the head folds them either way).
    public mutating func answered(acknowledging writes: [Write]) {
        if unanswered > 0 { unanswered -= 1 }
        fold(writes)
    }

    /// The server refused the ledger request: it took none of it, so the
    /// next one is made afresh, from the book as it is then.
    public mutating func abandonRequest() { unconfirmed = nil }

    /// The newest stamp this book has written a ledger record with: the next
    /// is newer, whatever the clock says after it was set back.
    public var lastStamp: Ledger.Stamp? { lastStamp(notAfter: .max) }

    /// The newest stamp this book has written a ledger record with at or
    /// before `wallMillis`.
    public func lastStamp(notAfter wallMillis: Int64) -> Ledger.Stamp? {
        ([headStamp, lastFolded?.stamp, unconfirmed?.stamp] + chain.map(\.stamp)).compactMap { $0 }
            .filter { $0.wallMillis <= wallMillis }.max()
    }

    /// Takes acknowledged writes into the entries (``answered(acknowledging:)``
    /// for a batch's; directly for writes a first ledger starts from).
    public mutating func fold(_ writes: [Write]) {
        for write in writes {
            guard let entry = entry(entries[write.tag], adding: write, counting: true) else { continue }
            entries[write.tag] = entry
            changedTags.insert(write.tag)
            for group in entry.groups where group.device == 0 && newest.map({ group.stamp > $0 }) ?? true {
                newest = group.stamp
            }
        }
    }

    /// Whether the entries hold `write` already: folding it would change
    /// nothing (a write relayed again after a restore, not a new one).
    public func holds(_ write: Write) -> Bool {
        var trial = self
        return trial.entry(entries[write.tag], adding: write, counting: false) == entries[write.tag]
    }

    // MARK: The ledger request

    /// What a ledger request sends: every shard whose entries changed (all
    /// of them when the shard count changes) and the head summing them up
    /// and folding the chain, every record written at one stamp.
    public struct Request: Sendable, Equatable {
        /// The shards to write (entries are never dropped, so the shard
        /// count only grows, and every shard in use is rewritten when it does).
        public var shards: [Ledger.Shard]
        /// The pending records the head folds.
        public var folded: [Ledger.Link]
        public var head: Ledger.Head
        /// The stamp the request's records are written with.
        public var stamp: Ledger.Stamp
    }

    /// The ledger request, its records written at `stamp`; the one made
    /// before, the same, while it waits for its confirmation (its answer
    /// lost). `shardsHash` makes the head's hash (``Ledger/Head/shardsHash``)
    /// of every shard in use with the stamp it will hold.
    /// Returns nil while a batch waits for its answer (its writes are in
    /// neither a shard nor, once folded, a pending record).
    /// - Throws: ``Problem`` when a shard would not fit a ledger record (256
    ///   shards of entries too many or too large).
    public mutating func ledgerRequest(
        at stamp: Ledger.Stamp, shardsHash: ([(index: Int, shard: LedgerCheck.Held<Ledger.Shard>)]) -> UInt64
    ) throws(Problem) -> Request? {
        if let unconfirmed { return unconfirmed }
        guard unanswered == 0 else { return nil }
        let count = Ledger.shardCount(forEntries: entries.count)
        var byShard = [[Ledger.Entry]](repeating: [], count: count)
        for entry in entries.values { byShard[entry.shard(of: count)].append(entry) }
        let all = byShard.enumerated().map { index, list in
            Ledger.Shard(index: index, shardCount: count, entries: list.sorted { $0.tag < $1.tag })
        }
        for shard in all {
            let size = 2 + 1 + 2 + 2 + shard.entries.reduce(0) { $0 + Self.packedSize($1) }
            guard size <= Ledger.maxBytes, shard.entries.count <= Ledger.maxEntries else {
                throw Problem(
                    description:
                        "this device's ledger has outgrown its \(count) shards (\(entries.count) records): shard \(shard.index) would hold \(size) bytes"
                )
            }
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
        let request = Request(
            shards: all.filter { changed.contains($0.index) }, folded: chain, head: head, stamp: stamp)
        unconfirmed = request
        return request
    }

    /// The server took the ledger request: the chain starts again on its head.
    public mutating func confirmed() {
        guard let request = unconfirmed else { return }
        if !request.folded.isEmpty {
            foldedChains.append(FoldedChain(base: headStamp, chainBase: chainBase, links: request.folded))
            while foldedChains.reduce(0, { $0 + $1.links.count }) > Ledger.pendingSlots { foldedChains.removeFirst() }
        }
        headStamp = request.stamp
        lastFolded = request.head.folded
        chain = []
        shardCount = request.head.shardCount
        for shard in request.shards { shardStamps[shard.index] = request.stamp }
        changedTags = []
        unconfirmed = nil
    }

    // MARK: Entries

    /// The bytes an entry packs to.
    static func packedSize(_ entry: Ledger.Entry) -> Int {
        8 + entry.groups.reduce(0) { $0 + 14 + ($1.device != 0 || !$1.others.isEmpty ? 2 + $1.others.count : 0) }
    }

    /// `entry` with `write` taken in: each field the write set leaves the
    /// group it was in when the write is newer, and joins the write's
    /// group. Nil when the result names no field (a write of encryption's
    /// own fields only): an entry of no group packs to nothing a reader takes.
    mutating func entry(_ entry: Ledger.Entry?, adding write: Write, counting: Bool) -> Ledger.Entry? {
        var groups = entry?.groups ?? []
        for (name, stamp) in write.fields where !name.hasPrefix(Wire.sealedFieldPrefix) {
            let known = Ledger.Group.bit(of: name)
            var other: UInt8?
            if known == nil {
                if let index = fieldNames.firstIndex(of: name) {
                    other = UInt8(index)
                } else if fieldNames.count < Ledger.maxNames {
                    fieldNames.append(name)
                    other = UInt8(fieldNames.count - 1)
                } else {
                    if counting { uncountedFields += 1 }
                    continue
                }
            }
            func holds(_ group: Ledger.Group) -> Bool {
                known.map { group.known & $0 != 0 } ?? group.others.contains(other!)
            }
            func drop(from index: Int) {
                if let known { groups[index].known &= ~known } else { groups[index].others.removeAll { $0 == other } }
            }
            if let current = groups.firstIndex(where: { $0.device == 0 && holds($0) }) {
                guard groups[current].stamp < stamp else { continue }
                drop(from: current)
            }
            // An inherited group naming the field is superseded by this device's own write.
            for index in groups.indices where groups[index].device != 0 && holds(groups[index]) { drop(from: index) }
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
        guard !groups.isEmpty else { return nil }
        groups.sort { ($0.stamp, $0.device) < ($1.stamp, $1.device) }
        return Ledger.Entry(tag: write.tag, groups: groups)
    }
}
