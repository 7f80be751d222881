import Foundation
import Replica
import SyncClient
import SyncCore
import SystemServices
import TestSupport
import Testing

/// A machine asks the server where it holds the machine's own stream of
/// changes (``SyncClient/ownChainStanding()``) and tells its own chain,
/// a restored server's and another home's under its id apart.
@Suite(.serialized) struct OwnChainTests {
    @Test func aMachineIsToldWhereTheServerHoldsItsChanges() throws {
        let world = try SyncWorld()
        let laptop = try world.machine("laptop")
        // Nothing pushed yet, and the server holds nothing of it.
        #expect(try world.client(laptop).ownChainStanding() == .ours)
        try laptop.replica.write(.settings, key: "note", changes: ["value": .int(1)])
        try world.sync(laptop)
        #expect(try world.client(laptop).ownChainStanding() == .ours)
        let backedUp = try laptop.replica.syncState().pushedThrough
        let backup = try world.backupServer()
        try laptop.replica.write(.settings, key: "note", changes: ["value": .int(2)])
        try world.sync(laptop)
        #expect(try laptop.replica.syncState().pushedThrough > backedUp)
        // A block-level copy of the home (same file identity, same device id), idle for now.
        let copyHome = world.directory.file("copy")
        try FileManager.default.copyItem(atPath: laptop.replica.home, toPath: copyHome)
        let copy = try Replica.open(home: copyHome)
        try copy.database.run("DELETE FROM meta WHERE key = 'instance'")
        // The server restored from before the second push: behind this machine.
        try world.restoreServer(backup)
        #expect(try world.client(laptop).ownChainStanding() == .behind(last: backedUp))
        // The machine's next sync sends what the restore lost: its own again.
        try world.sync(laptop)
        #expect(try world.client(laptop).ownChainStanding() == .ours)
        // The laptop and its copy each make the next change under the id; the
        // laptop's goes up first. To the copy, the server's chain is another home's.
        try laptop.replica.write(.settings, key: "note", changes: ["value": .int(3)])
        try copy.write(.settings, key: "note", changes: ["value": .int(4)])
        try world.sync(laptop)
        let copyMachine = SimulatedMachine(name: "copy", replica: copy, token: laptop.token)
        #expect(try world.client(copyMachine).ownChainStanding() == .another)
        #expect(try world.client(laptop).ownChainStanding() == .ours)
        // Asking changed nothing: the copy's edit is still unpushed and its
        // cursor where it was; its next sync takes an id of its own.
        #expect(try copy.unpushedCount() == 1)
        let summary = try world.sync(copyMachine)
        #expect(summary.newDeviceID != nil, "\(summary)")
        #expect(try world.client(copyMachine).ownChainStanding() == .ours)
        // The laptop shares the copy's token, whose last push was under the
        // copy's new id: it is still told where its own id stands.
        #expect(try world.client(laptop).ownChainStanding() == .ours)
    }
}
