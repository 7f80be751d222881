/// A device's ledger book as its replica keeps it: the small state as one
/// packed value, each entry as a row of its own, so an answer rewrites the
/// entries it changed and nothing else. The same strict packing as ledger
/// records (``Ledger``), with a kind of its own (`B`).
extension LedgerBook {
    static let stateMagic = UInt8(ascii: "B")

    /// Everything but the entries, packed. A batch's answer that never came
    /// is not kept: another process never receives it, and the pending
    /// record it was made with is made again, in the same slot, by the next
    /// push (see ``init(device:state:entries:shardsHash:)``).
    public var stateBytes: [UInt8] {
        var writer = Ledger.Writer(magic: Self.stateMagic)
        writer.names(fieldNames)
        writer.u32(UInt32(clamping: uncountedFields))
        writer.names(ids)
        writer.optionalStamp(newest)
        writer.optionalStamp(headStamp)
        writer.u8(UInt8(chain.count))
        for link in chain { writer.optionalLink(link) }
        writer.optionalStamp(unconfirmed?.stamp)
        writer.optionalLink(lastFolded)
        writer.u16(UInt16(shardCount))
        writer.u16(UInt16(shardStamps.count))
        for (index, stamp) in shardStamps.sorted(by: { $0.key < $1.key }) {
            writer.u8(UInt8(index))
            writer.stamp(stamp)
        }
        // Written only when there is one (books kept before them read as they were).
        if chainBase != nil || !foldedChains.isEmpty { writer.optionalStamp(chainBase) }
        if !foldedChains.isEmpty {
            writer.u8(UInt8(foldedChains.count))
            for folded in foldedChains {
                writer.optionalStamp(folded.base)
                writer.optionalStamp(folded.chainBase)
                writer.u8(UInt8(folded.links.count))
                for link in folded.links { writer.optionalLink(link) }
            }
        }
        return writer.bytes
    }

    /// The chains the book's last heads folded (``foldedChains``), as `stateBytes` writes them: at least one.
    private static func foldedChains(_ reader: inout Ledger.Reader) throws(Ledger.Problem) -> [FoldedChain] {
        let count = Int(try reader.u8())
        var chains: [FoldedChain] = []
        var links = 0
        for _ in 0..<count {
            var folded = FoldedChain(base: try reader.optionalStamp(), chainBase: try reader.optionalStamp(), links: [])
            let length = Int(try reader.u8())
            links += length
            guard length > 0, links <= Ledger.pendingSlots else {
                throw Ledger.Problem("folded chains of \(length == 0 ? "no" : "over \(Ledger.pendingSlots)") links")
            }
            for _ in 0..<length {
                guard let link = try reader.optionalLink() else {
                    throw Ledger.Problem("a folded chain's link is missing")
                }
                folded.links.append(link)
            }
            chains.append(folded)
        }
        guard !chains.isEmpty else { throw Ledger.Problem("no folded chain where one is said to follow") }
        return chains
    }

    /// One entry as its replica row keeps it.
    public static func entryBytes(_ entry: Ledger.Entry) -> [UInt8] {
        Ledger.Shard(index: 0, shardCount: 1, entries: [entry]).bytes
    }

    /// The book as `stateBytes` and its entries' rows left it (each entry's
    /// bytes and whether it changed since the last head). A ledger request
    /// made and not confirmed is made again from its stamp (a request is a
    /// function of the book and its stamp), so a lost answer is followed by
    /// the same request.
    /// - Throws: ``Ledger/Problem`` for bytes this version did not write.
    public init(
        device: String, state: [UInt8], entries rows: [(bytes: [UInt8], changed: Bool)],
        shardsHash: ([(index: Int, shard: LedgerCheck.Held<Ledger.Shard>)]) -> UInt64
    ) throws(Ledger.Problem) {
        self.init(device: device)
        var reader = try Ledger.Reader(state, magic: Self.stateMagic)
        fieldNames = try reader.fieldNames()
        uncountedFields = Int(try reader.u32())
        ids = try reader.names()
        newest = try reader.optionalStamp()
        headStamp = try reader.optionalStamp()
        let links = Int(try reader.u8())
        guard links <= Ledger.pendingSlots else { throw Ledger.Problem("a chain of \(links) pending records") }
        for _ in 0..<links {
            guard let link = try reader.optionalLink() else { throw Ledger.Problem("a chain's link is missing") }
            chain.append(link)
        }
        let unconfirmedStamp = try reader.optionalStamp()
        lastFolded = try reader.optionalLink()
        shardCount = try reader.shardCount()
        let stamps = Int(try reader.u16())
        var last = -1
        for _ in 0..<stamps {
            // Ascending, once each, within the shard count: as written.
            let index = Int(try reader.u8())
            guard index > last, index < shardCount else {
                throw Ledger.Problem("shard stamps are not ascending shards of \(shardCount)")
            }
            last = index
            shardStamps[index] = try reader.stamp()
        }
        if !reader.isAtEnd {
            chainBase = try reader.optionalStamp()
            guard chainBase == nil || !chain.isEmpty else { throw Ledger.Problem("a chain's base without a chain") }
            if reader.isAtEnd {
                guard chainBase != nil else { throw Ledger.Problem("an empty chain's base") }
            } else {
                foldedChains = try Self.foldedChains(&reader)
            }
        }
        try reader.end()
        for row in rows {
            let shard = try Ledger.Shard(bytes: row.bytes)
            guard shard.entries.count == 1, let entry = shard.entries.first else {
                throw Ledger.Problem("an entry's row holds \(shard.entries.count) entries")
            }
            // Written as shard 0 of 1 (``entryBytes(_:)``): anything else was not written here.
            guard shard.index == 0, shard.shardCount == 1 else {
                throw Ledger.Problem(
                    "an entry's row is packed as shard \(shard.index) of \(shard.shardCount), not 0 of 1")
            }
            entries[entry.tag] = entry
            if row.changed { changedTags.insert(entry.tag) }
        }
        if let unconfirmedStamp {
            do {
                _ = try ledgerRequest(at: unconfirmedStamp, shardsHash: shardsHash)
            } catch {
                throw Ledger.Problem(error.description)
            }
        }
    }
}
