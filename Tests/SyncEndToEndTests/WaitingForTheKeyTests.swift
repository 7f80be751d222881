import Foundation
import Replica
import SyncClient
import TestSupport
import Testing

/// Edits a machine makes while it has not learned of a key change (the
/// account encrypted, or its key rotated, elsewhere): when it adds the key
/// they go up with the time they were made, later edits made elsewhere
/// still win, and the values that lost are kept where the docs say.
@Suite(.serialized) struct WaitingForTheKeyTests {
    /// a sets shared.example's priority to 10 and syncs; b sets it to 20
    /// later (by the clock, not only by the counter), without syncing.
    static func aSyncsThenBEditsLater(_ world: SyncWorld, _ a: SimulatedMachine, _ b: SimulatedMachine) throws {
        try a.replica.addRule(pattern: "shared.example", browser: "firefox", priority: 10)
        try world.sync(a)
        usleep(5_000)
        try b.replica.addRule(pattern: "shared.example", browser: "firefox", priority: 20)
    }

    /// b edits a rule while it cannot sync (a encrypted the account; b has
    /// no key yet); a edits the same rule later and syncs. When b adds the
    /// key, its edit goes up with the time it was made, not the time it is
    /// sent: a's later edit stays, on every machine, and b keeps its own
    /// value as a lost conflict.
    @Test(arguments: StoreKind.allCases) func anEditWaitingForTheKeyKeepsItsTime(_ kind: StoreKind) throws {
        let (world, a, b) = try KeyChangeTests.twoMachinesWithARule(kind)
        let (key, _) = try KeyChangeTests.changeKey(world, a)
        try b.replica.addRule(pattern: "shared.example", browser: "firefox", priority: 10)
        #expect(throws: SyncError.self) { try world.sync(b) }
        usleep(5_000) // a's edit is later by the clock, not only by the counter
        try a.replica.addRule(pattern: "shared.example", browser: "firefox", priority: 20)
        try world.sync(a)
        try KeyChangeTests.addKey(world, b, key)
        try world.sync(a)
        for machine in [a, b] {
            #expect(try machine.replica.rule(pattern: "shared.example")?.priority == 20, "\(machine.name)")
        }
        #expect(try b.replica.conflicts(limit: 10).contains { $0.field == "priority" })
    }

    /// a edits a rule and syncs; b edits it later without syncing; a turns
    /// encryption on, then b adds the key. b's edit wins, and a keeps its
    /// own value as a conflict, as without the key change: a wrote it under
    /// the id it had before the key change gave it a new one, and a value
    /// of an id a machine went by is still its own. (b's edit reached the
    /// server in its relay, which reports no losses: b keeps nothing.)
    @Test(arguments: StoreKind.allCases) func aValueOverwrittenByAnEditWaitingForTheKeyIsKeptWhereItWasWritten(
        _ kind: StoreKind
    ) throws {
        let (world, a, b) = try KeyChangeTests.twoMachinesWithARule(kind)
        try Self.aSyncsThenBEditsLater(world, a, b)
        let (key, _) = try KeyChangeTests.changeKey(world, a)
        try KeyChangeTests.addKey(world, b, key)
        try world.sync(a)
        for machine in [a, b] {
            #expect(try machine.replica.rule(pattern: "shared.example")?.priority == 20, "\(machine.name)")
        }
        let kept = try a.replica.conflicts(limit: 10).map { "\($0.field) \($0.lost.value) -> \($0.winner.value)" }
        #expect(kept == ["priority int(10) -> int(20)"], "\(kept)")
    }

    /// a changes a rule's priority and b its browser, neither having
    /// synced; then a rotates the key (syncing its edit) and b adds the new
    /// one. Each changed a field the other had not, so no machine logs a
    /// conflict, though b's first sync with the new key merges whole
    /// records: the priority b held (a's earlier value, which a replaced
    /// itself) and the browser b replaced itself are not "lost".
    @Test func fieldsEditedApartAcrossARotationLogNoConflict() throws {
        let (world, a, b) = try KeyChangeTests.twoMachinesWithARule(.sqlite)
        _ = try a.replica.addBrowser(id: "chrome", name: nil, format: nil, scheme: nil, exec: nil)
        try world.sync(a)
        try KeyChangeTests.shareNewKey(world, from: a, with: [b])
        for machine in [a, b] { try world.sync(machine) }
        try a.replica.addRule(pattern: "shared.example", browser: "firefox", priority: 10)
        usleep(5_000)
        try b.replica.addRule(pattern: "shared.example", browser: "chrome", priority: nil)
        let (key, _) = try KeyChangeTests.changeKey(world, a)
        #expect(throws: SyncError.self) { try world.sync(b) }
        try KeyChangeTests.addKey(world, b, key)
        try world.sync(a)
        for machine in [a, b] {
            let rule = try machine.replica.rule(pattern: "shared.example")
            #expect(rule?.browser == "chrome" && rule?.priority == 10, "\(machine.name): \(String(describing: rule))")
            let kept = try machine.replica.conflicts(limit: 10).map {
                "\($0.field) \($0.lost.value) -> \($0.winner.value)"
            }
            #expect(kept.isEmpty, "\(machine.name): \(kept)")
        }
    }

    /// After a rotation b has not learned, a edits a rule and syncs; b
    /// edits it later, then adds the new key. b's edit wins, and a keeps
    /// its own value as a conflict, as between two machines: the record b
    /// relays under the new key carries, for b's edit, the manifest b's log
    /// kept (what b held when it made the edit), not the record as b holds
    /// it after pulling a's value (which counted a's edit as seen). That
    /// record and b's push of the edit carry one stamp, and which of the
    /// two the server kept went by their sealed bytes: five rounds.
    @Test func aValueOverwrittenByAnEditWaitingForARotationIsKeptWhereItWasWritten() throws {
        for round in 1...5 {
            let (world, a, b) = try KeyChangeTests.twoMachinesWithARule(.sqlite)
            try KeyChangeTests.shareNewKey(world, from: a, with: [b])
            for machine in [a, b] { try world.sync(machine) }
            let (key, _) = try KeyChangeTests.changeKey(world, a)
            try Self.aSyncsThenBEditsLater(world, a, b)
            #expect(throws: SyncError.self) { try world.sync(b) }
            try KeyChangeTests.addKey(world, b, key)
            try world.sync(a)
            for machine in [a, b] {
                #expect(try machine.replica.rule(pattern: "shared.example")?.priority == 20, "\(machine.name)")
                let kept = try machine.replica.conflicts(limit: 10).map { "\($0.field) \($0.lost.value)" }
                #expect(kept == ["priority int(10)"], "round \(round), \(machine.name)")
            }
        }
    }

    /// b edits while its clock runs two hours fast and it cannot sync (no
    /// key yet); the clock is put right, then b adds the key. The edit goes
    /// up stamped from the server's clock, as a refused push's is, not with
    /// its future stamp in the relay that follows the key change: no
    /// machine's clock runs on from two hours ahead, and a's next edit wins.
    @Test(arguments: StoreKind.allCases) func anEditMadeOnAFastClockWaitingForTheKeyIsStampedAgain(
        _ kind: StoreKind
    ) throws {
        let (world, a, b) = try KeyChangeTests.twoMachinesWithARule(kind)
        let (key, _) = try KeyChangeTests.changeKey(world, a)
        b.setSkew(2 * 3_600_000)
        try b.replica.addRule(pattern: "shared.example", browser: "firefox", priority: 10)
        try b.replica.addRule(pattern: "fast.example", browser: "firefox", priority: nil)
        #expect(throws: SyncError.self) { try world.sync(b) }
        b.setSkew(0)
        try KeyChangeTests.addKey(world, b, key)
        try world.sync(a)
        let ahead = Int64(Date().timeIntervalSince1970 * 1000) + 300_000
        for machine in [a, b] {
            let stamps = try machine.replica.records(.rules).flatMap { $0.state.fields.values.map(\.stamp) }
            #expect(stamps.allSatisfy { $0.wallMillis <= ahead }, "\(machine.name): \(stamps.max()!)")
            #expect(try machine.replica.rule(pattern: "fast.example") != nil, "\(machine.name)")
        }
        usleep(5_000)
        try a.replica.addRule(pattern: "shared.example", browser: "firefox", priority: 30)
        for machine in [a, b] { try world.sync(machine) }
        for machine in [a, b] {
            #expect(try machine.replica.rule(pattern: "shared.example")?.priority == 30, "\(machine.name)")
        }
    }
}
