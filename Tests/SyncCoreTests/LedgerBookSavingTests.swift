import SyncCore
import TestSupport
import Testing

/// A device's ledger book as its replica keeps it: read back, it is the
/// book that was kept, a request made and not confirmed included; bytes it
/// did not write are refused.
@Suite struct LedgerBookSavingTests {
    typealias Stamp = Ledger.Stamp
    static func stamp(_ wall: Int64, _ counter: UInt32 = 0) -> Stamp { Stamp(wallMillis: wall, counter: counter) }
    static func hash(_ shards: [(index: Int, shard: LedgerCheck.Held<Ledger.Shard>)]) -> UInt64 {
        shards.reduce(17) { $0 &* 31 &+ UInt64($1.index) &+ UInt64($1.shard.value.entries.count) }
    }

    /// The book as kept: its state and every entry's row, as changed.
    static func reread(_ book: LedgerBook) throws -> LedgerBook {
        let rows = book.entries.values.sorted { $0.tag < $1.tag }.map {
            (bytes: LedgerBook.entryBytes($0), changed: book.changedTags.contains($0.tag))
        }
        return try LedgerBook(device: book.device, state: book.stateBytes, entries: rows, shardsHash: hash)
    }

    @Test func aBookReadBackIsTheBookKeptAtEveryStep() throws {
        var random = SeededRandom.fromEnvironment(fallback: 6262)
        print("LedgerBookSavingTests seed \(random.seed)")
        var book = LedgerBook(device: "laptop")
        var wall: Int64 = 1_000
        func next() -> Stamp {
            wall += 1
            return Self.stamp(wall, UInt32(random.next() % 3))
        }
        #expect(try Self.reread(book) == book, "an empty book")
        let names = ["pattern", "browser", "deleted", "note", "extra", "value"]
        for round in 0..<30 {
            let writes = (0..<Int(random.next() % 90)).map { _ in
                LedgerBook.Write(
                    tag: random.next() % 400,
                    fields: Dictionary(
                        uniqueKeysWithValues: names.filter { _ in random.next() % 2 == 0 }.map { ($0, next()) }))
            }
            let sent = book.pending(for: writes, stamps: next)
            if sent == nil {
                // The chain is full, or a request waits for its confirmation.
                let request = try book.ledgerRequest(at: next(), shardsHash: Self.hash)
                #expect(request != nil)
                let kept = try Self.reread(book)
                #expect(kept == book, "round \(round): a request made and not confirmed")
                book.confirmed()
                #expect(try Self.reread(book) == book, "round \(round): confirmed")
                continue
            }
            // The answer comes (a refusal now and then); the book is kept then.
            book.answered(acknowledging: writes.filter { _ in random.next() % 7 != 0 })
            #expect(try Self.reread(book) == book, "round \(round): answered")
            if random.next() % 4 == 0, let request = try book.ledgerRequest(at: next(), shardsHash: Self.hash) {
                var kept = try Self.reread(book)
                #expect(kept == book, "round \(round): waiting")
                // A lost answer: the book read back makes the same request.
                let again = try kept.ledgerRequest(at: next(), shardsHash: Self.hash)
                #expect(again == request)
                book.confirmed()
            }
        }
        #expect(!book.entries.isEmpty && book.headStamp != nil)
    }

    /// Inputs the fuzz target found: each is refused, or reads back as itself.
    @Test(arguments: [
        "QgEAAAAAAAABAAABoijuMCUAAAEAAAAAAAABAAMBAAABoijuMCUAAAADAAEAAAAAAAABAAF0egAAACGiKO41JQAAAAM="
    ])
    func aFuzzedStateIsRefusedOrReadsBackAsItself(_ base64: String) throws {
        let bytes = try #require(Self.base64(base64))
        let half = bytes.count / 2
        for (state, rows) in [(bytes, []), (Array(bytes[..<half]), [(bytes: Array(bytes[half...]), changed: true)])] {
            guard let book = try? LedgerBook(device: "fuzz", state: state, entries: rows, shardsHash: Self.hash)
            else { continue }
            #expect(book.stateBytes == state)
        }
    }

    static func base64(_ text: String) -> [UInt8]? {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var bits = 0
        var value = 0
        var output: [UInt8] = []
        for byte in text.utf8 where byte != UInt8(ascii: "=") {
            guard let digit = alphabet.firstIndex(of: byte) else { return nil }
            value = value << 6 | digit
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(value >> bits & 0xFF))
            }
        }
        return output
    }

    /// `count` links as a book's state packs them, in slots 0, 1, …
    static func linkBytes(count: Int) -> [UInt8] {
        (0..<count).flatMap { slot -> [UInt8] in
            // Present, the slot, the stamp's time (8 bytes) and counter (4), big-endian.
            let wall = UInt64(100 + slot)
            return [1, UInt8(slot % Ledger.pendingSlots)] + (0..<8).reversed().map { UInt8(wall >> (8 * $0) & 0xFF) }
                + [0, 0, 0, 0]
        }
    }

    @Test func bytesItDidNotWriteAreRefused() throws {
        var book = LedgerBook(device: "laptop")
        book.fold([.init(tag: 5, fields: ["deleted": Self.stamp(1)])])
        let state = book.stateBytes
        let row = LedgerBook.entryBytes(try #require(book.entries[5]))
        for (damaged, rows) in [
            (Array(state.dropLast()), [(bytes: row, changed: true)]),
            (state + [0], [(bytes: row, changed: true)]),
            // Folded chains said to follow, and none; one of no links; seventeen links.
            (state + [0, 0], [(bytes: row, changed: true)]),
            (state + [0, 1, 0, 0, 0], [(bytes: row, changed: true)]),
            (state + [0, 1, 0, 0, 17] + Self.linkBytes(count: 17), [(bytes: row, changed: true)]),
            ([UInt8(ascii: "S")] + state.dropFirst(), [(bytes: row, changed: true)]),
            (state, [(bytes: Array(row.dropLast()), changed: true)]),
            (
                state,
                [
                    (
                        bytes: Ledger.Shard(
                            index: 0, shardCount: 1,
                            entries: [
                                .init(tag: 5, groups: [.init(known: 1, stamp: Self.stamp(1))]),
                                .init(tag: 6, groups: [.init(known: 1, stamp: Self.stamp(1))]),
                            ]
                        ).bytes, changed: true
                    )
                ]
            ),
            // One entry, packed as another shard than the one a row is
            // written as (found by FuzzLedger: it read, and wrote back otherwise).
            (
                state,
                [
                    (
                        bytes: Ledger.Shard(
                            index: 0, shardCount: 2,
                            entries: [.init(tag: 6, groups: [.init(known: 1, stamp: Self.stamp(1))])]
                        ).bytes, changed: true
                    )
                ]
            ),
        ] {
            #expect(throws: Ledger.Problem.self) {
                _ = try LedgerBook(device: "laptop", state: damaged, entries: rows, shardsHash: Self.hash)
            }
        }
    }
}
