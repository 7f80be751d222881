import JSON
import SyncCore
import Testing

/// Checks 0–3 on one device's ledger, from tables: an honest server's state
/// passes, and each thing a server can leave out fails by name.
@Suite struct LedgerCheckTests {
    typealias Held = LedgerCheck.Held
    static let device = "laptop"
    static func stamp(_ wall: Int64) -> HLCTimestamp { HLCTimestamp(wallMillis: wall, counter: 0, device: device) }
    static func ledgerStamp(_ wall: Int64) -> Ledger.Stamp { Ledger.Stamp(stamp(wall)) }
    static let deleted = Ledger.Group.bit(of: "deleted")!
    static let made = Ledger.Group.bit(of: "pattern")! | Ledger.Group.bit(of: "browser")!

    /// A hash of the shards in use standing in for the SHA-256 the client uses.
    static func hash(_ shards: [(index: Int, shard: Held<Ledger.Shard>)]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for (index, shard) in shards {
            for byte in [UInt8(index)] + shard.value.bytes + Array(shard.stamp.description.utf8) {
                hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
            }
        }
        return hash
    }

    /// The laptop made rule 0x11 at 100 and deleted it at 200 (folded into
    /// shard 0 by the head at 300), then made rule 0x22 at 400 (pending slot 0,
    /// written at 410) and rule 0x33 at 500 (pending slot 1, written at 510).
    struct World {
        var ledgers: LedgerCheck.Ledgers
        var registers: [UInt64: LedgerCheck.Register]
        var newest: HLCTimestamp? = LedgerCheckTests.stamp(500)

        init() {
            let shard = Ledger.Shard(
                index: 0, shardCount: 1,
                entries: [
                    .init(
                        tag: 0x11,
                        groups: [
                            .init(known: made, stamp: ledgerStamp(100)), .init(known: deleted, stamp: ledgerStamp(200)),
                        ])
                ])
            let heldShard = Held(shard, stamp: stamp(300))
            let head = Ledger.Head(
                newest: ledgerStamp(200), folded: .init(slot: 15, stamp: ledgerStamp(210)), shardCount: 1,
                entryCount: 1, shardsHash: LedgerCheckTests.hash([(0, heldShard)]))
            let first = Ledger.Pending(
                base: ledgerStamp(300), previous: nil, newest: ledgerStamp(400),
                entries: [.init(tag: 0x22, groups: [.init(known: made, stamp: ledgerStamp(400))])])
            let second = Ledger.Pending(
                base: ledgerStamp(300), previous: .init(slot: 0, stamp: ledgerStamp(410)), newest: ledgerStamp(500),
                entries: [.init(tag: 0x33, groups: [.init(known: made, stamp: ledgerStamp(500))])])
            ledgers = .init(
                head: Held(head, stamp: stamp(300)), shards: [0: heldShard],
                pending: [0: Held(first, stamp: stamp(410)), 1: Held(second, stamp: stamp(510))])
            registers = [
                0x11: .applied(["pattern": stamp(100), "browser": stamp(100), "deleted": stamp(200)]),
                0x22: .applied(["pattern": stamp(400), "browser": stamp(400)]),
                0x33: .applied(["pattern": stamp(500), "browser": stamp(500)]),
            ]
        }

        var failures: [LedgerCheck.Failure] {
            LedgerCheck.failures(
                device: LedgerCheckTests.device, ledgers: ledgers, register: { registers[$0] },
                newestRegister: newest, shardsHash: LedgerCheckTests.hash)
        }
    }

    @Test func anHonestServersStatePasses() {
        #expect(World().failures.isEmpty)
        // Overwritten since by another device (newer stamps): still met.
        var world = World()
        let other = HLCTimestamp(wallMillis: 900, counter: 0, device: "desktop")
        world.registers[0x22] = .applied(["pattern": other, "browser": other, "deleted": other])
        #expect(world.failures.isEmpty)
        // A pending record the head already folded, relayed again after a restore: ignored.
        world.ledgers.pending[15] = Held(
            Ledger.Pending(base: nil, previous: nil, entries: []), stamp: LedgerCheckTests.stamp(210))
        #expect(world.failures.isEmpty)
        // A device that never wrote anything here and has no ledger: nothing to say.
        #expect(
            LedgerCheck.failures(
                device: "phone", ledgers: .init(), register: { _ in nil }, newestRegister: nil, shardsHash: Self.hash
            ).isEmpty)
    }

    /// A check that reads only some entries (a shard not written since a
    /// check it passed): what it leaves out is taken as met, what it reads
    /// fails as always, a pending record's entries are always read, and a
    /// tag named is read in any shard.
    @Test func aCheckReadsOnlyTheEntriesItIsGiven() {
        var world = World()
        world.registers[0x11] = .applied(["pattern": Self.stamp(100), "browser": Self.stamp(100)])
        world.registers[0x22] = nil
        func failures(_ reading: LedgerCheck.Reading?) -> [LedgerCheck.Failure] {
            LedgerCheck.failures(
                device: Self.device, ledgers: world.ledgers, register: { world.registers[$0] },
                newestRegister: world.newest, shardsHash: Self.hash, reading: reading)
        }
        let missing = LedgerCheck.Failure.unmet(
            tag: 0x22, fields: ["pattern", "browser"], stamp: Self.stamp(400), setAside: false)
        let deletion = LedgerCheck.Failure.unmet(
            tag: 0x11, fields: ["deleted"], stamp: Self.stamp(200), setAside: false)
        #expect(failures(.init(shards: [])) == [missing], "shard 0 left out, its deletion taken as met")
        #expect(failures(.init(shards: [0])) == [deletion, missing])
        #expect(failures(.init(shards: [], tags: [0x11])) == [deletion, missing], "a tag named is read in any shard")
        #expect(failures(.init(shards: [], tags: [0x99])) == [missing])
        #expect(failures(nil) == [deletion, missing], "all of it")
        #expect(world.failures == failures(nil))
    }

    /// The identity under which a device's shard entries were checked
    /// changes with what gives them their meaning, and only with that.
    @Test func aHeadsIdentityFollowsTheNamesItsEntriesUse() {
        let head = World().ledgers.head!.value
        var other = head
        other.entryCount += 1
        other.newest = Self.ledgerStamp(999)
        #expect(LedgerCheck.identity(of: other) == LedgerCheck.identity(of: head), "a new fold, the same meaning")
        for change in [
            { (head: inout Ledger.Head) in head.ids.append("desktop") },
            { (head: inout Ledger.Head) in head.fieldNames.append("note") },
            { (head: inout Ledger.Head) in head.shardCount = 2 },
        ] {
            var changed = head
            change(&changed)
            #expect(LedgerCheck.identity(of: changed) != LedgerCheck.identity(of: head))
        }
        #expect(LedgerCheck.identity(of: nil) != LedgerCheck.identity(of: head))
    }

    @Test func aDeletionWithheldFailsItsOwnField() {
        var world = World()
        // The rule is shown as it was made, its deletion left out.
        world.registers[0x11] = .applied(["pattern": Self.stamp(100), "browser": Self.stamp(100)])
        #expect(world.failures == [.unmet(tag: 0x11, fields: ["deleted"], stamp: Self.stamp(200), setAside: false)])
        // Another device edited the pattern since: the deletion is still missing.
        let other = HLCTimestamp(wallMillis: 900, counter: 0, device: "desktop")
        world.registers[0x11] = .applied(["pattern": other, "browser": Self.stamp(100)])
        #expect(world.failures == [.unmet(tag: 0x11, fields: ["deleted"], stamp: Self.stamp(200), setAside: false)])
    }

    @Test func aRecordWithheldOrSetAsideMeetsNoEntry() {
        var world = World()
        world.registers[0x33] = nil
        #expect(
            world.failures == [
                .unmet(tag: 0x33, fields: ["pattern", "browser"], stamp: Self.stamp(500), setAside: false)
            ])
        world.registers[0x33] = .setAside
        #expect(
            world.failures == [
                .unmet(tag: 0x33, fields: ["pattern", "browser"], stamp: Self.stamp(500), setAside: true)
            ])
    }

    @Test func aPendingRecordWithheldBreaksTheChain() {
        var world = World()
        // The first pending record (and its rule) withheld: the second follows nothing held.
        world.ledgers.pending[0] = nil
        world.registers[0x22] = nil
        #expect(
            world.failures == [.brokenChain(slot: 1, reason: "follows a pending record that is not held")])
        // The newest pending record withheld too: its rule's register is newer than the ledger.
        world = World()
        world.ledgers.pending[1] = nil
        #expect(world.failures == [.writtenPastLedger(newest: Self.stamp(500), ledger: Self.stamp(400))])
    }

    @Test func aNewerHeadWithheldBreaksTheChain() {
        var world = World()
        var older = world.ledgers.head!.value
        older.folded = nil
        // An older head (written at 250) shown in place of the one at 300.
        world.ledgers.head = Held(older, stamp: Self.stamp(250))
        let failures = world.failures
        #expect(
            failures.contains(
                .brokenChain(slot: 0, reason: "builds on a head written at \(Self.ledgerStamp(300)), not the one held"))
        )
    }

    @Test func shardsNotAsTheHeadCountsThemFail() {
        var world = World()
        world.ledgers.shards = [:]
        world.registers[0x11] = nil
        #expect(world.failures == [.shardsDiffer(reason: "0 of 1 are not held")])
        // An older shard (before the deletion was folded) in place of the newer one.
        world = World()
        var shard = world.ledgers.shards[0]!
        shard.value.entries[0].groups.removeLast()
        shard.stamp = Self.stamp(150)
        world.ledgers.shards[0] = shard
        #expect(world.failures == [.shardsDiffer(reason: "are not the ones the head sums up")])
    }

    @Test func aDeviceWritingPastOrWithoutALedgerIsNamed() {
        var world = World()
        world.newest = Self.stamp(700)
        #expect(world.failures == [.writtenPastLedger(newest: Self.stamp(700), ledger: Self.stamp(500))])
        let none = LedgerCheck.failures(
            device: Self.device, ledgers: .init(), register: { _ in nil }, newestRegister: Self.stamp(5),
            shardsHash: Self.hash)
        #expect(none == [.writtenPastLedger(newest: Self.stamp(5), ledger: nil)])
        #expect(
            none.first?.description
                == "it wrote at \(Timestamp.iso8601(millis: Self.stamp(5).wallMillis)) and has no ledger here")
    }
}
