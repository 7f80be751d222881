import BrsyncServer
import Foundation
import JSON
import Model
import Net
import Replica
import SyncClient
import SyncCore
import SystemServices
import TestSupport
import Testing

/// "No machine is ever stranded" and "no acknowledged write is lost", each
/// scenario as a user meets it.
@Suite(.serialized) struct StrandingTests {
    /// A pull fetches (and opens) its next page while it applies the one
    /// before: what arrives, and what is counted, is what a pull page by page
    /// gets, readable and end-to-end encrypted.
    @Test(arguments: [false, true]) func aPullThatFetchesAheadGetsWhatPageByPageGets(_ encrypted: Bool) throws {
        let world = try SyncWorld()
        let key = encrypted ? AccountKey.generate() : nil
        func client(_ machine: SimulatedMachine) throws -> SyncClient {
            var options = SyncClient.Options()
            options.pullLimit = 7
            return try SyncClient(
                replica: machine.replica, remote: try RemoteURL(parsing: "https://127.0.0.1:\(world.port)"),
                token: machine.token, caFile: world.caFile, accountKey: key, options: options)
        }
        let writer = try world.machine("writer")
        _ = try writer.replica.addBrowser(id: "firefox", name: nil, format: nil, scheme: nil, exec: nil)
        for index in 0..<60 {
            try writer.replica.addRule(pattern: "site\(index).example", browser: "firefox", priority: index % 5)
        }
        _ = try writer.replica.removeRule(pattern: "site3.example")
        _ = try client(writer).sync()
        let ahead = try world.machine("ahead")
        let stepwise = try world.machine("stepwise")
        let pulled = try client(ahead).pull()
        let stepper = try client(stepwise)
        if encrypted { try stepper.push() } // takes the key on (a page alone does not)
        while try stepper.pullPage() {}
        #expect(pulled.problems.isEmpty, "\(pulled.problems)")
        #expect(try SyncWorld.state(ahead.replica) == SyncWorld.state(writer.replica))
        #expect(try SyncWorld.state(stepwise.replica) == SyncWorld.state(writer.replica))
        #expect(try SyncWorld.rules(ahead.replica).count == 59)
        // 60 rules, a browser and the writer's name (and, encrypted, the
        // writer's ledger), in pages of 7, each asked for once (and,
        // encrypted, the one request that checks the account's key).
        let ledgers = try ahead.replica.records(.ledger).count
        #expect(encrypted == (ledgers > 0))
        #expect(
            pulled.pulled == 62 + ledgers && pulled.requests == (62 + ledgers + 6) / 7 + (encrypted ? 1 : 0),
            "\(pulled)")
        // (Encrypted, the page-by-page machine pushed its name first, and its
        // ledger: records more.)
        let own = try stepwise.replica.records(.ledger).filter { $0.key.hasPrefix("\(stepwise.replica.deviceID)/") }
        #expect(
            try ahead.replica.syncState().pullCursor + Int64(encrypted ? 1 + own.count : 0)
                == stepwise.replica.syncState().pullCursor)
    }

    /// A clock two hours fast before first contact: the edits are re-stamped
    /// from the server's time and sync; an edit made elsewhere afterwards wins.
    @Test(arguments: StoreKind.allCases) func aFastClockBeforeFirstContactStillSyncs(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let fast = try world.machine("fast", skew: 2 * 3_600_000)
        let other = try world.machine("other")
        _ = try fast.replica.addBrowser(id: "firefox", name: nil, format: nil, scheme: nil, exec: nil)
        try fast.replica.addRule(pattern: "github.com", browser: "firefox", priority: nil)
        let summary = try world.sync(fast)
        #expect(summary.restamped == 2 && summary.pushed == 2, "\(summary)")
        #expect(try fast.replica.unpushedCount() == 0)
        try world.sync(other)
        #expect(try SyncWorld.rules(other.replica) == ["github.com": "firefox"])
        // The other machine, after seeing it, changes the rule: its edit wins everywhere.
        _ = try other.replica.addBrowser(id: "chrome", name: nil, format: nil, scheme: nil, exec: nil)
        try other.replica.addRule(pattern: "github.com", browser: "chrome", priority: nil)
        try world.sync(other)
        try world.sync(fast)
        #expect(try SyncWorld.rules(fast.replica) == ["github.com": "chrome"])
        // And the fast machine's clock was repaired: its next edit is in the server's time.
        try fast.replica.addRule(pattern: "zoom.us", browser: "firefox", priority: nil)
        #expect(abs(fast.replica.lastStamp.wallMillis - Clock.wallMillis()) < 60_000)
        #expect(try world.sync(fast).restamped == 0)
    }

    /// A clock two hours slow at first contact that NTP later fixes: the
    /// offset is learned again from the next answer, and edits still sync.
    @Test(arguments: StoreKind.allCases) func aClockFixedAfterFirstContactStillSyncs(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let laptop = try world.machine("laptop", skew: -2 * 3_600_000)
        try world.sync(laptop)
        #expect(try laptop.replica.syncState().clockOffsetMilliseconds > 3_500_000)
        // Written when the sync ended: another process opening the home has it.
        let elsewhere = try Replica.open(home: laptop.replica.home)
        #expect(try elsewhere.syncState().clockOffsetMilliseconds > 3_500_000)
        laptop.setSkew(0) // NTP fixed it; the offset learned still says +2 h
        _ = try laptop.replica.addBrowser(id: "firefox", name: nil, format: nil, scheme: nil, exec: nil)
        let summary = try world.sync(laptop)
        #expect(summary.pushed == 1 && summary.restamped == 1, "\(summary)")
        #expect(abs(try laptop.replica.syncState().clockOffsetMilliseconds) < 60_000)
        // A forward jump of 30 minutes after contact: the same repair.
        laptop.setSkew(30 * 60_000)
        try world.sync(laptop)
        try laptop.replica.addRule(pattern: "a.example", browser: "firefox", priority: nil)
        laptop.setSkew(0)
        #expect(try world.sync(laptop).pushed == 1)
    }

    /// b edits a rule in step with the server, then its clock jumps two hours
    /// ahead and it edits another; meanwhile a edits the first rule later.
    /// The server refuses b's push for the fast stamp: only the fast edit
    /// is stamped again, so a's later edit of the first rule still wins.
    @Test(arguments: StoreKind.allCases) func aRefusedPushRestampsOnlyWhatRanAhead(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        for machine in [a, b] {
            _ = try machine.replica.addBrowser(id: "firefox", name: nil, format: nil, scheme: nil, exec: nil)
        }
        try a.replica.addRule(pattern: "shared.example", browser: "firefox", priority: 1)
        for machine in [a, b, a] { try world.sync(machine) }
        try b.replica.addRule(pattern: "shared.example", browser: "firefox", priority: 10)
        usleep(5_000) // a's edit is later by the clock, not only by the counter
        try a.replica.addRule(pattern: "shared.example", browser: "firefox", priority: 20)
        try world.sync(a)
        b.setSkew(2 * 3_600_000)
        try b.replica.addRule(pattern: "fast.example", browser: "firefox", priority: nil)
        let summary = try world.sync(b)
        #expect(summary.restamped == 1, "\(summary)")
        try world.sync(a)
        for machine in [a, b] {
            #expect(try machine.replica.rule(pattern: "shared.example")?.priority == 20, "\(machine.name)")
            #expect(try machine.replica.rule(pattern: "fast.example") != nil, "\(machine.name)")
        }
        #expect(try b.replica.conflicts(limit: 10).contains { $0.key == "shared.example" && $0.field == "priority" })
    }

    /// Two processes of one replica: a stamp one has seen is never undercut by
    /// an edit of the other, which opened the replica before.
    @Test func theClockIsTheMaximumOfEveryProcess() throws {
        let world = try SyncWorld()
        let laptop = try world.machine("laptop")
        let second = try Replica.open(home: laptop.replica.home)
        // Another machine's edit, pulled by the first process, is 3 minutes ahead.
        let ahead = HLCTimestamp(wallMillis: Clock.wallMillis() + 180_000, counter: 7, device: "elsewhere")
        let pulled = ChangeRecord(
            sequence: 1, collection: .settings, key: "x",
            state: RecordState(
                fields: ["value": StampedValue(.string("a"), stamp: ahead)], versions: VersionVector(["elsewhere": 1])))
        try laptop.replica.applyPulled([pulled], cursor: 1, epoch: "e")
        // The second process edits the same record after: its stamp is higher, so it wins.
        try second.write(.settings, key: "x", changes: ["value": .string("b")])
        #expect(try second.record(.settings, key: "x")?.fields["value"]?.stamp ?? ahead > ahead)
        // And a process whose clock lags cannot lower the persisted high-water mark.
        try laptop.replica.write(.settings, key: "y", changes: ["value": .string("c")])
        let third = try Replica.open(home: laptop.replica.home)
        #expect(third.lastStamp > ahead)
    }

    /// A token issued again, a device revoked and added again, or the replica
    /// moved to another account: the client rewinds or starts over by itself.
    /// A server moved from SQLite to PostgreSQL while machines are in every
    /// state (one has edits it never pushed, one has not pulled another's
    /// edits, one never synced since its first contact): each goes on from
    /// where it was, without a full re-sync, and all end identical with every
    /// edit made before and after the move.
    @Test func aServerMovedToPostgreSQLKeepsEveryMachineWhereItWas() throws {
        let world = try SyncWorld(.sqlite)
        let laptop = try world.machine("laptop")
        let desktop = try world.machine("desktop")
        let tablet = try world.machine("tablet")
        for machine in [laptop, desktop, tablet] {
            _ = try machine.replica.addBrowser(id: "firefox", name: nil, format: nil, scheme: nil, exec: nil)
            try machine.replica.addRule(pattern: "\(machine.name).example", browser: "firefox", priority: nil)
            try world.sync(machine)
        }
        try laptop.replica.addRule(pattern: "pushed-before.example", browser: "firefox", priority: nil)
        try world.sync(laptop) // desktop and tablet have not pulled it
        // never pushed before the move
        try desktop.replica.addRule(pattern: "unpushed.example", browser: "firefox", priority: nil)
        _ = try desktop.replica.removeRule(pattern: "laptop.example") // pulled at its first sync

        try world.moveToPostgres()
        #expect(world.store.kind == .postgres)
        try laptop.replica.addRule(pattern: "after.example", browser: "firefox", priority: nil)
        for _ in 0..<2 {
            for machine in [laptop, desktop, tablet] {
                let summary = try world.sync(machine)
                #expect(
                    !summary.fullResync && summary.relayed == 0 && summary.newDeviceID == nil,
                    "\(machine.name): \(summary)")
            }
        }
        let expected = [
            "desktop.example", "tablet.example", "pushed-before.example", "unpushed.example", "after.example",
        ]
        for machine in [laptop, desktop, tablet] {
            #expect(
                try SyncWorld.rules(machine.replica)
                    == Dictionary(uniqueKeysWithValues: expected.map { ($0, "firefox") }), "\(machine.name)")
        }
        let states = try [laptop, desktop, tablet].map { try SyncWorld.state($0.replica) }
        #expect(states.allSatisfy { $0 == states[0] })
        #expect(try world.freshView() == states[0])
    }

    @Test(arguments: StoreKind.allCases) func newTokensAndAccountsNeverStrandAMachine(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let laptop = try world.machine("laptop")
        _ = try laptop.replica.addBrowser(id: "firefox", name: nil, format: nil, scheme: nil, exec: nil)
        try laptop.replica.addRule(pattern: "a.example", browser: "firefox", priority: nil)
        try world.sync(laptop)
        // A new token for the same device.
        let reissued = try world.store.reissueToken(account: "alice", device: "laptop")
        try laptop.replica.addRule(pattern: "b.example", browser: "firefox", priority: nil)
        #expect(try world.sync(laptop, token: reissued).pushed == 1)
        // Revoked, removed and added again under another name.
        try world.store.revokeDevice(account: "alice", name: "laptop")
        let readded = try world.store.addDevice(account: "alice", name: "laptop-again")
        try laptop.replica.addRule(pattern: "c.example", browser: "firefox", priority: nil)
        #expect(try world.sync(laptop, token: readded).pushed == 1)
        // Another account on the same server: everything goes up, the other's rules come down.
        let bob = try world.machine("bob", account: "bob")
        _ = try bob.replica.addBrowser(id: "chrome", name: nil, format: nil, scheme: nil, exec: nil)
        try bob.replica.addRule(pattern: "bob.example", browser: "chrome", priority: nil)
        try world.sync(bob)
        let summary = try world.sync(laptop, token: bob.token)
        #expect(summary.fullResync, "\(summary)")
        #expect(
            try SyncWorld.rules(laptop.replica).keys.sorted() == ["a.example", "b.example", "bob.example", "c.example"])
        try world.sync(bob)
        #expect(
            try SyncWorld.rules(bob.replica).keys.sorted() == ["a.example", "b.example", "bob.example", "c.example"])
    }

    /// A home copied to a second machine (replica and token): both keep
    /// editing; the copy notices, takes a new device id, and nothing either
    /// wrote is lost.
    @Test(arguments: StoreKind.allCases) func aCopiedHomeLosesNothing(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let laptop = try world.machine("laptop")
        _ = try laptop.replica.addBrowser(id: "firefox", name: nil, format: nil, scheme: nil, exec: nil)
        try world.sync(laptop)
        let copyHome = world.directory.file("copy")
        try FileManager.default.copyItem(atPath: laptop.replica.home, toPath: copyHome)
        let copy = try Replica.open(home: copyHome)
        try laptop.replica.addRule(pattern: "original.example", browser: "firefox", priority: nil)
        try copy.addRule(pattern: "copy.example", browser: "firefox", priority: nil)
        try copy.addRule(pattern: "copy2.example", browser: "firefox", priority: nil)
        try world.sync(laptop)
        let copyMachine = SimulatedMachine(name: "copy", replica: copy, token: laptop.token)
        let summary = try world.sync(copyMachine)
        #expect(summary.newDeviceID != nil && copy.deviceID != laptop.replica.deviceID, "\(summary)")
        try world.sync(laptop)
        let expected = ["copy.example": "firefox", "copy2.example": "firefox", "original.example": "firefox"]
        #expect(try SyncWorld.rules(laptop.replica) == expected)
        #expect(try SyncWorld.rules(copy) == expected)
        #expect(try world.freshView().filter { $0.key.hasPrefix("rules/") }.count == 3)
        // Both keep syncing without further trouble.
        try copy.addRule(pattern: "later.example", browser: "firefox", priority: nil)
        #expect(try world.sync(copyMachine).newDeviceID == nil)
    }

    /// A laptop that synced the rule shared.example (priority 1), and a copy of its home.
    static func laptopAndACopy(_ world: SyncWorld) throws -> (laptop: SimulatedMachine, copy: Replica) {
        let laptop = try world.machine("laptop")
        _ = try laptop.replica.addBrowser(id: "firefox", name: nil, format: nil, scheme: nil, exec: nil)
        try laptop.replica.addRule(pattern: "shared.example", browser: "firefox", priority: 1)
        try world.sync(laptop)
        let copyHome = world.directory.file("copy")
        try FileManager.default.copyItem(atPath: laptop.replica.home, toPath: copyHome)
        return (laptop, try Replica.open(home: copyHome))
    }

    /// A copied home edits a rule it has not sent; the original edits the
    /// same rule later and syncs. The copy takes a new device id at its
    /// next sync, and its edit keeps the time it was made: the original's
    /// later edit stays on both.
    @Test(arguments: StoreKind.allCases) func aCopysOlderEditLosesToALaterOne(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let (laptop, copy) = try Self.laptopAndACopy(world)
        try copy.addRule(pattern: "shared.example", browser: "firefox", priority: 10)
        usleep(5_000) // the laptop's edit is later by the clock, not only by the counter
        try laptop.replica.addRule(pattern: "shared.example", browser: "firefox", priority: 20)
        try world.sync(laptop)
        let summary = try world.sync(SimulatedMachine(name: "copy", replica: copy, token: laptop.token))
        #expect(summary.newDeviceID != nil, "\(summary)")
        try world.sync(laptop)
        for replica in [laptop.replica, copy] {
            #expect(try replica.rule(pattern: "shared.example")?.priority == 20)
        }
    }

    /// The other way round: the original edits a rule and syncs, then a
    /// copy made before that edit changes the same rule later and syncs
    /// (taking a new device id). The copy's value wins, and the original's
    /// is kept as a conflict on both machines, as between two machines.
    /// The copy counted its edit under the original's id with the number
    /// the original's edit had, so the record said the copy had seen it.
    @Test(arguments: StoreKind.allCases) func anOriginalsValueThatLostToItsCopyIsKept(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let (laptop, copy) = try Self.laptopAndACopy(world)
        try laptop.replica.addRule(pattern: "shared.example", browser: "firefox", priority: 10)
        try world.sync(laptop)
        usleep(5_000) // the copy's edit is later by the clock
        try copy.addRule(pattern: "shared.example", browser: "firefox", priority: 12)
        let summary = try world.sync(SimulatedMachine(name: "copy", replica: copy, token: laptop.token))
        #expect(summary.newDeviceID != nil, "\(summary)")
        try world.sync(laptop)
        for (name, replica) in [("laptop", laptop.replica), ("copy", copy)] {
            #expect(try replica.rule(pattern: "shared.example")?.priority == 12, "\(name)")
            let kept = try replica.conflicts(limit: 10).map { "\($0.field) \($0.lost.value) -> \($0.winner.value)" }
            #expect(kept == ["priority int(10) -> int(12)"], "\(name)")
        }
    }

    /// A replica notices it is a copied file before it syncs, and takes a new
    /// device id at once; the original keeps its own.
    @Test(arguments: StoreKind.allCases) func aCopiedReplicaFileKnowsItIsACopy(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let laptop = try world.machine("laptop")
        try world.sync(laptop)
        #expect(try laptop.replica.takeNewDeviceIDIfCopied() == nil, "the original is not a copy")
        let copyHome = world.directory.file("copy")
        try FileManager.default.copyItem(atPath: laptop.replica.home, toPath: copyHome)
        let copy = try Replica.open(home: copyHome)
        #expect(copy.deviceID == laptop.replica.deviceID)
        let newID = try copy.takeNewDeviceIDIfCopied()
        #expect(newID != nil && copy.deviceID != laptop.replica.deviceID)
        #expect(try copy.takeNewDeviceIDIfCopied() == nil, "once")
        #expect(try laptop.replica.takeNewDeviceIDIfCopied() == nil)
    }

    /// A home restored from an older copy of itself reuses change numbers the
    /// server has: detected, and its new edits arrive.
    @Test(arguments: StoreKind.allCases) func aHomeRestoredFromAnOlderCopyLosesNothing(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let laptop = try world.machine("laptop")
        _ = try laptop.replica.addBrowser(id: "firefox", name: nil, format: nil, scheme: nil, exec: nil)
        try world.sync(laptop)
        let backup = world.directory.file("backup")
        try FileManager.default.copyItem(atPath: laptop.replica.home, toPath: backup)
        try laptop.replica.addRule(pattern: "before-restore.example", browser: "firefox", priority: nil)
        try world.sync(laptop)
        // The disk dies; the old copy comes back and the user edits on.
        let restored = try Replica.open(home: backup)
        try restored.addRule(pattern: "after-restore.example", browser: "firefox", priority: nil)
        let machine = SimulatedMachine(name: "restored", replica: restored, token: laptop.token)
        let summary = try world.sync(machine)
        #expect(summary.newDeviceID != nil, "\(summary)")
        #expect(try SyncWorld.rules(restored).keys.sorted() == ["after-restore.example", "before-restore.example"])
        #expect(
            try world.freshView().keys.filter { $0.hasPrefix("rules/") }.sorted() == [
                "rules/after-restore.example", "rules/before-restore.example",
            ])
    }

    /// The server restored from a file copy (twice) while one device is gone
    /// for good: clients notice the rollback, re-push and relay, and a new
    /// machine gets everything any of them still holds.
    @Test func aServerRestoredFromAFileCopyLosesNothingAClientHolds() throws {
        let world = try SyncWorld()
        let a = try world.machine("a")
        let b = try world.machine("b")
        let gone = try world.machine("gone")
        for machine in [a, b, gone] {
            _ = try machine.replica.addBrowser(id: "firefox", name: nil, format: nil, scheme: nil, exec: nil)
        }
        try a.replica.addRule(pattern: "a1.example", browser: "firefox", priority: nil)
        for machine in [a, b, gone, a, b] { try world.sync(machine) }
        world.stopServer()
        let copy = world.directory.file("server-copy.sqlite")
        try StoreFiles.copy(world.storePath, to: copy)
        try world.startServer()
        try gone.replica.addRule(pattern: "gone.example", browser: "firefox", priority: nil)
        try b.replica.addRule(pattern: "b1.example", browser: "firefox", priority: nil)
        for machine in [gone, b, a] { try world.sync(machine) } // `gone` syncs one last time, then is lost
        for round in 0..<2 {
            world.stopServer()
            try StoreFiles.putBack(copy, over: world.storePath)
            try world.startServer()
            try a.replica.addRule(pattern: "a-after\(round).example", browser: "firefox", priority: nil)
            for machine in [a, b, a, b] { try world.sync(machine) }
        }
        let expected = ["a1.example", "b1.example", "gone.example", "a-after0.example", "a-after1.example"].sorted()
        #expect(try SyncWorld.rules(a.replica).keys.sorted() == expected)
        #expect(try SyncWorld.rules(b.replica).keys.sorted() == expected)
        #expect(try SyncWorld.state(a.replica) == SyncWorld.state(b.replica))
        let fresh = try world.machine("fresh")
        try world.sync(fresh)
        #expect(try SyncWorld.state(fresh.replica) == SyncWorld.state(a.replica))
    }

    /// A rule deleted long ago (the tombstone purged) and added again with the
    /// same pattern arrives whole on a new machine.
    @Test(arguments: StoreKind.allCases) func aRuleAddedAgainAfterItsTombstoneWasPurgedArrivesWhole(
        _ kind: StoreKind
    ) throws {
        let world = try SyncWorld(kind)
        let laptop = try world.machine("laptop")
        _ = try laptop.replica.addBrowser(id: "firefox", name: nil, format: nil, scheme: nil, exec: nil)
        try laptop.replica.addRule(pattern: "again.example", browser: "firefox", priority: 3)
        try world.sync(laptop)
        _ = try laptop.replica.removeRule(pattern: "again.example")
        try world.sync(laptop)
        try world.sync(laptop) // the cursor past the tombstone is acknowledged
        #expect(try world.store.purgeTombstones(retentionMilliseconds: 0) == 1)
        try laptop.replica.addRule(pattern: "again.example", browser: "firefox", priority: 3)
        try world.sync(laptop)
        let fresh = try world.machine("fresh")
        try world.sync(fresh)
        #expect(try SyncWorld.rules(fresh.replica) == ["again.example": "firefox"])
    }

    /// A device revoked (so it no longer holds tombstones back) misses a
    /// deletion that is then purged; added again, it drops the deleted rule
    /// instead of bringing it back, and an edit it made meanwhile to another
    /// purged rule arrives whole, never as a partial record.
    @Test(arguments: StoreKind.allCases) func aDeviceThatMissedAPurgedDeletionReconciles(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let a = try world.machine("a")
        let b = try world.machine("b")
        _ = try a.replica.addBrowser(id: "firefox", name: nil, format: nil, scheme: nil, exec: nil)
        try a.replica.addRule(pattern: "deleted.example", browser: "firefox", priority: 1)
        try a.replica.addRule(pattern: "edited.example", browser: "firefox", priority: 2)
        try a.replica.addRule(pattern: "kept.example", browser: "firefox", priority: 3)
        try world.sync(a)
        try world.sync(b)
        try world.store.revokeDevice(account: "alice", name: "b")
        _ = try a.replica.removeRule(pattern: "deleted.example")
        _ = try a.replica.removeRule(pattern: "edited.example")
        try world.sync(a)
        try world.sync(a)
        #expect(try world.store.purgeTombstones(retentionMilliseconds: 0) == 2)
        // Meanwhile b, offline, edited one of them (after the delete).
        usleep(2_000)
        try b.replica.addRule(pattern: "edited.example", browser: "firefox", priority: 9)
        let token = try world.store.reissueToken(account: "alice", device: "b")
        let summary = try world.sync(b, token: token)
        #expect(summary.fullResync && summary.removed.count == 1 && summary.relayed >= 1, "\(summary)")
        #expect(try SyncWorld.rules(b.replica) == ["edited.example": "firefox", "kept.example": "firefox"])
        try world.sync(a)
        #expect(try SyncWorld.rules(a.replica) == ["edited.example": "firefox", "kept.example": "firefox"])
        let fresh = try world.machine("fresh")
        try world.sync(fresh)
        let edited = try #require(try fresh.replica.rules().first { $0.pattern == "edited.example" })
        #expect(
            edited.browser == "firefox" && edited.priority == 9 && edited.createdAtMillis > 0,
            "whole, not partial: \(edited)")
    }

    /// The newest stamp wins, deletions included: an edit made after a delete
    /// (on a machine that had not seen it) keeps the rule.
    @Test(arguments: StoreKind.allCases) func anEditAfterADeleteWins(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let a = try world.machine("a")
        let b = try world.machine("b")
        _ = try a.replica.addBrowser(id: "firefox", name: nil, format: nil, scheme: nil, exec: nil)
        _ = try a.replica.addBrowser(id: "chrome", name: nil, format: nil, scheme: nil, exec: nil)
        try a.replica.addRule(pattern: "x.example", browser: "firefox", priority: nil)
        try world.sync(a)
        try world.sync(b)
        _ = try a.replica.removeRule(pattern: "x.example")
        usleep(5_000)
        try b.replica.addRule(pattern: "x.example", browser: "chrome", priority: nil)
        try world.sync(a)
        try world.sync(b)
        try world.sync(a)
        #expect(try SyncWorld.rules(a.replica) == ["x.example": "chrome"])
        #expect(try SyncWorld.rules(b.replica) == ["x.example": "chrome"])
    }

    /// A sync does not pull back what it just pushed.
    @Test(arguments: StoreKind.allCases) func aSyncDoesNotPullBackItsOwnPush(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let laptop = try world.machine("laptop")
        let other = try world.machine("other")
        _ = try laptop.replica.addBrowser(id: "firefox", name: nil, format: nil, scheme: nil, exec: nil)
        for index in 0..<40 {
            try laptop.replica.addRule(pattern: "r\(index).example", browser: "firefox", priority: nil)
        }
        let first = try world.sync(laptop)
        #expect(first.pushed == 41 && first.pulled == 0, "\(first)")
        // Another machine's edit still comes down, and only it.
        _ = try other.replica.addBrowser(id: "chrome", name: nil, format: nil, scheme: nil, exec: nil)
        try world.sync(other)
        try laptop.replica.addRule(pattern: "r40.example", browser: "firefox", priority: nil)
        let second = try world.sync(laptop)
        #expect(second.pushed == 1 && second.pulled == 2, "\(second)") // chrome and the other machine's name
        #expect(try world.sync(other).pulled == 1)
    }

    /// Limits are enforced before a local write, and big pushes are split by
    /// bytes, not only by count.
    @Test func limitsHoldLocallyAndBigPushesAreSplitByBytes() throws {
        let world = try SyncWorld()
        let laptop = try world.machine("laptop")
        _ = try laptop.replica.addBrowser(id: "firefox", name: nil, format: nil, scheme: nil, exec: nil)
        #expect(throws: ReplicaError.self) {
            try laptop.replica.addRule(
                pattern: "a.example/" + String(repeating: "p", count: 2100), browser: "firefox", priority: nil)
        }
        var wide: [String: JSONValue] = [:]
        for index in 0..<64 { wide["f\(index)"] = .int(1) }
        #expect(throws: ReplicaError.self) { try laptop.replica.write(.settings, key: "wide", changes: wide) }
        #expect(throws: ReplicaError.self) { try laptop.replica.write(.settings, key: "empty", changes: ["": .int(1)]) }
        #expect(throws: ReplicaError.self) {
            try laptop.replica.write(.settings, key: "nul\u{0}key", changes: ["value": .int(1)])
        }
        #expect(try laptop.replica.unpushedCount() == 1, "only the browser was written")
        // 1,000 records with a 9 KB field: about 9 MB, more than one request may carry.
        let note = JSONValue.string(String(repeating: "n", count: 9_000))
        for index in 0..<1000 { try laptop.replica.write(.settings, key: "big\(index)", changes: ["note": note]) }
        var options = SyncClient.Options()
        options.pushBatch = 1000
        let client = try SyncClient(
            replica: laptop.replica, remote: try RemoteURL(parsing: "https://127.0.0.1:\(world.port)"),
            token: laptop.token, caFile: world.caFile, options: options)
        let summary = try client.sync()
        #expect(summary.pushed == 1001 && summary.requests >= 4, "\(summary)")
    }
}
