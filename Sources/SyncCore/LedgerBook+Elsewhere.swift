/// Whether another home writes under this device's id (Deploy/SECURITY.md,
/// "Two live homes under one id"): a record held under the id that the
/// device's own book did not write. Nothing of the device's own making
/// fires it (a request whose answer was lost is the book's, the same; a
/// pending record made again after a refusal takes its slot at a newer
/// stamp), and records set aside are not held, so they do not either.
extension LedgerBook {
    /// What a replica holds under this book's device id: the stamp of each
    /// ledger record (its head, its shards by index, its pending records by
    /// slot) and of the newest write of the id it pulled.
    public struct Held: Sendable, Equatable {
        public var head: Ledger.Stamp?
        public var shards: [Int: Ledger.Stamp] = [:]
        public var pending: [Int: Ledger.Stamp] = [:]
        /// The newest value stamped with this id that a pull brought here.
        public var newestWrite: Ledger.Stamp?
        /// Values stamped with this id that pulls brought and this replica
        /// did not hold (another home's, whatever their stamps): each
        /// field's stamp, by the record's tag.
        public var fromElsewhere: [UInt64: [String: Ledger.Stamp]] = [:]

        public init(head: Ledger.Stamp? = nil, newestWrite: Ledger.Stamp? = nil) {
            self.head = head
            self.newestWrite = newestWrite
        }
    }

    /// The first record of `held` the book did not write, said in words, or
    /// nil when it wrote them all.
    /// - Parameter ownNewest: the newest stamp of this device's own changes,
    ///   pushed or not (a value of its own that a pull brings back, an
    ///   answer lost, is not newer).
    /// - Parameter refused: the stamps of this book's requests the server
    ///   refused: a server may keep one anyway and send it back.
    public func notWrittenHere(_ held: Held, ownNewest: Ledger.Stamp?, refused: [Ledger.Stamp] = []) -> String? {
        let waiting = unconfirmed?.stamp
        func isOwnRequest(_ stamp: Ledger.Stamp) -> Bool { stamp == waiting || refused.contains(stamp) }
        if let head = held.head, !isOwnRequest(head), headStamp.map({ head > $0 }) ?? true {
            return "a head written at \(head), which this machine did not write"
        }
        for (index, stamp) in held.shards.sorted(by: { $0.key < $1.key })
        where !isOwnRequest(stamp) && shardStamps[index].map({ stamp > $0 }) ?? true {
            return "shard \(index) written at \(stamp), which this machine did not write"
        }
        for (slot, stamp) in held.pending.sorted(by: { $0.key < $1.key })
        where lastFolded.map({ stamp > $0.stamp }) ?? true && !isInChain(slot, at: stamp) {
            return "a pending record in slot \(slot) written at \(stamp), which this machine did not write"
        }
        if let (_, field, stamp) = unnamed(held.fromElsewhere).first {
            return "a write of \(field) at \(stamp), which this machine did not make"
        }
        if let write = held.newestWrite, [newest, ownNewest].compactMap({ $0 }).max().map({ write > $0 }) ?? true {
            return "a write at \(write), newer than any this machine made"
        }
        return nil
    }

    /// Whether a pending record held in `slot` at `stamp` may be this
    /// book's own: its chain wrote that slot at that stamp or a newer one
    /// (a batch sent again after its answer was lost takes its slot at a
    /// newer stamp, and the server may hold the first). Both homes share
    /// the slots, so it may be the other home's older one.
    func isInChain(_ slot: Int, at stamp: Ledger.Stamp) -> Bool {
        chain.contains { $0.slot == slot && $0.stamp >= stamp }
    }

    /// Whether a pending record held in `slot` at `stamp` is this book's
    /// own, read whole: in its chain (``isInChain(_:at:)``), or in a chain
    /// one of its last heads folded (``foldedChains``: that head lost to
    /// another home's newer one), and built as that chain built that
    /// slot's, on the book's head then and after the link before it. The
    /// other home's record in a shared slot builds on its own head.
    func isOwnPending(_ slot: Int, _ record: Ledger.Pending, at stamp: Ledger.Stamp) -> Bool {
        let current = FoldedChain(base: headStamp, chainBase: chainBase, links: chain)
        return ([current] + foldedChains.reversed()).contains { built in
            guard let index = built.links.firstIndex(where: { $0.slot == slot && $0.stamp >= stamp }) else {
                return false
            }
            return (record.base == built.base || (built.chainBase != nil && record.base == built.chainBase))
                && record.previous == (index > 0 ? built.links[index - 1] : nil)
        }
    }

    /// The writes of `writes` (field → stamp, by tag) this book does not
    /// name at their stamp or a newer one, oldest first.
    public func unnamed(
        _ writes: [UInt64: [String: Ledger.Stamp]]
    ) -> [(tag: UInt64, field: String, stamp: Ledger.Stamp)] {
        guard !writes.isEmpty else { return [] }
        let named = Self.ownWrites(writes.keys.compactMap { entries[$0] }, names: fieldNames)
        var result: [(tag: UInt64, field: String, stamp: Ledger.Stamp)] = []
        for (tag, fields) in writes {
            for (field, stamp) in fields where named[tag]?[field].map({ $0 >= stamp }) != true {
                result.append((tag, field, stamp))
            }
        }
        return result.sorted { ($0.stamp, $0.tag, $0.field) < ($1.stamp, $1.tag, $1.field) }
    }
}

extension LedgerBook {
    /// Takes in what another home wrote under this book's id (Deploy/SECURITY.md,
    /// "Two live homes under one id", step 3): every write of the id that
    /// `other` (its ledger as held here) names, folded as this device's
    /// own, and its head's fold when it is past every link of this book.
    /// The next ledger request then writes every shard again and a head
    /// that folds both. Only when this machine holds every one of those
    /// writes (`held`: a record's registers by tag; a field held at the
    /// write's stamp or a newer one): a write the server holds back from
    /// this machine must not leave the id's ledger, where other machines
    /// would miss it. Entries `other` inherited from earlier ids are left
    /// out (they only widen what check 1 reads).
    /// - Parameter fromElsewhere: writes of the id that pulls brought
    ///   (``Held/fromElsewhere``), folded too when this book does not name
    ///   them and they are held: the other home's shards, written over by
    ///   this book's, may name them nowhere.
    /// - Returns: nil when done; else why it cannot be done (yet), nothing
    ///   changed: a write the other ledger names that is not held here; a
    ///   pending record of the other home held above its head's fold (the
    ///   union's head would retire it unread); a request of this book
    ///   waiting for its answer, or a batch for its answer.
    public mutating func takeIn(
        _ other: LedgerCheck.Ledgers, fromElsewhere: [UInt64: [String: Ledger.Stamp]] = [:],
        held: (UInt64) -> [String: HLCTimestamp]?
    ) -> String? {
        guard unconfirmed == nil, unanswered == 0 else { return "this machine's own ledger request waits" }
        let folded = other.head?.value.folded
        // This book's own chain above the other head's fold does not stop
        // it: the union's head folds it.
        func isOwn(_ slot: Int, _ record: LedgerCheck.Held<Ledger.Pending>) -> Bool {
            isOwnPending(slot, record.value, at: Ledger.Stamp(record.stamp))
        }
        if let tail = other.unfolded.first(where: { !isOwn($0.slot, $0.record) }) {
            return "the other home's pending record in slot \(tail.slot) is not folded by its head"
        }
        // The first write named that is not held here, said in words.
        var unmet: String?
        func writes(_ entries: [Ledger.Entry], names: [String]) -> [Write] {
            Self.ownWrites(entries, names: names).sorted { $0.key < $1.key }.map { tag, fields in
                let registers = held(tag) ?? [:]
                for (name, stamp) in fields.sorted(by: { $0.key < $1.key })
                where registers[name].map({ Ledger.Stamp($0) >= stamp }) != true {
                    unmet = unmet ?? "its write of \(name) at \(stamp) is not held here"
                }
                return Write(tag: tag, fields: fields)
            }
        }
        let names = other.head?.value.fieldNames ?? []
        var taken: [Write] = []
        for (_, shard) in other.shards.sorted(by: { $0.key < $1.key }) {
            taken += writes(shard.value.entries, names: names)
        }
        // Not this book's own chain: its acknowledged writes are in the
        // entries already, and a write the server refused (still held here)
        // must not be named.
        for (slot, pending) in other.pending.sorted(by: { $0.key < $1.key }) where !isOwn(slot, pending) {
            taken += writes(pending.value.entries, names: pending.value.fieldNames)
        }
        if let unmet { return "the other home's ledger names a write this machine lacks: \(unmet)" }
        // Writes of the id pulls brought, named by no ledger held here (the
        // other home's shards were written over by this book's): each as
        // held still (a value set aside since is no one's to name).
        for (tag, field, stamp) in unnamed(fromElsewhere)
        where held(tag)?[field].map({ Ledger.Stamp($0) >= stamp }) == true {
            taken.append(Write(tag: tag, fields: [field: stamp]))
        }
        fold(taken)
        // Its head's fold goes into this book's when it is past it; this
        // book's own chain goes on after the union's head either way.
        let mine = chain.last ?? lastFolded
        if let folded, mine.map({ folded.stamp > $0.stamp }) ?? true {
            lastFolded = folded
            chain = []
        }
        // Every shard is written again (the other home's win the keys this
        // book did not write since).
        shardStamps = [:]
        return nil
    }
}

extension LedgerBook {
    /// Each entry's own writes (device 0's groups) as field → stamp, by tag.
    static func ownWrites(_ entries: [Ledger.Entry], names: [String]) -> [UInt64: [String: Ledger.Stamp]] {
        var result: [UInt64: [String: Ledger.Stamp]] = [:]
        for entry in entries {
            for group in entry.groups where group.device == 0 {
                for (bit, name) in Ledger.knownFields.enumerated() where group.known & (1 << UInt16(bit)) != 0 {
                    result[entry.tag, default: [:]][name] = group.stamp
                }
                for index in group.others where Int(index) < names.count {
                    result[entry.tag, default: [:]][names[Int(index)]] = group.stamp
                }
            }
        }
        return result
    }

    /// Whether `other` (another home's ledger of this id, as held) already
    /// names every write of this book, at its stamp or a newer one, and
    /// every write of `fromElsewhere`: then this book takes it as its own
    /// (``adopt(_:)``) and writes nothing.
    public func isCovered(by other: LedgerCheck.Ledgers, fromElsewhere: [UInt64: [String: Ledger.Stamp]] = [:]) -> Bool
    {
        guard other.head != nil else { return false }
        let theirs = Self.ownWrites(
            other.shards.values.flatMap(\.value.entries), names: other.head?.value.fieldNames ?? [])
        let mine = Self.ownWrites(Array(entries.values), names: fieldNames)
        return [mine, fromElsewhere].allSatisfy { writes in
            writes.allSatisfy { tag, fields in
                fields.allSatisfy { name, stamp in theirs[tag]?[name].map { $0 >= stamp } ?? false }
            }
        }
    }

    /// Takes `other` (another home's ledger of this id, covering this book:
    /// ``isCovered(by:)``, and whole: its shards are the ones its head
    /// counts) as this book's last confirmed head: its entries, names, ids
    /// and shards, so the next request writes on from it.
    public mutating func adopt(_ other: LedgerCheck.Ledgers) {
        guard let head = other.head, unconfirmed == nil, unanswered == 0 else { return }
        entries = [:]
        for index in 0..<head.value.shardCount {
            for entry in other.shards[index]?.value.entries ?? [] { entries[entry.tag] = entry }
        }
        fieldNames = head.value.fieldNames
        ids = head.value.ids
        if let theirs = head.value.newest, newest.map({ theirs > $0 }) ?? true { newest = theirs }
        let before = headStamp
        headStamp = Ledger.Stamp(head.stamp)
        let mine = chain.last ?? lastFolded
        if let folded = head.value.folded, mine.map({ folded.stamp >= $0.stamp }) ?? true {
            lastFolded = folded
            chain = []
        } else if !chain.isEmpty, chainBase == nil {
            chainBase = before
        }
        shardCount = head.value.shardCount
        shardStamps = [:]
        for index in 0..<head.value.shardCount {
            if let shard = other.shards[index] { shardStamps[index] = Ledger.Stamp(shard.stamp) }
        }
        changedTags = []
    }
}
