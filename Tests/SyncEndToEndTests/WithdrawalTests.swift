import Foundation
import HTTP
import Replica
import SyncClient
import SyncCore
import Synchronization
import TestSupport
import Testing

/// Writes every holder lost (Deploy/SECURITY.md, "Writes every holder
/// lost"): a device's last writes are gone from the server (restored from a
/// backup) and from every machine that held them, while a pending record
/// naming them survived on a machine that never held the writes. The home
/// that made them, restored from an older copy, takes a new id, finds them
/// nowhere and withdraws them; every machine's check of the old id then
/// passes. Before the withdrawal, the honest loss fails every check of it.
@Suite struct WithdrawalTests {
    /// What a home withdraws of its earlier id: of its unfolded pending
    /// records only, the writes it holds nothing of at their stamp or newer,
    /// never one set aside here (something of it was shown), nor one its own
    /// change log shows it wrote (a fork the server forced holds them all).
    @Test func onlyWritesHeldNowhereAndNotMadeHereAreWithdrawn() throws {
        func stamp(_ wall: Int64) -> HLCTimestamp { HLCTimestamp(wallMillis: wall, counter: 0, device: "old") }
        let made = Ledger.Group.bit(of: "pattern")! | Ledger.Group.bit(of: "browser")!
        let deleted = Ledger.Group.bit(of: "deleted")!
        func entry(_ tag: UInt64, _ known: UInt16, _ wall: Int64) -> Ledger.Entry {
            .init(tag: tag, groups: [.init(known: known, stamp: Ledger.Stamp(stamp(wall)))])
        }
        // Folded by the head: its entries are a shard's, never withdrawn.
        let folded = Ledger.Pending(base: nil, previous: nil, entries: [entry(0x01, made, 100)])
        let pending = Ledger.Pending(
            base: nil, previous: .init(slot: 0, stamp: Ledger.Stamp(stamp(110))),
            entries: [
                entry(0x11, made, 200), entry(0x22, made, 200), entry(0x33, deleted, 200), entry(0x44, made, 200),
                entry(0x55, made, 200),
            ])
        let head = Ledger.Head(
            newest: Ledger.Stamp(stamp(100)), folded: .init(slot: 0, stamp: Ledger.Stamp(stamp(110))), shardCount: 1,
            entryCount: 1, shardsHash: 0)
        let ledger = LedgerCheck.Ledgers(
            head: .init(head, stamp: stamp(120)),
            pending: [0: .init(folded, stamp: stamp(110)), 1: .init(pending, stamp: stamp(210))])
        let registers: [UInt64: [String: HLCTimestamp]] = [
            0x22: ["pattern": stamp(200), "browser": stamp(200)], // held: met
            0x33: ["pattern": stamp(50), "browser": stamp(50)], // the rule held, its deletion not
            0x44: ["pattern": stamp(300), "browser": stamp(300)], // overwritten since: met
        ]
        let withdrawal = try #require(
            SyncClient.withdrawable(
                former: "old", ledger: ledger, registers: registers, setAside: [0x55],
                changedHere: [[0x11, 200, 0]]))
        #expect(withdrawal.former == "old")
        #expect(withdrawal.records.count == 1 && withdrawal.records[0].slot == 1)
        #expect(withdrawal.records[0].stamp == Ledger.Stamp(stamp(210)))
        #expect(withdrawal.records[0].hash == Ledger.pendingHash(pending))
        #expect(withdrawal.records[0].entries == [entry(0x33, deleted, 200)])
        // All of it held, or written here: nothing to withdraw.
        #expect(
            SyncClient.withdrawable(
                former: "old", ledger: ledger, registers: registers, setAside: [0x55],
                changedHere: [[0x11, 200, 0], [0x33, 200, 0]]) == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func writesEveryHolderLostAreWithdrawnByTheHomeThatMadeThem(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let (a, b, c) = (try world.machine("a"), try world.machine("b"), try world.machine("c"))
        let e = try world.machine("e")
        try LyingServerTests.rules(a, ["one.example"])
        let key = try KeyChangeTests.shareNewKey(world, from: a, with: [b, c, e])
        try world.sync(b)
        // a's home as a backup holds it now.
        let copyHome = world.directory.file("a-backup")
        try FileManager.default.copyItem(atPath: a.replica.home, toPath: copyHome)
        try LyingServerTests.rules(a, ["two.example"])
        try world.sync(a)
        try world.sync(c)
        try world.sync(e)
        let serverBackup = try world.backupServer()
        try LyingServerTests.rules(a, ["lost.example"])
        try world.sync(a)
        // c pulls the pending record of a's last batch, but neither the
        // rule it names nor the head that folded it (a page cut there).
        let device = a.replica.deviceID
        let hidden = RecordCipher(key).hiddenKey(collection: "rules", key: "lost.example")
        let liar = try LyingServer(
            in: world, rewrite: LyingServerTests.withholding([hidden, "\(device)/head", "\(device)/0"]))
        _ = try liar.serving(world) { try world.sync(c) }
        liar.stop()
        // e holds the rule (not the head either), and goes offline.
        let shardsOnly = try LyingServer(
            in: world, rewrite: LyingServerTests.withholding(["\(device)/head", "\(device)/0"]))
        _ = try shardsOnly.serving(world) { try world.sync(e) }
        shardsOnly.stop()
        #expect(try SyncWorld.rules(e.replica).keys.contains("lost.example"))
        #expect(try c.replica.ledgerRows().contains { $0.key.hasPrefix("\(device)/pending/") })
        #expect(try !SyncWorld.rules(c.replica).keys.contains("lost.example"))

        // Every holder of the rule is restored: the server, then a's home.
        try world.restoreServer(serverBackup)
        try world.sync(c) // relays what the restore lost: the pending record
        try world.sync(b)
        let (heldByB, heldByC) = (try b.replica.ledgerFailures(), try c.replica.ledgerFailures())
        let bHolds = (try SyncWorld.rules(b.replica).keys.sorted(), try b.replica.ledgerRows().map(\.key))
        #expect(
            heldByB.map(\.device) == [device],
            "the honest loss fails b's check: \(heldByB), c: \(heldByC), b: \(bHolds)")
        let restored = SimulatedMachine(
            name: "a", replica: try Replica.open(home: copyHome, now: { a.clock.now() }), token: a.token)
        // It makes no edit: its first sync publishes its new id's name, which is its push.
        let first = try world.sync(restored)
        let newID = try #require(first.newDeviceID, "the restored home takes a new id: \(first)")
        #expect(try restored.replica.formerDeviceIDs().map(\.id) == [device])
        #expect(try restored.replica.ledgerFailures().map(\.device) == [device], "its check of its old id fails")
        let withdrawalKey = Ledger.Key.withdrawal(device: newID, slot: 0).description
        #expect(
            try restored.replica.record(.ledger, key: withdrawalKey) == nil, "nothing withdrawn at the first failure")

        // Its next sync would withdraw it, but the request is dropped: one of
        // the sync's problems, and not sent again within the hour.
        let sends = Mutex(0)
        let dropping = try LyingServer(
            in: world,
            answering: { request in
                guard request.target == "/v1/relay",
                    String(decoding: request.body, as: UTF8.self).contains("/withdrawn/")
                else { return nil }
                sends.withLock { $0 += 1 }
                return HTTPResponse(status: 0)
            }, rewrite: { _, _, _ in nil })
        let dropped = try dropping.serving(world) { try world.sync(restored) }
        #expect(dropped.problems.contains { $0.contains("not sent (tried again in an hour)") }, "\(dropped.problems)")
        let tried = sends.withLock { $0 }
        _ = try dropping.serving(world) { try world.sync(restored) }
        dropping.stop()
        #expect(tried > 0 && sends.withLock { $0 } == tried, "not again within the hour")
        #expect(try restored.replica.record(.ledger, key: withdrawalKey) == nil)
        try restored.replica.noteWithdrawalSetback(.failed, slot: 0, at: restored.replica.currentMillis - 3_600_001)

        // An hour later (as if): still missing after asking again, so withdrawn.
        let second = try world.sync(restored)
        #expect(second.problems.isEmpty, "\(second.problems)")
        #expect(try restored.replica.withdrawalSetback(.failed, slot: 0) == nil, "taken: the setback is over")
        let kept = try #require(try restored.replica.ledgerRows().first { $0.key == withdrawalKey })
        let withdrawal = try #require(SyncClient.withdrawal(kept))
        #expect(withdrawal.former == device)
        let lostTag = RecordCipher(key).tag(collection: "rules", key: "lost.example")
        #expect(withdrawal.records.flatMap(\.entries).map(\.tag) == [lostTag], "only the lost rule")
        // b pulls as a brsync older than withdrawals did: the server sends
        // it none, and its cursor passes the withdrawal. When a brsync that
        // reads them first syncs that home, it asks for them once.
        let older = try LyingServer(in: world, rewrite: LyingServerTests.withholding([withdrawalKey]))
        _ = try older.serving(world) { try world.sync(b) }
        older.stop()
        #expect(try b.replica.ledgerFailures().map(\.device) == [device], "its cursor passed the withdrawal")
        try b.replica.database.run("DELETE FROM meta WHERE key = 'withdrawals_read'")
        #expect(try b.replica.withdrawalsMayBeMissed())
        for machine in [b, c] {
            let summary = try world.sync(machine)
            #expect(try machine.replica.ledgerFailures().isEmpty, "\(machine.name): \(summary.problems)")
        }
        #expect(try b.replica.ledgerRows().contains { $0.key == withdrawalKey } && !b.replica.withdrawalsMayBeMissed())
        // Its own check passes from its next pull; nothing is sent again.
        let third = try world.sync(restored)
        #expect(third.problems.isEmpty && third.pushed == 0, "\(third)")
        #expect(try restored.replica.ledgerFailures().isEmpty)
        #expect(try restored.replica.ledgerRows().first { $0.key == withdrawalKey } == kept)

        // e comes back and sends the server what it lacks, the rule among
        // it: found after all, the withdrawal is taken back (none left).
        try world.sync(e)
        let found = try world.sync(restored)
        #expect(found.problems.isEmpty, "\(found.problems)")
        #expect(try SyncWorld.rules(restored.replica).keys.contains("lost.example"))
        let taken = try #require(try restored.replica.ledgerRows().first { $0.key == withdrawalKey })
        #expect(try #require(SyncClient.withdrawal(taken)).records.isEmpty, "retracted")
        for machine in [b, c, e, restored] {
            let summary = try world.sync(machine)
            #expect(try machine.replica.ledgerFailures().isEmpty, "\(machine.name): \(summary.problems)")
        }
    }
}
