import BrsyncServer
import HTTP
import JSON
import Replica
import SyncClient
import SyncCore
import Testing
import TestSupport

/// What a lying server can no longer do (Deploy/SECURITY.md, "A lying
/// server"): each lie is refused or harmless, the record set intact, and the
/// user told.
@Suite struct LyingServerTests {
    /// A server that says `reset` (it purged deletions this machine never
    /// pulled) and then holds nothing: the machine would drop every record.
    static func resetWithNothing() -> LyingServer.Rewrite {
        { request, status, body in
            guard request.path == "/v1/pull", status == 200, case .object(var page)? = body else { return nil }
            if !request.target.contains("full=1") { page["reset"] = .bool(true) }
            page["changes"] = .array([])
            return .object(page)
        }
    }

    static func rules(_ machine: SimulatedMachine, _ patterns: [String]) throws {
        for pattern in patterns { try KeyChangeTests.rule(machine, pattern) }
    }

    /// In an encrypted account a record leaves a machine only with a
    /// deletion a key holder sealed: a `reset` with records left out drops
    /// nothing; what the server left out is sent back to it, and the sync
    /// says so. An honest server never says `reset` there: it keeps an
    /// encrypted account's deletions.
    @Test(arguments: StoreKind.allCases) func aResetDropsNothingInAnEncryptedAccount(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        try Self.rules(a, ["one.example", "two.example", "gone.example"])
        let (key, _) = try KeyChangeTests.changeKey(world, a)
        try KeyChangeTests.addKey(world, b, key)
        _ = try a.replica.removeRule(pattern: "gone.example")
        try world.sync(a)
        try world.sync(b)
        let held = try SyncWorld.rules(b.replica)
        #expect(held.keys.sorted() == ["one.example", "two.example"])
        // The honest server keeps the encrypted account's tombstone.
        #expect(try world.store.purgeTombstones(retentionMilliseconds: 0) == 0)
        let liar = try LyingServer(in: world, rewrite: Self.resetWithNothing())
        defer { liar.stop() }
        let lied = try liar.serving(world) { try world.sync(b) }
        #expect(liar.rewritten.value.load(ordering: .relaxed) > 0)
        #expect(try SyncWorld.rules(b.replica) == held, "nothing dropped on the server's word")
        #expect(lied.removed.isEmpty && lied.problems.contains { $0.contains("kept, and sent to it again") }, "\(lied)")
        // Back with the honest server, everything is there, and a new machine gets it all, the deletion too.
        try world.sync(b)
        let c = try world.machine("c")
        try KeyChangeTests.addKey(world, c, key)
        #expect(try SyncWorld.rules(c.replica) == held)
    }

    /// In a readable account the server is trusted with the content, and a
    /// reconcile drops what it no longer has, but never silently: every
    /// record dropped is named and restorable.
    @Test func aResetInAReadableAccountNamesWhatItDropsAndCanBeUndone() throws {
        let world = try SyncWorld(.sqlite)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        try Self.rules(a, ["one.example", "two.example"])
        try world.sync(a)
        try world.sync(b)
        let liar = try LyingServer(in: world, rewrite: Self.resetWithNothing())
        defer { liar.stop() }
        let lied = try liar.serving(world) { try world.sync(b) }
        #expect(Set(lied.removed.filter { $0.collection == "rules" }.map(\.key)) == ["one.example", "two.example"], "\(lied)")
        #expect(try SyncWorld.rules(b.replica).isEmpty)
        for removed in try b.replica.removedRecords(limit: 10) { _ = try b.replica.restore(removed: removed.id) }
        #expect(try SyncWorld.rules(b.replica).keys.sorted() == ["one.example", "two.example"])
    }
}
