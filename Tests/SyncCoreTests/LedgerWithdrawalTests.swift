import SyncCore
import Testing

/// Withdrawals (Deploy/SECURITY.md, "Writes every holder lost"): their bytes
/// read back as written and nothing else, and a check excuses a withdrawn
/// write only in the very pending record the withdrawal names, unfolded,
/// and only where the write is not held at all.
@Suite struct LedgerWithdrawalTests {
    typealias World = LedgerCheckTests.World
    static let made = LedgerCheckTests.made
    static func ledgerStamp(_ wall: Int64) -> Ledger.Stamp { LedgerCheckTests.ledgerStamp(wall) }
    /// The world's pending slot 1 (rule 0x33 made at 500, written at 510) withdrawn whole.
    static func withdrawal(_ world: World, slot: Int = 1, stamp: Int64 = 510, hash: UInt64? = nil) -> Ledger.Withdrawal
    {
        let pending = world.ledgers.pending[1]!.value
        return Ledger.Withdrawal(
            former: LedgerCheckTests.device,
            records: [
                .init(
                    slot: slot, stamp: ledgerStamp(stamp), hash: hash ?? Self.hash(pending),
                    entries: [.init(tag: 0x33, groups: [.init(known: made, stamp: ledgerStamp(500))])])
            ])
    }
    /// Stands in for the client's SHA-256 (`Ledger.pendingHash`).
    static func hash(_ pending: Ledger.Pending) -> UInt64 {
        pending.bytes.reduce(0xcbf2_9ce4_8422_2325 as UInt64) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }
    static func failures(_ world: World, _ withdrawals: [Ledger.Withdrawal]) -> [LedgerCheck.Failure] {
        var withdrawn: [Int: [Ledger.Entry]] = [:]
        for withdrawal in withdrawals {
            for (slot, entries) in withdrawal.withdrawn(from: world.ledgers.unfolded, hash: hash) {
                withdrawn[slot, default: []] += entries
            }
        }
        return LedgerCheck.failures(
            device: LedgerCheckTests.device, ledgers: world.ledgers, register: { world.registers[$0] },
            newestRegister: world.newest, shardsHash: LedgerCheckTests.hash, withdrawn: withdrawn)
    }

    @Test func aWithdrawalReadsBackAsWritten() throws {
        let withdrawal = Self.withdrawal(World())
        #expect(try Ledger.Withdrawal(bytes: withdrawal.bytes) == withdrawal)
        // One of no records takes an earlier one back.
        let retracted = Ledger.Withdrawal(former: "laptop", records: [])
        #expect(try Ledger.Withdrawal(bytes: retracted.bytes) == retracted)
        var tooMany = Array(retracted.bytes.dropLast())
        tooMany.append(17)
        #expect(throws: Ledger.Problem.self) { try Ledger.Withdrawal(bytes: tooMany) }
        #expect(withdrawal.bytes.first == UInt8(ascii: "W"))
        #expect(Ledger.Key("laptop/withdrawn/15") == .withdrawal(device: "laptop", slot: 15))
        #expect(Ledger.Key.withdrawal(device: "laptop", slot: 3).description == "laptop/withdrawn/3")
        for text in [
            "laptop/withdrawn/16", "laptop/withdrawn/03", "laptop/withdrawn/", "laptop/withdrawn", "/withdrawn/1",
        ] {
            #expect(Ledger.Key(text) == nil, "\(text)")
        }
    }

    @Test func damagedWithdrawalsAreRefusedWithTheReason() {
        let good = Self.withdrawal(World()).bytes
        func reason(_ bytes: [UInt8]) -> String? {
            do {
                _ = try Ledger.Withdrawal(bytes: bytes)
                return nil
            } catch { return error.reason }
        }
        // magic, version, 1 name ("laptop", 6 bytes), the count at 10, a slot at 11, its stamp, hash, entries
        var twoNames = Array(good.prefix(2))
        twoNames += [2, 1, UInt8(ascii: "a"), 1, UInt8(ascii: "b"), 1]
        var slotTooHigh = good
        slotTooHigh[11] = 16
        var twice = good
        twice[10] = 2
        twice += good[11...]
        var empty = Array(good.prefix(11 + 1 + 12 + 8))
        empty += [0, 0]
        let cases: [([UInt8], String)] = [
            (Array(good.dropLast()), "it ends early"),
            (good + [0], "1 bytes follow its end"),
            (twoNames, "names 2 earlier ids"),
            (slotTooHigh, "pending slot 16, not below 16"),
            (twice, "withdrawn from twice"),
            (empty, "named with nothing withdrawn"),
            ([UInt8(ascii: "P")] + good.dropFirst(), "expected a W record"),
        ]
        for (bytes, expected) in cases {
            let found = reason(bytes)
            #expect(found?.contains(expected) == true, "\(expected): \(String(describing: found))")
        }
    }

    /// What is still missing of a withdrawal, when more may not be withdrawn:
    /// its own groups that the new decision names too, and nothing else.
    @Test func aWithdrawalNarrowsToWhatIsStillMissing() {
        let world = World()
        let one = Self.withdrawal(world)
        let other = Ledger.Withdrawal(
            former: one.former,
            records: [
                .init(
                    slot: 1, stamp: Self.ledgerStamp(510), hash: one.records[0].hash,
                    entries: [.init(tag: 0x44, groups: [.init(known: Self.made, stamp: Self.ledgerStamp(505))])])
            ])
        var both = one
        both.records[0].entries.append(other.records[0].entries[0])
        #expect(one.keeping(other).records.isEmpty, "found after all, and something else missing: none kept")
        #expect(one.keeping(both) == one)
        #expect(both.keeping(one) == one)
        var rehashed = one
        rehashed.records[0].hash ^= 1
        #expect(one.keeping(rehashed).records.isEmpty, "another record in the slot")
    }

    /// The honest case: rule 0x33 was lost by every holder, its pending
    /// record survived. Withdrawn, it is excused, and nothing else is.
    @Test func aWithdrawnWriteNotHeldAnywhereIsExcused() {
        var world = World()
        world.registers[0x33] = nil
        let unmet = LedgerCheck.Failure.unmet(
            tag: 0x33, fields: ["pattern", "browser"], stamp: LedgerCheckTests.stamp(500), setAside: false)
        #expect(Self.failures(world, []) == [unmet])
        #expect(Self.failures(world, [Self.withdrawal(world)]).isEmpty)
        // Bound to the record: another slot, stamp or bytes excuse nothing.
        #expect(Self.failures(world, [Self.withdrawal(world, slot: 0)]) == [unmet])
        #expect(Self.failures(world, [Self.withdrawal(world, stamp: 511)]) == [unmet])
        #expect(Self.failures(world, [Self.withdrawal(world, hash: 1)]) == [unmet])
        // Set aside here: something of it was shown, so it still fails.
        world.registers[0x33] = .setAside
        #expect(Self.failures(world, [Self.withdrawal(world)]).count == 1)
    }

    /// A head that folded the pending record makes its entries a shard's:
    /// a withdrawal of them excuses nothing, however it is bound.
    @Test func aWriteAHeadFoldedIsNeverExcused() {
        var world = World()
        let withdrawal = Self.withdrawal(world)
        var head = world.ledgers.head!.value
        head.folded = .init(slot: 1, stamp: Self.ledgerStamp(510))
        world.ledgers.head = .init(head, stamp: LedgerCheckTests.stamp(600))
        world.ledgers.shards[0]!.value.entries.append(
            .init(tag: 0x33, groups: [.init(known: Self.made, stamp: Self.ledgerStamp(500))]))
        world.registers[0x33] = nil
        #expect(world.ledgers.unfolded.isEmpty)
        #expect(
            Self.failures(world, [withdrawal]).contains(
                .unmet(tag: 0x33, fields: ["pattern", "browser"], stamp: LedgerCheckTests.stamp(500), setAside: false)))
    }
}
