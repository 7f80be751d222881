import SyncCore
import TestSupport
import Testing

/// A device's own ledger as it writes it (``LedgerBook``), and the checks
/// other machines run on what it wrote (``LedgerCheck``): an honest server's
/// copy passes, and a write left out fails by name.
@Suite struct LedgerBookTests {
    typealias Stamp = Ledger.Stamp
    static let device = "laptop"
    static func stamp(_ wall: Int64) -> Stamp { Stamp(wallMillis: wall, counter: 0) }

    @Test func aFieldWrittenAgainLeavesItsOlderGroup() {
        var book = LedgerBook(device: Self.device)
        book.fold([
            .init(tag: 7, fields: ["pattern": Self.stamp(1), "browser": Self.stamp(1), "e2e.key": Self.stamp(1)])
        ])
        book.fold([.init(tag: 7, fields: ["deleted": Self.stamp(2)])])
        book.fold([.init(tag: 7, fields: ["pattern": Self.stamp(3), "note": Self.stamp(3)])])
        // An older write of a field (a retry's, out of order) changes nothing.
        book.fold([.init(tag: 7, fields: ["browser": Self.stamp(0)])])
        let bit = { (name: String) in Ledger.Group.bit(of: name)! }
        #expect(
            book.entries[7]?.groups == [
                .init(known: bit("browser"), stamp: Self.stamp(1)), .init(known: bit("deleted"), stamp: Self.stamp(2)),
                .init(known: bit("pattern"), others: [0], stamp: Self.stamp(3)),
            ])
        #expect(book.fieldNames == ["note"])
        #expect(book.newest == Self.stamp(3))
    }

    @Test func pendingRecordsChainFromTheHeadAndStopAtSixteen() throws {
        var book = LedgerBook(device: Self.device)
        var wall: Int64 = 100
        func next() -> Stamp {
            wall += 1
            return Self.stamp(wall)
        }
        let firstRecords = book.pending(for: [.init(tag: 1, fields: ["deleted": Self.stamp(10)])], stamps: next)
        let first = try #require(firstRecords)
        #expect(first.map(\.slot) == [0] && first[0].record.previous == nil && first[0].record.base == nil)
        let secondRecords = book.pending(for: [.init(tag: 2, fields: ["deleted": Self.stamp(11)])], stamps: next)
        let second = try #require(secondRecords)
        #expect(second[0].slot == 1 && second[0].record.previous == .init(slot: 0, stamp: Self.stamp(101)))
        let early = try book.ledgerRequest(at: Self.stamp(200)) { _ in 42 }
        #expect(early == nil, "batches wait for their answers")
        book.answered(acknowledging: [.init(tag: 1, fields: ["deleted": Self.stamp(10)])])
        book.answered(acknowledging: [.init(tag: 2, fields: ["deleted": Self.stamp(11)])])
        let made = try book.ledgerRequest(at: Self.stamp(200)) { _ in 42 }
        let request = try #require(made)
        #expect(request.folded.map(\.slot) == [0, 1])
        #expect(request.head.folded == .init(slot: 1, stamp: Self.stamp(102)) && request.head.entryCount == 2)
        // Its answer lost: no new batch, and the same request again.
        let waiting = book.pending(for: [.init(tag: 3, fields: ["deleted": Self.stamp(12)])], stamps: next)
        #expect(waiting == nil)
        let again = try book.ledgerRequest(at: Self.stamp(300)) { _ in 0 }
        #expect(again == request)
        book.confirmed()
        // After the head: a new chain, in the next slot, building on it.
        let thirdRecords = book.pending(for: [.init(tag: 3, fields: ["deleted": Self.stamp(12)])], stamps: next)
        let third = try #require(thirdRecords)
        #expect(third[0].slot == 2 && third[0].record.previous == nil && third[0].record.base == Self.stamp(200))
        #expect(third[0].record.newest == Self.stamp(12))
        for index in 0..<15 {
            let records = book.pending(
                for: [.init(tag: UInt64(10 + index), fields: ["deleted": Self.stamp(13)])], stamps: next)
            #expect(records != nil)
        }
        let seventeenth = book.pending(for: [.init(tag: 99, fields: ["deleted": Self.stamp(14)])], stamps: next)
        #expect(seventeenth == nil, "a seventeenth unfolded slot waits for a ledger request")
    }

    /// The newest stamp the book wrote with, and its newest at or before a
    /// wall time (stamps further ahead were refused for the clock, or lost).
    @Test func theBooksLastStampAllAndUpToAWallTime() throws {
        var book = LedgerBook(device: Self.device)
        #expect(book.lastStamp == nil && book.lastStamp(notAfter: .max) == nil)
        var walls: [Int64] = [100, 5_000]
        _ = try #require(
            book.pending(for: [.init(tag: 1, fields: ["deleted": Self.stamp(1)])]) {
                Self.stamp(walls.removeFirst())
            })
        _ = try #require(
            book.pending(for: [.init(tag: 2, fields: ["deleted": Self.stamp(2)])]) {
                Self.stamp(walls.removeFirst())
            })
        #expect(book.lastStamp == Self.stamp(5_000))
        #expect(book.lastStamp(notAfter: 4_999) == Self.stamp(100))
        #expect(book.lastStamp(notAfter: 99) == nil)
    }

    @Test func shardsGrowAndOnlyChangedOnesAreSent() throws {
        var book = LedgerBook(device: Self.device)
        var random = SeededRandom.fromEnvironment(fallback: 5151)
        print("LedgerBookTests.shardsGrow seed \(random.seed)")
        book.fold((0..<65).map { _ in .init(tag: random.next(), fields: ["deleted": Self.stamp(1)]) })
        let growing = try book.ledgerRequest(at: Self.stamp(2)) { _ in 0 }
        let grown = try #require(growing)
        #expect(grown.head.shardCount == 2 && grown.shards.map(\.index) == [0, 1])
        book.confirmed()
        book.fold([.init(tag: 1, fields: ["deleted": Self.stamp(3)])])
        let next = try book.ledgerRequest(at: Self.stamp(4)) { _ in 0 }
        #expect(next?.shards.map(\.index) == [0])
    }

    /// A random history of one device's writes, its ledger as it sends it,
    /// and another machine holding what an honest server serves: the checks
    /// pass. Then one write is left out (its record, or just its deletion),
    /// and the checks name it.
    @Test func whatTheBookWritesTheChecksPassAndAWriteLeftOutFails() throws {
        let seeds = 20
        let first = SeededRandom.fromEnvironment(fallback: 5100).seed
        for seed in first..<first + UInt64(seeds) {
            var random = SeededRandom(seed: seed)
            var book = LedgerBook(device: Self.device)
            var wall: Int64 = 1_000
            func next() -> Stamp {
                wall += 1 + Int64(random.next() % 5)
                return Self.stamp(wall)
            }
            // What the server holds: registers by tag, and ledger records by key.
            var registers: [UInt64: [String: HLCTimestamp]] = [:]
            var ledgers = LedgerCheck.Ledgers()
            let fields = ["pattern", "browser", "priority", "deleted", "colour"]
            let tags = (0..<Int(20 + random.next() % 120)).map { _ in random.next() }
            for _ in 0..<Int(1 + random.next() % 6) {
                // A push of a few batches.
                for _ in 0..<Int(1 + random.next() % 3) {
                    var writes: [LedgerBook.Write] = []
                    for tag in tags.shuffled(using: &random).prefix(Int(1 + random.next() % 40)) {
                        let stamp = next()
                        let written = fields.filter { _ in random.next() % 2 == 0 }
                        guard !written.isEmpty else { continue }
                        writes.append(
                            .init(tag: tag, fields: Dictionary(uniqueKeysWithValues: written.map { ($0, stamp) })))
                    }
                    // Sixteen unfolded slots, or a ledger request unconfirmed:
                    // the device sends its ledger request first (below).
                    guard let pending = book.pending(for: writes, stamps: next) else { break }
                    for write in writes {
                        for (name, stamp) in write.fields {
                            registers[write.tag, default: [:]][name] = stamp.timestamp(device: Self.device)
                        }
                    }
                    for (slot, record) in pending {
                        let link = book.chain.last { $0.slot == slot }!
                        ledgers.pending[slot] = .init(record, stamp: link.stamp.timestamp(device: Self.device))
                    }
                    book.answered(acknowledging: writes)
                }
                // The ledger request, most of the time (a push cut short
                // leaves the chain); committed, its answer sometimes lost
                // (sent again, the same, at the next push).
                if random.next() % 4 != 0, let request = try book.ledgerRequest(at: next(), shardsHash: Self.hash) {
                    let written = request.stamp.timestamp(device: Self.device)
                    for shard in request.shards { ledgers.shards[shard.index] = .init(shard, stamp: written) }
                    ledgers.head = .init(request.head, stamp: written)
                    if random.next() % 5 != 0 { book.confirmed() }
                }
            }
            let newest = registers.values.flatMap(\.values).max()
            func check(_ registers: [UInt64: [String: HLCTimestamp]]) -> [LedgerCheck.Failure] {
                LedgerCheck.failures(
                    device: Self.device, ledgers: ledgers, register: { registers[$0].map { .applied($0) } },
                    newestRegister: newest, shardsHash: Self.hash)
            }
            #expect(check(registers).isEmpty, "seed \(seed): an honest server's copy passes")
            // A record left out.
            let withheld = tags.filter { registers[$0] != nil }.randomElement(using: &random)!
            var missing = registers
            missing[withheld] = nil
            #expect(
                check(missing).contains {
                    if case .unmet(withheld, _, _, false) = $0 { return true } else { return false }
                },
                "seed \(seed): a record left out is named")
            // A deletion left out, the record shown as it was before it.
            if let deleted = tags.first(where: { registers[$0]?["deleted"] != nil }) {
                var undeleted = registers
                undeleted[deleted]?["deleted"] = nil
                #expect(
                    check(undeleted).contains {
                        if case .unmet(deleted, ["deleted"], _, false) = $0 { return true } else { return false }
                    }, "seed \(seed): a deletion left out is named")
            }
        }
    }

    // MARK: Found by the outside review

    static func check(
        _ ledgers: LedgerCheck.Ledgers, _ registers: [UInt64: [String: HLCTimestamp]]
    )
        -> [LedgerCheck.Failure]
    {
        LedgerCheck.failures(
            device: device, ledgers: ledgers, register: { registers[$0].map { .applied($0) } },
            newestRegister: registers.values.flatMap(\.values).max(), shardsHash: hash)
    }
    static func held(_ wall: Int64) -> HLCTimestamp { stamp(wall).timestamp(device: device) }

    /// A push's last batch shown in part (its pending record and a deletion
    /// withheld, a newer write of it shown) fails check 3: a ledger covers
    /// the writes it describes, not the time its records were written.
    @Test func aBatchShownInPartFails() throws {
        var book = LedgerBook(device: Self.device)
        var ledgers = LedgerCheck.Ledgers()
        let firstRequest = try book.ledgerRequest(at: Self.stamp(50), shardsHash: Self.hash)
        let first = try #require(firstRequest)
        for shard in first.shards { ledgers.shards[shard.index] = .init(shard, stamp: Self.held(50)) }
        ledgers.head = .init(first.head, stamp: Self.held(50))
        book.confirmed()
        let made = LedgerBook.Write(tag: 1, fields: ["pattern": Self.stamp(100)])
        let deletion = LedgerBook.Write(tag: 2, fields: ["deleted": Self.stamp(101)])
        let later = LedgerBook.Write(tag: 3, fields: ["pattern": Self.stamp(102)])
        var wall: Int64 = 109
        let oneRecords = book.pending(
            for: [made],
            stamps: {
                wall += 1; return Self.stamp(wall)
            })
        let one = try #require(oneRecords)
        let twoRecords = book.pending(
            for: [deletion, later],
            stamps: {
                wall += 1; return Self.stamp(wall)
            })
        let two = try #require(twoRecords)
        ledgers.pending[one[0].slot] = .init(one[0].record, stamp: Self.held(110))
        var honest = ledgers
        honest.pending[two[0].slot] = .init(two[0].record, stamp: Self.held(111))
        let all: [UInt64: [String: HLCTimestamp]] = [
            1: ["pattern": Self.held(100)], 2: ["deleted": Self.held(101)], 3: ["pattern": Self.held(102)],
        ]
        #expect(Self.check(honest, all).isEmpty)
        var withheld = all
        withheld[2] = nil
        #expect(Self.check(ledgers, withheld) == [.writtenPastLedger(newest: Self.held(102), ledger: Self.held(100))])
    }

    /// A field outside the known ones, named by a pending record before any
    /// head lists it, is met on an honest server.
    @Test func aPendingRecordNamesItsOwnFields() throws {
        var book = LedgerBook(device: Self.device)
        let made = book.pending(for: [.init(tag: 9, fields: ["colour": Self.stamp(100)])], stamps: { Self.stamp(110) })
        let records = try #require(made)
        var ledgers = LedgerCheck.Ledgers()
        ledgers.pending[records[0].slot] = .init(records[0].record, stamp: Self.held(110))
        #expect(records[0].record.fieldNames == ["colour"])
        #expect(Self.check(ledgers, [9: ["colour": Self.held(100)]]).isEmpty)
        #expect(
            Self.check(ledgers, [9: ["colour": Self.held(99)]])
                == [.unmet(tag: 9, fields: ["colour"], stamp: Self.held(100), setAside: false)])
    }

    /// A write of encryption's own fields only makes no entry (an entry of
    /// no group packs to bytes no reader takes).
    @Test func aWriteOfNoCountedFieldMakesNoEntry() throws {
        var book = LedgerBook(device: Self.device)
        book.fold([.init(tag: 5, fields: ["e2e.key": Self.stamp(1)]), .init(tag: 6, fields: [:])])
        #expect(book.entries.isEmpty)
        let made = try book.ledgerRequest(at: Self.stamp(2), shardsHash: Self.hash)
        let request = try #require(made)
        #expect(throws: Never.self) { try Ledger.Shard(bytes: request.shards[0].bytes) }
    }

    /// A hash of the shards in use standing in for the client's SHA-256.
    static func hash(_ shards: [(index: Int, shard: LedgerCheck.Held<Ledger.Shard>)]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for (index, shard) in shards.sorted(by: { $0.index < $1.index }) {
            for byte in [UInt8(index)] + shard.value.bytes + Array(shard.stamp.description.utf8) {
                hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
            }
        }
        return hash
    }
}
