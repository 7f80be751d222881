import SyncCore
import Testing

/// A record held under a device's own id that its book did not write
/// (``LedgerBook/notWrittenHere(_:ownNewest:)``): nothing of the book's own
/// making is named, and each kind of record another home writes is.
@Suite struct LedgerBookElsewhereTests {
    typealias Stamp = Ledger.Stamp
    static func stamp(_ wall: Int64, _ counter: UInt32 = 0) -> Stamp { Stamp(wallMillis: wall, counter: counter) }

    /// A book whose first request (at 200: shard 0 and the head) was
    /// confirmed, with one batch after it (slot 2 at 301) answered, and a
    /// second request (at 400) made and not confirmed; its newest write is at 20.
    static func book() throws -> LedgerBook {
        var book = LedgerBook(device: "laptop")
        var wall: Int64 = 100
        func next() -> Stamp {
            wall += 1
            return stamp(wall)
        }
        for tag in UInt64(1)...2 {
            let records = book.pending(
                for: [.init(tag: tag, fields: ["deleted": stamp(Int64(tag) * 10)])], stamps: next)
            #expect(records != nil)
            book.answered(acknowledging: [.init(tag: tag, fields: ["deleted": stamp(Int64(tag) * 10)])])
        }
        let first = try book.ledgerRequest(at: stamp(200)) { _ in 1 }
        #expect(first != nil)
        book.confirmed()
        wall = 300
        let third = book.pending(for: [.init(tag: 3, fields: ["deleted": stamp(20)])], stamps: next)
        #expect(third != nil)
        book.answered(acknowledging: [.init(tag: 3, fields: ["deleted": stamp(20)])])
        let second = try book.ledgerRequest(at: stamp(400)) { _ in 2 }
        #expect(second != nil)
        return book
    }

    @Test func whatTheBookWroteIsNotNamed() throws {
        let book = try Self.book()
        #expect(book.headStamp == Self.stamp(200) && book.chain.map(\.slot) == [2])
        var held = LedgerBook.Held(head: Self.stamp(200), newestWrite: Self.stamp(20))
        held.shards = [0: Self.stamp(200)]
        held.pending = [0: Self.stamp(101), 1: Self.stamp(102), 2: Self.stamp(301)]
        #expect(book.notWrittenHere(held, ownNewest: Self.stamp(20)) == nil)
        // The request waiting for its answer, taken by the server.
        held.head = Self.stamp(400)
        held.shards = [0: Self.stamp(400)]
        #expect(book.notWrittenHere(held, ownNewest: nil) == nil)
        // An older head of its own (a restored server's), a pending record
        // made again after a refusal (the chain's link is newer), and a
        // value of its own pulled back newer than the book's (a lost answer).
        held.head = Self.stamp(150)
        held.pending[2] = Self.stamp(300, 5)
        held.newestWrite = Self.stamp(25)
        #expect(book.notWrittenHere(held, ownNewest: Self.stamp(25)) == nil)
        #expect(LedgerBook(device: "fresh").notWrittenHere(LedgerBook.Held(), ownNewest: nil) == nil)
    }

    @Test(arguments: [
        ("head", "a head written at"), ("shard", "shard 0 written at"), ("new shard", "shard 3 written at"),
        ("pending", "a pending record in slot 2"), ("other slot", "a pending record in slot 5"),
        ("write", "a write at"),
    ])
    func eachRecordAnotherHomeWritesIsNamed(what: String, named: String) throws {
        let book = try Self.book()
        var held = LedgerBook.Held(head: Self.stamp(200), newestWrite: Self.stamp(20))
        held.shards = [0: Self.stamp(200)]
        switch what {
        case "head": held.head = Self.stamp(250)
        case "shard": held.shards[0] = Self.stamp(250)
        case "new shard": held.shards[3] = Self.stamp(100)
        case "pending": held.pending[2] = Self.stamp(302)
        case "other slot": held.pending[5] = Self.stamp(201)
        default: held.newestWrite = Self.stamp(21)
        }
        let reason = book.notWrittenHere(held, ownNewest: Self.stamp(20))
        #expect(reason?.hasPrefix(named) == true, "\(String(describing: reason))")
        // A fresh book (a device that never wrote) names any write of its id.
        let fresh = LedgerBook(device: "laptop")
        #expect(fresh.notWrittenHere(LedgerBook.Held(newestWrite: Self.stamp(1)), ownNewest: nil) != nil)
    }

    /// A write of the id that a pull brought is named whatever its stamp,
    /// older than this home's newest too (the other home's ledger was
    /// written over by this one's); one the book names at its stamp or a
    /// newer one is not.
    @Test func aWriteFromElsewhereOlderThanTheBooksOwnIsNamed() throws {
        let book = try Self.book()
        var held = LedgerBook.Held(head: Self.stamp(200), newestWrite: Self.stamp(15))
        held.shards = [0: Self.stamp(200)]
        // Tag 2's `deleted` at 20: the book names it at 20. Tag 1's at 5: at 10.
        held.fromElsewhere = [2: ["deleted": Self.stamp(20)], 1: ["deleted": Self.stamp(5)]]
        #expect(book.notWrittenHere(held, ownNewest: Self.stamp(20)) == nil)
        // Tag 1's `name` at 15 (the book has no `name` of it), and tag 9, which the book never wrote.
        held.fromElsewhere[1]?["name"] = Self.stamp(15)
        held.fromElsewhere[9] = ["deleted": Self.stamp(12)]
        let reason = book.notWrittenHere(held, ownNewest: Self.stamp(20))
        #expect(reason == "a write of deleted at \(Self.stamp(12)), which this machine did not make")
        #expect(book.unnamed(held.fromElsewhere).map(\.tag) == [9, 1])
    }
}

/// Another home's ledger of the same id taken in (``LedgerBook/takeIn(_:held:)``)
/// or taken as this book's own when it covers it (``LedgerBook/adopt(_:)``).
@Suite struct LedgerBookTakeInTests {
    typealias Stamp = Ledger.Stamp
    static func stamp(_ wall: Int64) -> Stamp { Stamp(wallMillis: wall, counter: 0) }
    static func held(_ wall: Int64) -> HLCTimestamp { HLCTimestamp(wallMillis: wall, counter: 0, device: "laptop") }

    /// A book of `writes` (tag → the stamp of its `deleted` field), its
    /// request at `at` confirmed, and the ledger records that request wrote.
    static func written(_ writes: [UInt64: Int64], at: Int64) throws -> (LedgerBook, LedgerCheck.Ledgers) {
        var book = LedgerBook(device: "laptop")
        book.fold(writes.map { .init(tag: $0.key, fields: ["deleted": stamp($0.value)]) })
        let made = try book.ledgerRequest(at: stamp(at)) { _ in 7 }
        let request = try #require(made)
        book.confirmed()
        var ledgers = LedgerCheck.Ledgers(head: .init(request.head, stamp: held(at)))
        for shard in request.shards { ledgers.shards[shard.index] = .init(shard, stamp: held(at)) }
        return (book, ledgers)
    }

    @Test func theWritesOfBothHomesThatAreHeldGoIntoOneLedger() throws {
        // This home wrote tags 1 and 2; the other, under the same id, 2 again (later) and 3 and 4.
        let (mine, _) = try Self.written([1: 10, 2: 11], at: 100)
        let (_, theirs) = try Self.written([2: 20, 3: 21, 4: 22], at: 200)
        #expect(!mine.isCovered(by: theirs))
        var union = mine
        // Tag 4's write is not held here (a server may hold it back): nothing is taken yet.
        var registers: [UInt64: [String: HLCTimestamp]] = [
            2: ["deleted": Self.held(20)], 3: ["deleted": Self.held(25)],
        ]
        let waiting = union.takeIn(theirs, held: { registers[$0] })
        #expect(waiting?.contains("lacks") == true, "\(String(describing: waiting))")
        #expect(union == mine)
        registers[4] = ["deleted": Self.held(22)]
        #expect(union.takeIn(theirs, held: { registers[$0] }) == nil)
        #expect(Set(union.entries.keys) == [1, 2, 3, 4])
        #expect(union.newest == Self.stamp(22))
        // Every shard is written again.
        let made = try union.ledgerRequest(at: Self.stamp(300)) { _ in 9 }
        let request = try #require(made)
        #expect(request.shards.count == request.head.shardCount && request.head.entryCount == 4)
        // The other home, holding that ledger, is covered by it: it writes nothing.
        var ledgers = LedgerCheck.Ledgers(head: .init(request.head, stamp: Self.held(300)))
        for shard in request.shards { ledgers.shards[shard.index] = .init(shard, stamp: Self.held(300)) }
        let (other, _) = try Self.written([2: 20, 3: 21], at: 200)
        #expect(other.isCovered(by: ledgers))
        var adopted = other
        adopted.adopt(ledgers)
        #expect(adopted.headStamp == Self.stamp(300) && adopted.shardStamps[0] == Self.stamp(300))
        #expect(adopted.changedTags.isEmpty && Set(adopted.entries.keys) == [1, 2, 3, 4])
        // Nothing held under the id is then not its own.
        var held = LedgerBook.Held(head: Self.stamp(300))
        held.shards = [0: Self.stamp(300)]
        #expect(adopted.notWrittenHere(held, ownNewest: Self.stamp(21)) == nil)
    }

    /// This home wrote its ledger over the other home's (its head newer)
    /// before the other's writes came: they are named by no ledger held
    /// here, and go into this book from what pulls brought, each as held.
    @Test func writesThatNoLedgerHeldNamesAreTakenFromWhatPullsBrought() throws {
        let (mine, ours) = try Self.written([1: 10, 2: 11], at: 300)
        // Tag 2's `name` at 15 and tag 3's `deleted` at 12, from the other home; tag 5's, set aside here since.
        let pulled: [UInt64: [String: Stamp]] = [
            2: ["name": Self.stamp(15)], 3: ["deleted": Self.stamp(12)], 5: ["deleted": Self.stamp(13)],
        ]
        #expect(!mine.isCovered(by: ours, fromElsewhere: pulled))
        let registers: [UInt64: [String: HLCTimestamp]] = [
            1: ["deleted": Self.held(10)], 2: ["deleted": Self.held(11), "name": Self.held(40)],
            3: ["deleted": Self.held(12)],
        ]
        var union = mine
        #expect(union.takeIn(ours, fromElsewhere: pulled, held: { registers[$0] }) == nil)
        #expect(Set(union.entries.keys) == [1, 2, 3])
        #expect(union.unnamed(pulled).map(\.tag) == [5], "only the write no longer held is left out")
        // Its next request names them, and a book holding that ledger is covered.
        let made = try union.ledgerRequest(at: Self.stamp(400)) { _ in 9 }
        let request = try #require(made)
        var ledgers = LedgerCheck.Ledgers(head: .init(request.head, stamp: Self.held(400)))
        for shard in request.shards { ledgers.shards[shard.index] = .init(shard, stamp: Self.held(400)) }
        #expect(mine.isCovered(by: ledgers, fromElsewhere: pulled.filter { $0.key != 5 }))
    }

    /// Seed 101003: this home's own pending records sit above the other
    /// head's fold (it wrote them after the homes parted, and its head
    /// after them waited on the take-in). They are this book's chain, not
    /// the other home's: the union's head folds them, and only the writes
    /// the server acknowledged are named (tag 6's was refused, and is
    /// still held here).
    @Test func thisHomesOwnPendingRecordsAboveTheOtherHeadDoNotStopIt() throws {
        var (mine, _) = try Self.written([1: 10], at: 100)
        let sent: [LedgerBook.Write] = [
            .init(tag: 5, fields: ["deleted": Self.stamp(150)]), .init(tag: 6, fields: ["deleted": Self.stamp(151)]),
        ]
        let made = mine.pending(for: sent) { Self.stamp(160) }
        let records = try #require(made)
        mine.answered(acknowledging: [sent[0]])
        var (_, theirs) = try Self.written([3: 21], at: 140)
        for (slot, record) in records { theirs.pending[slot] = .init(record, stamp: Self.held(160)) }
        let registers: [UInt64: [String: HLCTimestamp]] = [
            3: ["deleted": Self.held(21)], 5: ["deleted": Self.held(150)], 6: ["deleted": Self.held(151)],
        ]
        var union = mine
        #expect(union.takeIn(theirs, held: { registers[$0] }) == nil)
        #expect(Set(union.entries.keys) == [1, 3, 5])
        let request = try #require(try union.ledgerRequest(at: Self.stamp(300)) { _ in 9 })
        #expect(request.head.folded == mine.chain.last, "the union's head folds this home's own chain")
        // Another record in that slot, newer than this book wrote there, is the other home's;
        // so is an older one built on another head.
        let slot = try #require(records.last?.slot)
        theirs.pending[slot]?.stamp = Self.held(170)
        union = mine
        #expect(union.takeIn(theirs, held: { registers[$0] })?.contains("slot \(slot)") == true)
        theirs.pending[slot] = .init(
            Ledger.Pending(base: Self.stamp(140), previous: nil, entries: []), stamp: Self.held(155))
        union = mine
        #expect(union.takeIn(theirs, held: { registers[$0] })?.contains("slot \(slot)") == true)
    }

    /// Seed 3405: this home's head, folding its own pending record, lost to
    /// the other home's newer head (stamped higher, it wins the head's key
    /// everywhere), which folds less. That record is held above the
    /// winning head's fold, and is this home's still: it must not stop the
    /// take-in, or no home of the id ever mends its ledger.
    @Test func aRecordFoldedByThisHomesHeadThatLostIsStillThisHomes() throws {
        var (mine, _) = try Self.written([1: 10], at: 100)
        let first = LedgerBook.Write(tag: 5, fields: ["deleted": Self.stamp(150)])
        let folded = try #require(mine.pending(for: [first]) { Self.stamp(160) })
        mine.answered(acknowledging: [first])
        #expect(try mine.ledgerRequest(at: Self.stamp(200)) { _ in 8 } != nil)
        mine.confirmed()
        let second = LedgerBook.Write(tag: 6, fields: ["deleted": Self.stamp(250)])
        let chained = try #require(mine.pending(for: [second]) { Self.stamp(260) })
        mine.answered(acknowledging: [second])
        let slot = try #require(folded.first?.slot)
        #expect(mine.foldedChains.map(\.links) == [[Ledger.Link(slot: slot, stamp: Self.stamp(160))]])
        #expect(try LedgerBookSavingTests.reread(mine) == mine, "the folded chain is kept")
        // The other home's head, at 300, folds neither.
        var (_, theirs) = try Self.written([3: 21], at: 300)
        for (slot, record) in folded { theirs.pending[slot] = .init(record, stamp: Self.held(160)) }
        for (slot, record) in chained { theirs.pending[slot] = .init(record, stamp: Self.held(260)) }
        let registers: [UInt64: [String: HLCTimestamp]] = [
            3: ["deleted": Self.held(21)], 5: ["deleted": Self.held(150)], 6: ["deleted": Self.held(250)],
        ]
        var union = mine
        #expect(union.takeIn(theirs, held: { registers[$0] }) == nil)
        #expect(Set(union.entries.keys) == [1, 3, 5, 6])
        let request = try #require(try union.ledgerRequest(at: Self.stamp(400)) { _ in 9 })
        #expect(request.head.folded == mine.chain.last, "the union's head folds both of this home's records")
        // A record in that slot built on another head is the other home's.
        theirs.pending[slot] = .init(
            Ledger.Pending(base: Self.stamp(140), previous: nil, entries: []), stamp: Self.held(155))
        union = mine
        #expect(union.takeIn(theirs, held: { registers[$0] })?.contains("slot \(slot)") == true)
    }

    /// A chain kept through an adoption was built on this book's earlier
    /// head: its records are still this home's (an outside review found
    /// the take-in stopped on them), and the book keeps that base.
    @Test func aChainKeptThroughAnAdoptionIsStillThisHomes() throws {
        var (mine, _) = try Self.written([1: 10], at: 100)
        let write = LedgerBook.Write(tag: 5, fields: ["deleted": Self.stamp(150)])
        let records = try #require(mine.pending(for: [write]) { Self.stamp(160) })
        mine.answered(acknowledging: [write])
        // The other home's ledger names both writes, its head folding nothing: adopted, the chain kept.
        let (_, covering) = try Self.written([1: 10, 5: 150], at: 200)
        #expect(mine.isCovered(by: covering))
        mine.adopt(covering)
        #expect(mine.headStamp == Self.stamp(200) && mine.chainBase == Self.stamp(100) && mine.chain.count == 1)
        let rows = mine.entries.values.map { (bytes: LedgerBook.entryBytes($0), changed: false) }
        let reread = try LedgerBook(device: "laptop", state: mine.stateBytes, entries: rows) { _ in 7 }
        #expect(reread.chainBase == mine.chainBase && reread.chain == mine.chain)
        // A newer head of the other home, this home's record above its fold.
        var (_, newer) = try Self.written([1: 10, 5: 150, 3: 21], at: 300)
        for (slot, record) in records { newer.pending[slot] = .init(record, stamp: Self.held(160)) }
        let registers: [UInt64: [String: HLCTimestamp]] = [
            1: ["deleted": Self.held(10)], 3: ["deleted": Self.held(21)], 5: ["deleted": Self.held(150)],
        ]
        var union = mine
        #expect(union.takeIn(newer, held: { registers[$0] }) == nil)
        #expect(union.chain == mine.chain)
    }

    @Test func aPendingRecordTheOtherHeadDidNotFoldStopsIt() throws {
        let (mine, _) = try Self.written([1: 10], at: 100)
        var (_, theirs) = try Self.written([3: 21], at: 200)
        theirs.pending[4] = .init(
            Ledger.Pending(base: Self.stamp(200), previous: nil, entries: []), stamp: Self.held(250))
        var union = mine
        let why = union.takeIn(theirs, held: { _ in nil })
        #expect(why?.contains("slot 4") == true, "\(String(describing: why))")
        #expect(union == mine, "nothing taken")
    }
}
