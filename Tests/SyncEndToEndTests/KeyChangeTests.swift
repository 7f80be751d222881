import BrsyncServer
import Foundation
import HTTP
import Model
import Net
import Replica
import ServerStore
import SyncClient
import SyncCore
import TestSupport
import Testing

/// Key changes, restores across them, account switches and purges never lose
/// an acknowledged edit nor strand a machine: each scenario as a user meets it.
@Suite(.serialized) struct KeyChangeTests {
    static func rule(_ machine: SimulatedMachine, _ pattern: String) throws {
        if try machine.replica.browsers().allSatisfy({ $0.browser.id != "firefox" }) {
            _ = try machine.replica.addBrowser(id: "firefox", name: nil, format: nil, scheme: nil, exec: nil)
        }
        try machine.replica.addRule(pattern: pattern, browser: "firefox", priority: nil)
    }

    /// A world of two machines, a and b, both synced with a's rule shared.example.
    static func twoMachinesWithARule(
        _ kind: StoreKind
    ) throws -> (world: SyncWorld, a: SimulatedMachine, b: SimulatedMachine) {
        let world = try SyncWorld(kind)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        try rule(a, "shared.example")
        for machine in [a, b] { try world.sync(machine) }
        return (world, a, b)
    }

    /// `brsync key init` (no key yet) or `key rotate` on `machine`: the new key.
    @discardableResult
    static func changeKey(_ world: SyncWorld, _ machine: SimulatedMachine) throws -> (AccountKey, SyncClient.KeyChange)
    {
        let key = AccountKey.generate()
        var shown: AccountKey?
        let change = try world.client(machine).changeAccountKey(to: key) { shown = $0 }
        #expect(shown == key, "the code is shown before the server is asked")
        #expect(try AccountKeyFile.read(home: machine.replica.home) == key)
        #expect(try AccountKeyFile.read(home: machine.replica.home, pending: true) == nil)
        return (key, change)
    }

    /// `brsync key add`, then a sync.
    static func addKey(_ world: SyncWorld, _ machine: SimulatedMachine, _ key: AccountKey) throws {
        try AccountKeyFile.add(key, home: machine.replica.home)
        try world.sync(machine)
    }

    /// A key change on `machine` (``changeKey(_:_:)``), then every one of
    /// `others` adds the new key and syncs (``addKey(_:_:_:)``): the new key.
    @discardableResult
    static func shareNewKey(
        _ world: SyncWorld, from machine: SimulatedMachine, with others: [SimulatedMachine]
    )
        throws -> AccountKey
    {
        let (key, _) = try changeKey(world, machine)
        for other in others { try addKey(world, other, key) }
        return key
    }

    /// The rules a new machine with `key` gets.
    static func freshRules(_ world: SyncWorld, key: AccountKey?) throws -> [String] {
        let fresh = try world.machine("fresh\(world.machines.count)")
        if let key { try AccountKeyFile.add(key, home: fresh.replica.home) }
        try world.sync(fresh)
        return try SyncWorld.rules(fresh.replica).keys.sorted()
    }

    /// c syncs an edit and is retired; a, which has not pulled it, encrypts
    /// the account (or rotates its key): the edit is pulled before the
    /// server deletes anything, and reaches every machine with the new key.
    @Test(arguments: StoreKind.allCases, [false, true]) func aKeyChangeKeepsEditsTheChangerHadNotPulled(
        _ kind: StoreKind, _ rotating: Bool
    ) throws {
        let world = try SyncWorld(kind)
        let (a, b, c) = (try world.machine("a"), try world.machine("b"), try world.machine("c"))
        try Self.rule(a, "a-rule.com")
        try world.sync(a)
        if rotating {
            try Self.shareNewKey(world, from: a, with: [b, c])
        } else {
            for machine in [b, c] { try world.sync(machine) }
        }
        try Self.rule(c, "c-rule.com")
        try world.sync(c) // acknowledged; then c is retired, never to sync again
        let (key, change) = try Self.changeKey(world, a)
        #expect(change.before.pulled >= 1 && change.attempts == 1, "\(change)")
        #expect(change.after.relayed >= 2, "every record a holds went up sealed: \(change.after)")
        try Self.addKey(world, b, key)
        try world.sync(a)
        let expected = ["a-rule.com", "c-rule.com"]
        #expect(try SyncWorld.rules(a.replica).keys.sorted() == expected)
        #expect(try SyncWorld.rules(b.replica).keys.sorted() == expected)
        #expect(try Self.freshRules(world, key: key) == expected)
        // c, with the old key or none, is told to add the code and keeps its copy.
        #expect(throws: SyncError.self) { try world.sync(c) }
        #expect(try SyncWorld.rules(c.replica).keys.sorted() == expected)
    }

    /// A key change names what its machine has pulled; a push that lands in
    /// between makes the server refuse it and delete nothing.
    @Test(arguments: StoreKind.allCases) func aKeyChangeIsRefusedWhenTheAccountMovedAndChangesNothing(
        _ kind: StoreKind
    ) throws {
        let world = try SyncWorld(kind)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        try Self.rule(a, "a-rule.com")
        try world.sync(a)
        let seen = try a.replica.syncState().pullCursor
        try Self.rule(b, "b-rule.com")
        try world.sync(b)
        let device = try world.store.authenticate(token: a.token)
        // Behind the account, or past it (a number no page of this account gave): refused alike.
        for claimed in [seen, 1_000_000] {
            #expect(throws: ServerError.self) {
                let key = AccountKey.generate()
                let request = EncryptRequest(keyID: key.id, seen: claimed, publicKey: key.signingPublicKey)
                _ = try world.store.encryptAccount(
                    of: device, request,
                    authority: try .signed(
                        by: key.signingKey(), token: a.token,
                        path: "/v1/account/encrypt", body: request.body))
            }
        }
        #expect(try !world.store.authenticate(token: a.token).accountEncrypted)
        #expect(try Self.freshRules(world, key: nil) == ["a-rule.com", "b-rule.com"])
        // Through the API: 409 account_moved, and the key is not kept pending.
        let client = try world.client(a)
        do {
            try client.encryptAccount(with: AccountKey.generate(), seen: seen)
            Issue.record("a key change from a machine that had not pulled everything was taken")
        } catch SyncError.refused(let code, _) {
            #expect(code == .accountMoved)
        }
        #expect(try !world.store.authenticate(token: a.token).accountEncrypted)
    }

    /// b keeps pushing while a rotates the key: whatever b had acknowledged
    /// before the rotation was pulled by a first (the server refused the
    /// rotation, and a synced again, while b's pushes landed); the rest b
    /// keeps and sends once it has the new code.
    @Test func aPushRacingARotationIsNeverLost() throws {
        let world = try SyncWorld()
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        try Self.rule(a, "a-rule.com")
        try world.sync(a)
        try Self.shareNewKey(world, from: a, with: [b])
        let writer = Thread {
            for index in 0..<6 {
                try? Self.rule(b, "b\(index).com")
                _ = try? world.sync(b)
                usleep(3_000)
            }
        }
        writer.start()
        // The rotation gives up after SyncClient.keyChangeAttempts refusals
        // (`account_moved`) while b keeps writing: on a loaded machine b's
        // pushes can meet every attempt. Then the user runs it again, as the
        // message says; nothing of b's may be lost either way.
        var rotated: (AccountKey, SyncClient.KeyChange)?
        do { rotated = try Self.changeKey(world, a) } catch SyncError.refused(code: .accountMoved, _) {
            print("aPushRacingARotationIsNeverLost: the rotation gave up while b wrote; asked again")
        }
        while writer.isExecuting || !writer.isFinished { usleep(1_000) }
        let (key, change) = try rotated ?? Self.changeKey(world, a)
        print("aPushRacingARotationIsNeverLost: rotation asked \(change.attempts) time(s)")
        try Self.addKey(world, b, key)
        try world.sync(a)
        let expected = ["a-rule.com"] + (0..<6).map { "b\($0).com" }
        #expect(try SyncWorld.rules(a.replica).keys.sorted() == expected.sorted())
        #expect(try Self.freshRules(world, key: key) == expected.sorted())
    }

    /// The server restored from a backup taken before `key init`: every
    /// keyed machine goes on (none stops with `not_encrypted`), the account
    /// is encrypted again, and a rule another machine made before the
    /// backup reaches everyone.
    @Test func aRestoreFromBeforeKeyInitLosesNothing() throws {
        let world = try SyncWorld()
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        try Self.rule(a, "a-rule.com") // not pushed
        try Self.rule(b, "b-rule.com")
        try world.sync(b) // a has not pulled it
        let backup = try world.backupServer()
        let key = try Self.shareNewKey(world, from: a, with: [b])
        try world.restoreServer(backup)
        for _ in 0..<3 {
            for machine in [b, a] { try world.sync(machine) }
        }
        let expected = ["a-rule.com", "b-rule.com"]
        #expect(try SyncWorld.rules(a.replica).keys.sorted() == expected)
        #expect(try SyncWorld.rules(b.replica).keys.sorted() == expected)
        #expect(try Self.freshRules(world, key: key) == expected)
        #expect(try world.store.authenticate(token: a.token).accountEncrypted)
    }

    /// The server restored from before a rotation: the machines with the new
    /// key move it forward by themselves (nobody adds a code, nobody is
    /// asked for the old one), and nothing anyone holds is lost. An edit a
    /// machine with only the old key pushed to the restored server before it
    /// was retired is not among what the rotation sealed again: it is set
    /// aside where the server is moved forward, kept there, and reaches
    /// everyone only when that machine's user restores it (a revoked device
    /// writes the same way: RetiredKeyWriteTests).
    @Test func aRestoreFromBeforeARotationMovesTheServerForward() throws {
        let world = try SyncWorld()
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        try Self.rule(a, "a-rule.com")
        let (old, _) = try Self.changeKey(world, a)
        try Self.rule(b, "b-rule.com")
        try Self.addKey(world, b, old)
        try world.sync(a)
        let backup = try world.backupServer()
        let n = try world.machine("n") // will hold the old key only
        try Self.addKey(world, n, old)
        let (key, _) = try Self.changeKey(world, a)
        try Self.rule(b, "b-after.com")
        try Self.addKey(world, b, key)
        try world.restoreServer(backup)
        // n, with the old key, pushes to the restored server (acknowledged), then is retired.
        try Self.rule(n, "n-after-restore.com")
        try world.sync(n)
        let moved = try world.sync(b) // b knows the server's key as one it held before
        #expect(moved.movedForward, "\(moved)")
        let setAside = try #require(moved.setAside.first { $0.key == "n-after-restore.com" }, "\(moved)")
        for machine in [a, b, a] { try world.sync(machine) }
        #expect(try !SyncWorld.rules(b.replica).keys.contains("n-after-restore.com"))
        _ = try b.replica.restore(removed: setAside.id)
        for machine in [b, a] { try world.sync(machine) }
        let expected = ["a-rule.com", "b-after.com", "b-rule.com", "n-after-restore.com"]
        #expect(try SyncWorld.rules(a.replica).keys.sorted() == expected)
        #expect(try SyncWorld.rules(b.replica).keys.sorted() == expected)
        #expect(try Self.freshRules(world, key: key) == expected)
        for machine in [a, b] { #expect(try AccountKeyFile.read(home: machine.replica.home) == key) }
    }

    /// A machine given the old code and the new one before it ever synced
    /// with a key (convergence seed 77001: a home restored from a copy made
    /// before its first encrypted sync) meets a server restored from before
    /// the rotation: it moves the server forward. Its certificate must name
    /// the account, which it has not met under a key yet, so it takes the
    /// id the server gives; one naming no account is refused
    /// (`bad_signature`) at every sync, and the machine is stuck.
    @Test func aMachineThatNeverSyncedWithAKeyMovesARestoredServerForward() throws {
        let world = try SyncWorld()
        let a = try world.machine("a")
        try Self.rule(a, "a-rule.com")
        let (old, _) = try Self.changeKey(world, a)
        try world.sync(a)
        let backup = try world.backupServer()
        let (key, _) = try Self.changeKey(world, a)
        let m = try world.machine("m")
        try Self.rule(m, "m-rule.com")
        try AccountKeyFile.add(old, home: m.replica.home)
        try AccountKeyFile.add(key, home: m.replica.home)
        try world.restoreServer(backup)
        let moved = try world.sync(m)
        #expect(moved.movedForward, "\(moved)")
        for machine in [a, m, a] { try world.sync(machine) }
        let expected = ["a-rule.com", "m-rule.com"]
        #expect(try SyncWorld.rules(a.replica).keys.sorted() == expected)
        #expect(try SyncWorld.rules(m.replica).keys.sorted() == expected)
        #expect(try Self.freshRules(world, key: key) == expected)
    }

    /// A rotation killed after the server took it (its key still pending
    /// here), settled at the next sync, then rotated again; the server is
    /// restored from a backup taken in between, sealed with the key whose
    /// rotation was killed (its code was shown, but no machine but the
    /// rotating one ever held it). A machine that synced with the newest key
    /// learned which keys it replaced and moves the server forward; one given
    /// the newest code but not synced since waits for that, then goes on.
    @Test func aRestoreAcrossAKilledRotationStrandsNoMachine() throws {
        let world = try SyncWorld()
        let (a, b, c) = (try world.machine("a"), try world.machine("b"), try world.machine("c"))
        try Self.rule(a, "a-rule.com")
        let (k0, _) = try Self.changeKey(world, a)
        try Self.rule(b, "b-rule.com")
        try Self.rule(c, "c-rule.com")
        for machine in [b, c] { try Self.addKey(world, machine, k0) }
        try world.sync(a)
        // The killed rotation: the new key pending, the server took it, nothing more.
        let k1 = AccountKey.generate()
        try AccountKeyFile.write(k1, home: a.replica.home, pending: true)
        try world.client(a).rotateAccount(to: k1, seen: a.replica.syncState().pullCursor)
        let backup = try world.backupServer()
        // The next sync settles it (as `brsync sync` does first).
        #expect(try AccountKeyFile.settle(home: a.replica.home) { try world.client(a).accountKeyID() } == true)
        #expect(try AccountKeyFile.readOlder(home: a.replica.home) == [k0])
        try world.sync(a)
        let (k2, _) = try Self.changeKey(world, a)
        #expect(try AccountKeyFile.readOlder(home: a.replica.home) == [k1, k0])
        try Self.addKey(world, b, k2)
        try AccountKeyFile.add(k2, home: c.replica.home) // not synced since
        try world.restoreServer(backup)
        // c never held k1 nor synced with k2: refused with what to do, its rules kept...
        #expect(throws: SyncError.self) { try world.sync(c) }
        // ...until b, which learned from its sync with k2 that k2 replaced k1, moves the server forward.
        #expect(try world.sync(b).movedForward)
        for machine in [c, a, b, c] { try world.sync(machine) }
        let expected = ["a-rule.com", "b-rule.com", "c-rule.com"]
        for machine in [a, b, c] {
            #expect(try SyncWorld.rules(machine.replica).keys.sorted() == expected, "\(machine.name)")
        }
        #expect(try Self.freshRules(world, key: k2) == expected)
    }

    /// A rotation killed right after the server took it, whose code another
    /// machine added; then a restore from before it. The rotating machine
    /// keeps the key aside (the server does not use it), the other moves the
    /// server forward to it, and the rotating machine takes it up again at
    /// its next sync: nobody is asked for a code.
    @Test func aKilledRotationsKeyIsKeptAsideNotLost() throws {
        let world = try SyncWorld()
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        try Self.rule(a, "a-rule.com")
        let k0 = try Self.shareNewKey(world, from: a, with: [b])
        try world.sync(a)
        let backup = try world.backupServer()
        let k1 = AccountKey.generate()
        try AccountKeyFile.write(k1, home: a.replica.home, pending: true)
        try world.client(a).rotateAccount(to: k1, seen: a.replica.syncState().pullCursor)
        try Self.rule(b, "b-rule.com")
        try Self.addKey(world, b, k1) // its code was shown
        try world.restoreServer(backup)
        /// What `brsync sync` does first.
        func settle(_ machine: SimulatedMachine) throws -> Bool? {
            try AccountKeyFile.settle(home: machine.replica.home) {
                try SyncClient(
                    replica: machine.replica, remote: try RemoteURL(parsing: "https://127.0.0.1:\(world.port)"),
                    token: machine.token,
                    caFile: world.caFile
                ).accountKeyID()
            }
        }
        #expect(try settle(a) == false) // the server uses k0 again: k1 kept aside
        #expect(try AccountKeyFile.read(home: a.replica.home) == k0)
        try world.sync(a)
        #expect(try world.sync(b).movedForward)
        #expect(try settle(a) == true) // the account uses k1: taken up
        #expect(try AccountKeyFile.read(home: a.replica.home) == k1)
        for machine in [a, b, a] { try world.sync(machine) }
        #expect(try settle(a) == nil)
        let expected = ["a-rule.com", "b-rule.com"]
        #expect(try SyncWorld.rules(a.replica).keys.sorted() == expected)
        #expect(try Self.freshRules(world, key: k1) == expected)
    }

    /// A replica switched to another account with an edit it has not pushed
    /// relays every record it holds, as with no edit.
    @Test(arguments: StoreKind.allCases) func anAccountSwitchRelaysEveryRecord(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let laptop = try world.machine("laptop")
        for index in 0..<5 { try Self.rule(laptop, "site\(index).com") }
        try world.sync(laptop)
        try Self.rule(laptop, "unpushed.com")
        try world.store.addAccount("bob")
        laptop.token = try world.store.addDevice(account: "bob", name: "laptop")
        let switched = try world.sync(laptop)
        #expect(switched.fullResync && switched.relayed >= 5, "\(switched)")
        let bobs = try world.machine("bobs-desktop", account: "bob")
        try world.sync(bobs)
        #expect(
            try SyncWorld.rules(bobs.replica).keys.sorted()
                == ((0..<5).map { "site\($0).com" } + ["unpushed.com"]).sorted())
    }

    /// A replica with a key pointed at another account (a token of bob's)
    /// sends nothing there, encrypts and rotates nothing, and says what to
    /// do; bob's machines go on. With bob's code it joins bob sealed, and
    /// pointed back at alice's account it leaves alice's key alone.
    @Test func aReplicaWithAKeyNeverTakesItToAnotherAccount() throws {
        let world = try SyncWorld()
        let a = try world.machine("a")
        let alicesOther = try world.machine("a2")
        try Self.rule(a, "alice.com")
        let aliceKey = try Self.shareNewKey(world, from: a, with: [alicesOther])
        try world.store.addAccount("bob")
        let y = try world.machine("y", account: "bob")
        try Self.rule(y, "bob.com")
        try world.sync(y)
        try Self.rule(a, "unpushed.com")
        let alicesToken = a.token
        a.token = try world.store.addDevice(account: "bob", name: "a")
        func refusedAsOtherAccount(_ machine: SimulatedMachine) {
            do {
                try world.sync(machine)
                Issue.record("a replica with another account's key synced")
            } catch let error as SyncError {
                // Whichever side tells first: the server (the account a signed
                // write names) or this client (the account a page names),
                // each worded as its own.
                switch error {
                case .refused(let code, let message):
                    #expect(code == .otherAccount && message.contains("brsync key add"), "\(message)")
                    #expect(error.description.hasPrefix("the server refused (other_account): "))
                case .stopped(let code, let message):
                    #expect(code == .otherAccount && message.contains("brsync key add"), "\(message)")
                    #expect(error.description.hasPrefix("sync stopped (other_account): "))
                default:
                    Issue.record("\(error)")
                }
            } catch {
                Issue.record("\(error)")
            }
        }
        let (bobEpoch, aliceCursor) = (try y.replica.syncState().epoch, try a.replica.syncState().pullCursor)
        #expect(aliceCursor > (try y.replica.syncState().pullCursor), "alice's cursor is past bob's records")
        refusedAsOtherAccount(a)
        // Bob's timeline stays: a cursor of alice's account says nothing about his.
        let bobs = try world.sync(y)
        #expect(!bobs.fullResync && bobs.relayed == 0, "\(bobs)")
        #expect(try y.replica.syncState().epoch == bobEpoch)
        #expect(try !world.store.authenticate(token: y.token).accountEncrypted)
        #expect(try SyncWorld.rules(y.replica).keys.sorted() == ["bob.com"])
        // bob's account encrypted on bob's machine; its code added here.
        try Self.shareNewKey(world, from: y, with: [a])
        try world.sync(y)
        #expect(try SyncWorld.rules(y.replica).keys.sorted() == ["alice.com", "bob.com", "unpushed.com"])
        // Back to alice's account with bob's key: refused, alice's key untouched.
        a.token = alicesToken
        refusedAsOtherAccount(a)
        #expect(try world.store.authenticate(token: alicesOther.token).accountKeyID == aliceKey.id)
        try world.sync(alicesOther)
    }

    /// a and b hold `pattern` and `kept`; b is revoked (so it no longer
    /// holds the purge back; given a new token later), a deletes `pattern`,
    /// and its tombstone, the account's newest record, is purged.
    static func purgedDeletion(
        _ kind: StoreKind, of pattern: String, keeping kept: [String]
    ) throws -> (SyncWorld, SimulatedMachine, SimulatedMachine) {
        let world = try SyncWorld(kind)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        for rule in kept + [pattern] { try Self.rule(a, rule) }
        try world.sync(a)
        try world.sync(b)
        try world.store.revokeDevice(account: "alice", name: "b")
        _ = try a.replica.removeRule(pattern: pattern)
        try world.sync(a)
        try world.sync(a)
        #expect(try world.store.purgeTombstones(retentionMilliseconds: 0) == 1)
        return (world, a, b)
    }

    /// After a purge of the newest records' tombstones, a device that missed
    /// them reconciles once; its cursor then passes the purge point, so the
    /// syncs after it are ordinary (no `reset`, nothing pulled again).
    @Test(arguments: StoreKind.allCases) func aPurgeMeansOneReconcileNotOneEverySync(_ kind: StoreKind) throws {
        let (world, _, b) = try Self.purgedDeletion(kind, of: "z.com", keeping: ["x.com", "y.com"])
        b.token = try world.store.reissueToken(account: "alice", device: "b")
        let first = try world.sync(b)
        #expect(first.fullResync && first.removed.map(\.collection) == ["rules"], "\(first)")
        for _ in 0..<2 {
            let next = try world.sync(b)
            #expect(!next.fullResync && next.pulled == 0, "\(next)")
        }
        #expect(try SyncWorld.rules(b.replica).keys.sorted() == ["x.com", "y.com"])
    }

    /// A device removed and added again (a new token, `remote rm` then
    /// `remote set`) drops a deletion that was purged meanwhile at its first
    /// sync.
    @Test(arguments: StoreKind.allCases) func aDeviceAddedAgainDropsPurgedDeletionsAtOnce(_ kind: StoreKind) throws {
        let (world, a, b) = try Self.purgedDeletion(kind, of: "x.com", keeping: ["kept.com"])
        let remote = try b.replica.syncState().remoteURL ?? "https://127.0.0.1:\(world.port)"
        try b.replica.removeRemote()
        try b.replica.setRemote(url: remote, caFile: world.caFile)
        b.token = try world.store.reissueToken(account: "alice", device: "b")
        let first = try world.sync(b)
        #expect(first.removed.count == 1, "\(first)")
        #expect(try SyncWorld.rules(b.replica).keys.sorted() == ["kept.com"])
        // Nothing leaves unrecorded: the dropped rule is listed, whole, and
        // written back it comes back everywhere.
        let removed = try b.replica.removedRecords(limit: 10)
        #expect(removed.map(\.id) == first.removed.map(\.id) && removed.first?.state?.fields["browser"] != nil)
        _ = try b.replica.restore(removed: removed[0].id)
        #expect(throws: ReplicaError.self) { try b.replica.restore(removed: removed[0].id) }
        #expect(throws: ReplicaError.self) { try b.replica.restore(removed: 999) }
        try world.sync(b)
        try world.sync(a)
        #expect(try SyncWorld.rules(a.replica).keys.sorted() == ["kept.com", "x.com"])
        #expect(try b.replica.removedRecords(limit: 10).first?.restoredAtMillis != nil)
    }

    /// A key change gives a machine a new device id (the server forgot every
    /// device's numbered history with the old key's data); every machine
    /// shows the old id as that machine, under its current name.
    @Test func aKeyChangeKeepsTheMachineOneDevice() throws {
        let world = try SyncWorld()
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        try Self.rule(a, "a-rule.com")
        for machine in [a, b] { try world.sync(machine) }
        let before = a.replica.deviceID
        let (key, _) = try Self.changeKey(world, a)
        #expect(a.replica.deviceID != before)
        try Self.addKey(world, b, key)
        try world.sync(a)
        let seenByB = try b.replica.deviceNames()
        #expect(seenByB.display(before) == "a" && seenByB.display(a.replica.deviceID) == "a", "\(seenByB)")
        #expect(seenByB.earlierIDs(of: a.replica.deviceID).contains(before))
        let seenByA = try a.replica.deviceNames()
        #expect(seenByA.display(before) == "a (this device)")
    }
}
