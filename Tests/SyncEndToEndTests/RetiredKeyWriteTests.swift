import BrsyncServer
import Foundation
import Replica
import SyncClient
import SyncCore
import TestSupport
import Testing

/// A retired key never writes again: when a server restored from before a
/// rotation is moved forward, what it holds under the old key is taken only
/// where it adds nothing to what the moving machine holds (it pulled what the
/// rotation sealed again); the rest (a revoked device's writes through the
/// restored server, an honest machine's made offline across the rotation) is
/// set aside, kept and restorable, never applied nor relayed.
@Suite(.serialized) struct RetiredKeyWriteTests {
    /// x and y hold the first key and sync; the server is backed up; y is
    /// revoked and x rotates; the backup is restored (y's token and the first
    /// key with it). Returns the backup's new key and the first key.
    static func rotateAcrossABackup(
        _ world: SyncWorld, _ x: SimulatedMachine, _ others: [SimulatedMachine],
        revoking revoked: SimulatedMachine?
    ) throws -> (first: AccountKey, second: AccountKey) {
        try KeyChangeTests.rule(x, "before.example")
        let first = try KeyChangeTests.shareNewKey(world, from: x, with: others)
        try world.sync(x)
        let backup = try world.backupServer()
        if let revoked { try world.store.revokeDevice(account: "alice", name: revoked.name) }
        let (second, _) = try KeyChangeTests.changeKey(world, x)
        try world.sync(x)
        try world.restoreServer(backup)
        return (first, second)
    }

    /// (SQLite: the world's backups are copies of its file.)
    @Test func aRevokedDeviceWritingThroughARestoredServerIsSetAside() throws {
        let world = try SyncWorld(.sqlite)
        let (x, y) = (try world.machine("x"), try world.machine("y"))
        let (_, second) = try Self.rotateAcrossABackup(world, x, [y], revoking: y)
        // y kept the first key, and the restore brought its token back: its writes are signed validly for that key.
        try KeyChangeTests.rule(y, "evil.example")
        _ = try y.replica.removeRule(pattern: "before.example")
        try world.sync(y)
        // x moves the server forward: y's rule is set aside, not applied, and kept.
        let moved = try world.sync(x)
        #expect(moved.movedForward, "\(moved)")
        #expect(!(try SyncWorld.rules(x.replica).keys.contains("evil.example")))
        let set = try #require(moved.setAside.first { $0.key == "evil.example" }, "\(moved)")
        #expect(set.why?.contains("by y") == true && set.why?.contains("retired account key") == true, "\(set)")
        let kept = try x.replica.removedRecords(limit: 10).first { $0.id == set.id }
        #expect(kept?.state?.fields["browser"]?.value == .string("firefox"))
        // Nothing of it reached the server, nor any machine with the new key.
        #expect(try !KeyChangeTests.freshRules(world, key: second).contains("evil.example"))
        #expect(try KeyChangeTests.freshRules(world, key: second).contains("before.example"))
        let deletion = try #require(
            try x.replica.removedRecords(limit: 10).first { $0.key == "before.example" && $0.why != nil })
        #expect(try deletion.state?.isDeleted == true && SyncWorld.rules(x.replica).keys.contains("before.example"))
        // Its user may still write them back, as edits of this machine: the rule, and the deletion.
        _ = try x.replica.restore(removed: set.id)
        _ = try x.replica.restore(removed: deletion.id)
        try world.sync(x)
        #expect(try KeyChangeTests.freshRules(world, key: second) == ["evil.example"])
    }

    /// A ledger belongs to its key's generation (a key change drops every
    /// one): the retired key's ledger records a restored server holds are
    /// no one's writes, and are never set aside for the user to restore (an
    /// outside check restored them as the message invited, and every push
    /// of that machine stopped for good on a ledger record holding values).
    @Test func aRetiredKeysLedgerIsNotSetAside() throws {
        let world = try SyncWorld(.sqlite)
        let (x, y) = (try world.machine("x"), try world.machine("y"))
        try KeyChangeTests.rule(x, "before.example")
        _ = try KeyChangeTests.shareNewKey(world, from: x, with: [y])
        try world.sync(x)
        try world.sync(y)
        let backup = try world.backupServer()
        let (second, _) = try KeyChangeTests.changeKey(world, x)
        try world.sync(x)
        try KeyChangeTests.addKey(world, y, second)
        try world.restoreServer(backup)
        let moved = try world.sync(y)
        #expect(moved.movedForward, "\(moved)")
        #expect(moved.setAside.isEmpty, "nothing was written with the old key after the rotation: \(moved.setAside)")
        #expect(try y.replica.removedRecords(limit: 50).allSatisfy { $0.collection != "ledger" })
        try KeyChangeTests.rule(y, "after.example")
        #expect(try world.sync(y).problems.isEmpty)
        #expect(try KeyChangeTests.freshRules(world, key: second).sorted() == ["after.example", "before.example"])
        // One set aside by an earlier brsync is not written back.
        try y.replica.database.run(
            "INSERT INTO removed (collection, key, fields, versions, removed_at, why) VALUES ('ledger', 'x/pending/0', '{}', '{}', 1, 'old')"
        )
        let kept = try #require(try y.replica.removedRecords(limit: 50).first { $0.collection == "ledger" })
        do {
            _ = try y.replica.restore(removed: kept.id)
            Issue.record("a ledger record was restored")
        } catch {
            #expect("\(error)".contains("is a ledger record"), "\(error)")
        }
    }

    @Test func anHonestMachineOfflineAcrossARotationLosesNothing() throws {
        let world = try SyncWorld(.sqlite)
        let (x, offline) = (try world.machine("x"), try world.machine("offline"))
        try KeyChangeTests.rule(x, "gone.example")
        let (_, second) = try Self.rotateAcrossABackup(world, x, [offline], revoking: nil)
        // Offline throughout, it never heard of the rotation: it writes to the restored server with the first key.
        try KeyChangeTests.rule(offline, "offline.example")
        try world.sync(offline)
        _ = try offline.replica.removeRule(pattern: "gone.example")
        try world.sync(offline)
        let moved = try world.sync(x)
        let set = try #require(moved.setAside.first { $0.key == "offline.example" }, "\(moved)")
        #expect(set.why?.contains("offline across the rotation") == true, "labelled, not as an attack: \(set)")
        let deletion = try #require(moved.setAside.first { $0.key == "gone.example" }, "\(moved)")
        // Once it adds the new code, its edits go up and reach every machine: the set-aside copies are held by now.
        try KeyChangeTests.addKey(world, offline, second)
        try world.sync(x)
        #expect(try SyncWorld.rules(x.replica).keys.contains("offline.example"))
        #expect(try KeyChangeTests.freshRules(world, key: second).sorted() == ["before.example", "offline.example"])
        let removed = try x.replica.removedRecords(limit: 20)
        for id in [set.id, deletion.id] {
            let record = try #require(removed.first { $0.id == id })
            #expect(try x.replica.isHeldNow(record), "\(record)")
        }
    }

    /// A machine with only the old key syncs with the restored server before
    /// any machine moves it forward: it takes in the revoked device's write
    /// (it cannot tell it from anyone's). When its user adds the new code, it
    /// checks what it holds against the new key's account before relaying
    /// anything: the revoked device's write is set aside there too (kept,
    /// restorable), its own edit goes up, and nothing of the revoked device
    /// reaches the server or any machine with the new key.
    @Test(arguments: [false, true])
    func aMachineThatLearnsOfTheRotationLateRelaysNothingItCannotVouchFor(learnerMovesTheServer: Bool) throws {
        let world = try SyncWorld(.sqlite)
        let (x, y, late) = (try world.machine("x"), try world.machine("y"), try world.machine("late"))
        try KeyChangeTests.rule(x, "shared.example")
        let (_, second) = try Self.rotateAcrossABackup(world, x, [y, late], revoking: y)
        try KeyChangeTests.rule(y, "evil.example")
        _ = try y.replica.removeRule(pattern: "shared.example")
        try world.sync(y)
        // The late machine syncs with the restored server (the old key is the account's there) and writes a rule of its own.
        try world.sync(late)
        #expect(
            try SyncWorld.rules(late.replica).keys.contains("evil.example"), "taken in: it cannot tell it from anyone's"
        )
        try KeyChangeTests.rule(late, "late.example")
        if !learnerMovesTheServer {
            let moved = try world.sync(x)
            #expect(moved.movedForward && moved.setAside.contains { $0.key == "evil.example" }, "\(moved)")
        }
        // The new code joins its key file (`brsync key add` takes it once the server uses it; a key
        // file put back from a copy may hold it before: then this machine moves the server itself).
        try AccountKeyFile.add(second, home: late.replica.home)
        let learned = try world.sync(late)
        #expect(learnerMovesTheServer == learned.movedForward, "\(learned)")
        let evil = try #require(learned.setAside.first { $0.key == "evil.example" }, "\(learned)")
        #expect(
            evil.why?.contains("learned of the rotation late") == true && evil.why?.contains("by y") == true, "\(evil)")
        #expect(learned.setAside.contains { $0.key == "shared.example" }, "y's deletion too: \(learned)")
        #expect(try !SyncWorld.rules(late.replica).keys.contains("evil.example"))
        #expect(try SyncWorld.rules(late.replica).keys.contains("late.example"), "its own edit stays")
        #expect(
            try late.replica.removedRecords(limit: 10).first { $0.id == evil.id }?.state?.fields["browser"]?.value
                == .string("firefox"))
        // The machines with the new key sync: the revoked device's writes reach none of them, the late machine's edit reaches all.
        for _ in 0..<2 { for machine in [x, late] { try world.sync(machine) } }
        let expected = ["before.example", "late.example", "shared.example"]
        for machine in [x, late] {
            #expect(try SyncWorld.rules(machine.replica).keys.sorted() == expected, "\(machine.name)")
        }
        #expect(try KeyChangeTests.freshRules(world, key: second) == expected)
        // Its user may still write the set-aside rule back, as an edit of this machine.
        _ = try late.replica.restore(removed: evil.id)
        try world.sync(late)
        #expect(try KeyChangeTests.freshRules(world, key: second).contains("evil.example"))
    }

    /// The late machine edits another field of a record whose value the
    /// revoked device wrote: learning of the rotation, it sets that value
    /// aside, and its unpushed edit no longer says the record held it (its
    /// manifest), so the edit goes up and every machine with the new key
    /// takes it, with the account's value beside it. (Found by the
    /// convergence suite, seed 97508: the edit went up claiming the value,
    /// and every machine set the record aside as one the server had cut.)
    @Test func aLateMachinesEditBesideAValueItSetsAsideGoesUp() throws {
        let world = try SyncWorld(.sqlite)
        let (x, y, late) = (try world.machine("x"), try world.machine("y"), try world.machine("late"))
        try KeyChangeTests.rule(x, "shared.example")
        let (_, second) = try Self.rotateAcrossABackup(world, x, [y, late], revoking: y)
        let key = try #require(try x.replica.records(.rules).first?.key)
        _ = try y.replica.write(.rules, key: key, changes: ["browser": .string("chrome")])
        try world.sync(y)
        try world.sync(late)
        #expect(try late.replica.record(.rules, key: key)?.fields["browser"]?.value == .string("chrome"))
        _ = try late.replica.write(.rules, key: key, changes: ["priority": .int(7)])
        #expect(try world.sync(x).movedForward)
        try AccountKeyFile.add(second, home: late.replica.home)
        let learned = try world.sync(late)
        #expect(learned.setAside.contains { $0.key == key }, "\(learned)")
        for _ in 0..<2 { for machine in [x, late] { try world.sync(machine) } }
        for machine in [x, late] {
            let rule = try machine.replica.record(.rules, key: key)
            #expect(rule?.fields["priority"]?.value == .int(7), "\(machine.name): \(String(describing: rule))")
            #expect(rule?.fields["browser"]?.value == .string("firefox"), "\(machine.name)")
            #expect(try machine.replica.pulledAside().isEmpty, "\(machine.name)")
        }
    }

    /// No restore: the rotating machine is stopped right after the server
    /// took the new key, before it sent anything again, and never comes
    /// back. A machine given the new code late holds what the account held
    /// before the rotation (the server refused the old key since), sets
    /// nothing aside, and sends it all: nothing is lost.
    @Test func aRotationKilledBeforeItSentEverythingAgainLosesNothing() throws {
        let world = try SyncWorld(.sqlite)
        let (x, late) = (try world.machine("x"), try world.machine("late"))
        try KeyChangeTests.rule(x, "x.example")
        try KeyChangeTests.shareNewKey(world, from: x, with: [late])
        try KeyChangeTests.rule(late, "late.example")
        try world.sync(late)
        try world.sync(x)
        let second = AccountKey.generate()
        try AccountKeyFile.write(second, home: x.replica.home, pending: true)
        try world.client(x).rotateAccount(to: second, seen: x.replica.syncState().pullCursor)
        #expect(try KeyChangeTests.freshRules(world, key: second).isEmpty, "the server dropped what the old key sealed")
        try AccountKeyFile.add(second, home: late.replica.home)
        let learned = try world.sync(late)
        #expect(learned.setAside.isEmpty, "\(learned)")
        #expect(try KeyChangeTests.freshRules(world, key: second) == ["late.example", "x.example"])
    }

    /// Through a restored server, a revoked device that kept the old key can
    /// rotate the account to a key of its own (the old key is the account's
    /// there): the machines cannot move it forward then, and say why, with
    /// an alarm that tells the user not to take a code they did not make.
    @Test func aRevokedDeviceThatRotatesARestoredServerRaisesTheAlarm() throws {
        let world = try SyncWorld(.sqlite)
        let (x, y) = (try world.machine("x"), try world.machine("y"))
        _ = try Self.rotateAcrossABackup(world, x, [y], revoking: y)
        _ = try KeyChangeTests.changeKey(world, y)
        let before = try SyncWorld.rules(x.replica)
        #expect { _ = try world.sync(x) } throws: { error in
            guard case SyncError.stopped(.keyRotated, let message) = error else { return false }
            return message.hasPrefix("ALARM") && message.contains("Do not add a recovery code you did not make")
        }
        #expect(try SyncWorld.rules(x.replica) == before, "nothing changed here")
    }

    /// The same alarm when the machine that kept the old key is the user's
    /// own (it never learned of the rotation): they made the new code, so
    /// they add it, and the machine syncs again with everything it held.
    @Test func theAlarmEndsWhenItsUserAddsTheCodeTheyMade() throws {
        let world = try SyncWorld(.sqlite)
        let (x, y) = (try world.machine("x"), try world.machine("y"))
        _ = try Self.rotateAcrossABackup(world, x, [y], revoking: nil)
        let (third, _) = try KeyChangeTests.changeKey(world, y)
        try KeyChangeTests.rule(x, "offline.example")
        #expect { _ = try world.sync(x) } throws: { error in
            guard case SyncError.stopped(.keyRotated, let message) = error else { return false }
            return message.hasPrefix("ALARM")
        }
        try AccountKeyFile.add(third, home: x.replica.home)
        try world.sync(x)
        try world.sync(y)
        #expect(try SyncWorld.rules(y.replica).keys.contains("offline.example"))
        #expect(try SyncWorld.rules(y.replica) == SyncWorld.rules(x.replica))
    }

    /// A machine that holds both keys but never synced with the new one (its
    /// home put back from a copy made before the rotation) cannot tell a
    /// revoked device's write from an old record it lacks: it sets both
    /// aside, and the old ones come back from the machines that hold them.
    @Test func aHomeFromBeforeTheRotationSetsAsideWhatItCannotVouchFor() throws {
        let world = try SyncWorld(.sqlite)
        let (x, y, m) = (try world.machine("x"), try world.machine("y"), try world.machine("m"))
        try KeyChangeTests.rule(x, "before.example")
        try KeyChangeTests.shareNewKey(world, from: x, with: [y, m])
        try world.sync(x)
        let copy = world.directory.file("m-copy")
        try FileManager.default.copyItem(atPath: m.replica.home, toPath: copy)
        try KeyChangeTests.rule(x, "later.example")
        try world.sync(x)
        let backup = try world.backupServer()
        try world.store.revokeDevice(account: "alice", name: "y")
        let (second, _) = try KeyChangeTests.changeKey(world, x)
        try world.sync(x)
        try world.restoreServer(backup)
        try KeyChangeTests.rule(y, "evil.example")
        try world.sync(y)
        // m's home is put back from the copy, and given the new code: both keys, never synced with the new one.
        try FileManager.default.removeItem(atPath: m.replica.home)
        try FileManager.default.moveItem(atPath: copy, toPath: m.replica.home)
        let restored = try SimulatedMachine(name: "m", home: m.replica.home, token: m.token, skewMilliseconds: 0)
        try AccountKeyFile.add(second, home: restored.replica.home)
        let moved = try world.sync(restored)
        #expect(moved.movedForward, "\(moved)")
        #expect(!(try SyncWorld.rules(restored.replica).keys.contains("evil.example")))
        #expect(moved.setAside.contains { $0.key == "evil.example" }, "\(moved)")
        // What it lacked from before the rotation comes back from x, under the new key.
        try world.sync(x)
        try world.sync(restored)
        #expect(try SyncWorld.rules(restored.replica).keys.sorted() == ["before.example", "later.example"])
        #expect(try !KeyChangeTests.freshRules(world, key: second).contains("evil.example"))
    }
}
