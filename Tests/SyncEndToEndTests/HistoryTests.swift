import BrsyncServer
import Foundation
import JSON
import Model
import Replica
import Storage
import SyncClient
import SyncCore
import SystemServices
import TestSupport
import Testing

/// Two histories that look alike: a replica whose copy used its change
/// numbers, and a server store whose file copy was put back. Each was found
/// by the convergence test (seeds 2032 and 2004).
@Suite(.serialized) struct HistoryTests {
    static func note(_ replica: Replica) throws -> JSONValue? {
        try replica.record(.settings, key: "note")?.fields["value"]?.value
    }

    /// A replica that must take a new device id re-issues its unpushed edits,
    /// but only the fields it still holds: an edit overwritten since by a
    /// value it pulled does not come back with a new stamp and win.
    @Test func aForkedReplicaDoesNotReviveAnOverwrittenEdit() throws {
        let world = try SyncWorld()
        let laptop = try world.machine("laptop")
        try laptop.replica.write(.settings, key: "note", changes: ["value": .int(1)])
        try world.sync(laptop)
        // A block-level copy (a VM snapshot): same file identity, same device id.
        let copyHome = world.directory.file("copy")
        try FileManager.default.copyItem(atPath: laptop.replica.home, toPath: copyHome)
        let copy = try Replica.open(home: copyHome, now: { Clock.wallMillis() + 1_000 })
        try copy.database.run("DELETE FROM meta WHERE key = 'instance'")
        #expect(copy.deviceID == laptop.replica.deviceID)
        // Both edit the note with the same change number; the copy's edit is later.
        try laptop.replica.write(.settings, key: "note", changes: ["value": .int(2)])
        try copy.write(.settings, key: "note", changes: ["value": .int(6)])
        try world.sync(SimulatedMachine(name: "copy", replica: copy, token: laptop.token))
        // The laptop pulls the 6, then pushes its own change 2: the numbers
        // were used with other content, so it takes a new device id.
        _ = try world.client(laptop).pull()
        #expect(try Self.note(laptop.replica) == .int(6))
        let summary = try world.sync(laptop)
        #expect(summary.newDeviceID != nil, "\(summary)")
        #expect(try Self.note(laptop.replica) == .int(6))
        #expect(try world.freshView()["settings/note"]?["value"]?.value == .int(6))
        try world.sync(SimulatedMachine(name: "copy", replica: copy, token: laptop.token))
        #expect(try Self.note(copy) == .int(6))
    }

    /// Two block-level copies of one home that make different edits and then
    /// the same one: on a clock behind what the replica has seen, the same
    /// edit gets the same stamp on both, so the last changes are identical.
    /// The server knows a device's history by the chain through its last
    /// change, so the second copy's push is not taken for a retry of the
    /// first's, and its other edit is not lost.
    @Test func copiesWhoseLastChangesAreIdenticalAreStillToldApart() throws {
        let world = try SyncWorld()
        let desktop = try world.machine("desktop", skew: 4 * 60_000) // ahead, within what the server takes
        let laptop = try world.machine("laptop")
        try desktop.replica.write(.settings, key: "ahead", changes: ["value": .int(1)])
        try world.sync(desktop)
        try world.sync(laptop) // the laptop's clock has seen the desktop's stamp
        let copyHome = world.directory.file("copy")
        try FileManager.default.copyItem(atPath: laptop.replica.home, toPath: copyHome)
        let copy = try Replica.open(home: copyHome)
        try copy.database.run("DELETE FROM meta WHERE key = 'instance'")
        try laptop.replica.write(.settings, key: "note", changes: ["value": .int(1)])
        try copy.write(.settings, key: "note", changes: ["value": .int(2)])
        let laptopMode = try laptop.replica.write(.settings, key: "mode", changes: ["value": .string("dark")])
        let copyMode = try copy.write(.settings, key: "mode", changes: ["value": .string("dark")])
        #expect(laptopMode == copyMode, "the same change, number and stamp")
        try world.sync(SimulatedMachine(name: "copy", replica: copy, token: laptop.token))
        let summary = try world.sync(laptop)
        #expect(summary.newDeviceID != nil, "\(summary)")
        #expect(try world.freshView()["settings/note"]?["value"]?.value == .int(1))
        try world.sync(SimulatedMachine(name: "copy", replica: copy, token: laptop.token))
        #expect(try Self.note(copy) == .int(1))
        #expect(try Self.note(laptop.replica) == .int(1))
    }

    /// A pushed value that lost to a newer one is not taken as known to its
    /// pusher, though its cursor covers the winner's version: had it held the
    /// winner, its value would not have lost. Its next pull fetches the
    /// winner (as happens when a copy's cursor covers a version it does not
    /// hold).
    @Test func aPushedValueThatLostIsPulledBack() throws {
        let world = try SyncWorld()
        let desktop = try world.machine("desktop", skew: 60_000)
        let laptop = try world.machine("laptop")
        try world.sync(laptop)
        try laptop.replica.write(.settings, key: "note", changes: ["value": .int(1)])
        try desktop.replica.write(.settings, key: "note", changes: ["value": .int(2)]) // a minute later
        try world.sync(desktop)
        // The laptop's cursor covers the desktop's version without it holding it.
        let next = try #require(try world.store.records(account: "alice").map(\.sequence).max())
        try laptop.replica.database.run("UPDATE meta SET value = ? WHERE key = 'pull_cursor'", [.text(String(next))])
        try world.sync(laptop)
        #expect(try Self.note(laptop.replica) == .int(2))
        #expect(try world.freshView()["settings/note"]?["value"]?.value == .int(2))
    }

    /// A server store whose file copy is put back (or a backup restored a
    /// second time) may hand out change numbers it handed out before with other
    /// content: it starts a new epoch, so a machine whose cursor is past them
    /// pulls everything again instead of skipping what the new numbers hold.
    @Test func aStoreFileCopiedBackStartsANewEpoch() throws {
        let world = try SyncWorld()
        let laptop = try world.machine("laptop")
        try laptop.replica.write(.settings, key: "first", changes: ["value": .int(1)])
        try world.sync(laptop)
        world.stopServer()
        let copy = world.directory.file("server-copy.sqlite")
        try StoreFiles.copy(world.storePath, to: copy)
        try world.startServer()
        let epoch = world.store.epoch
        world.stopServer()
        try world.startServer()
        #expect(world.store.epoch == epoch, "the same file keeps its epoch")
        for index in 0..<3 { try laptop.replica.write(.settings, key: "later\(index)", changes: ["value": .int(1)]) }
        try world.sync(laptop)
        // The copy is put back: the laptop's three later records are gone, and
        // a new machine's records take their change numbers.
        world.stopServer()
        try StoreFiles.putBack(copy, over: world.storePath)
        try world.startServer()
        #expect(world.store.epoch != epoch)
        let desktop = try world.machine("desktop")
        for index in 0..<3 { try desktop.replica.write(.settings, key: "desktop\(index)", changes: ["value": .int(2)]) }
        try world.sync(desktop)
        try world.sync(laptop)
        let keys = try laptop.replica.records(.settings).map(\.key).filter { !$0.hasPrefix("device_name/") }.sorted()
        #expect(keys == ["desktop0", "desktop1", "desktop2", "first", "later0", "later1", "later2"])
        try world.sync(desktop)
        #expect(try desktop.replica.records(.settings).count == 7 + 2) // and the two machines' names
    }

    /// A copy written back into the same file (SQLite's `.restore`) keeps the
    /// file's identity: the first push beyond what the store has starts a
    /// new epoch for its account (the store's stays), and every answer of
    /// the account from then on carries it.
    @Test func aStoreRestoredInPlaceStartsANewEpochAtTheFirstSign() throws {
        let world = try SyncWorld()
        let laptop = try world.machine("laptop")
        try laptop.replica.write(.settings, key: "first", changes: ["value": .int(1)])
        try world.sync(laptop)
        let saved = try Database(path: world.directory.file("saved.sqlite"), mode: .readWriteCreate)
        try Database(path: world.storePath, mode: .readWrite).backup(to: saved)
        let epoch = world.store.epoch
        try laptop.replica.write(.settings, key: "second", changes: ["value": .int(2)])
        try world.sync(laptop)
        world.stopServer()
        try saved.backup(to: try Database(path: world.storePath, mode: .readWrite)) // in place: same file
        try world.startServer()
        #expect(world.store.epoch == epoch)
        try laptop.replica.write(.settings, key: "third", changes: ["value": .int(3)])
        let before = try laptop.replica.syncState().epoch
        try world.sync(laptop)
        #expect(world.store.epoch == epoch, "other accounts' timelines are not moved")
        let after = try laptop.replica.syncState().epoch
        #expect(after != before && after?.hasPrefix(epoch) == true, "\(String(describing: after))")
        #expect(try world.freshView().keys.sorted() == ["settings/first", "settings/second", "settings/third"])
    }

    /// An edit made after pulling a value, on a clock that then ran fast, is
    /// re-stamped when the server refuses the stamp: still above the value it
    /// overwrote (which the record no longer holds), so it wins everywhere.
    @Test func aReStampedEditStaysAboveWhatItOverwrote() throws {
        let world = try SyncWorld()
        let desktop = try world.machine("desktop", skew: 4 * 60_000) // ahead, within what the server takes
        let laptop = try world.machine("laptop")
        try desktop.replica.write(.settings, key: "note", changes: ["value": .int(6)])
        try world.sync(desktop)
        try world.sync(laptop)
        #expect(try Self.note(laptop.replica) == .int(6))
        laptop.setSkew(2 * 3_600_000)
        try laptop.replica.write(.settings, key: "note", changes: ["value": .int(7)])
        let summary = try world.sync(laptop)
        #expect(summary.restamped == 1, "\(summary)")
        #expect(try Self.note(laptop.replica) == .int(7))
        #expect(try world.freshView()["settings/note"]?["value"]?.value == .int(7))
        try world.sync(desktop)
        #expect(try Self.note(desktop.replica) == .int(7))
    }

    /// A deletion whose tombstone the server purged, brought back to life by an
    /// old copy of a home that relays what it holds: the replicas that hold
    /// the deletion see the server is behind and send it again.
    @Test func aPurgedDeletionBroughtBackByAnOldCopyIsDeletedAgain() throws {
        let world = try SyncWorld()
        let laptop = try world.machine("laptop")
        try laptop.replica.write(.settings, key: "x", changes: ["value": .int(1)])
        try world.sync(laptop)
        // An old copy of the home, from before a server restore.
        let oldHome = world.directory.file("old-home")
        try FileManager.default.copyItem(atPath: laptop.replica.home, toPath: oldHome)
        world.stopServer()
        let copy = world.directory.file("server-copy.sqlite")
        try StoreFiles.copy(world.storePath, to: copy)
        try StoreFiles.putBack(copy, over: world.storePath)
        try world.startServer()
        try world.sync(laptop) // the new epoch
        // Deleted, synced, and the tombstone purged.
        try laptop.replica.write(.settings, key: "x", changes: [RecordState.deletedField: .bool(true)])
        try world.sync(laptop)
        try world.sync(laptop) // its cursor, past the deletion, acknowledged
        #expect(try world.store.purgeTombstones(retentionMilliseconds: 0) == 1)
        // The old copy wakes up: another epoch, so it relays everything, x alive.
        let old = SimulatedMachine(name: "old", replica: try Replica.open(home: oldHome), token: laptop.token)
        #expect(try world.sync(old).relayed > 0)
        // The laptop still holds the deletion: its next sync puts it back.
        try world.sync(laptop)
        #expect(try world.freshView()["settings/x"]?[RecordState.deletedField]?.value == .bool(true))
        try world.sync(old)
        #expect(try old.replica.record(.settings, key: "x")?.isDeleted == true)
    }
}
