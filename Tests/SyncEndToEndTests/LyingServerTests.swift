import BrsyncServer
import HTTP
import JSON
import Replica
import SyncClient
import SyncCore
import Synchronization
import TestSupport
import Testing

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
        let key = try KeyChangeTests.shareNewKey(world, from: a, with: [b])
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

    /// A page that names another account key than the one the request named
    /// (which the server took): the sync stops, saying so, and applies
    /// nothing of it; with the honest server it goes on.
    @Test func aPageUnderAnotherKeyThanTheRequestsStopsTheSync() throws {
        let world = try SyncWorld(.sqlite)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        try Self.rules(a, ["one.example"])
        let key = try KeyChangeTests.shareNewKey(world, from: a, with: [b])
        try Self.rules(a, ["two.example"])
        try world.sync(a)
        let before = try SyncWorld.rules(b.replica)
        let liar = try LyingServer(in: world) { request, status, body in
            guard request.path == "/v1/pull", status == 200, case .object(var page)? = body, page["key"] != nil else {
                return nil
            }
            page["key"] = .string("00000000000000ff")
            return .object(page)
        }
        defer { liar.stop() }
        #expect { _ = try liar.serving(world) { try world.sync(b) } } throws: { error in
            guard case SyncError.badAnswer(let message) = error else { return false }
            return message.contains("sealed with key 00000000000000ff") && message.contains(key.id)
        }
        #expect(try SyncWorld.rules(b.replica) == before, "nothing of the page was applied")
        try world.sync(b)
        #expect(try SyncWorld.rules(b.replica).keys.sorted() == ["one.example", "two.example"])
    }

    /// Each page's records, rewritten by `change` (the record's JSON object).
    static func rewritingRecords(_ change: @escaping @Sendable (inout [JSONValue]) -> Void) -> LyingServer.Rewrite {
        { request, status, body in
            guard request.path == "/v1/pull", status == 200, case .object(var page)? = body,
                case .array(var records)? = page["changes"], !records.isEmpty
            else { return nil }
            change(&records)
            page["changes"] = .array(records)
            return .object(page)
        }
    }

    /// The object a pulled record holds under `name` (`fields`, `versions`), or none.
    static func member(_ name: String, of record: JSONValue) -> [String: JSONValue] {
        guard case .object(let object) = record, case .object(let member)? = object[name] else { return [:] }
        return member
    }

    /// `record` with `value` under `name`.
    static func with(_ record: JSONValue, _ name: String, _ value: [String: JSONValue]) -> JSONValue {
        guard case .object(var object) = record else { return record }
        object[name] = .object(value)
        return .object(object)
    }

    static func fields(_ record: JSONValue) -> [String: JSONValue] { member("fields", of: record) }

    static func with(_ record: JSONValue, fields: [String: JSONValue]) -> JSONValue { with(record, "fields", fields) }

    /// Values swapped between two records, and a deletion flag set by the
    /// server: each record is refused by name, nothing of it applied, the
    /// machine's own copy kept; every other record syncs. An old page served
    /// again (values with their old stamps) changes nothing the machine holds.
    @Test(arguments: StoreKind.allCases) func forgedSwappedOrReplayedValuesChangeNothing(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        try Self.rules(a, ["one.example", "two.example", "three.example"])
        try KeyChangeTests.shareNewKey(world, from: a, with: [b])
        // An old page, kept by the server to serve again later.
        let old = Mutex<[JSONValue]>([])
        let recorder = try LyingServer(
            in: world, rewrite: Self.rewritingRecords { records in old.withLock { $0 += records } })
        defer { recorder.stop() }
        // a edits everything again; b pulls the new values through the recorder, which keeps the pages.
        for pattern in ["one.example", "two.example", "three.example"] {
            _ = try a.replica.addRule(pattern: pattern, browser: "firefox", priority: 7)
        }
        try world.sync(a)
        try recorder.serving(world) { try world.sync(b) }
        let held = try SyncWorld.state(b.replica)
        #expect(!old.withLock { $0 }.isEmpty)

        // The old page's values again, beside the current ones: nothing changes.
        // (A server that left the current ones out would be withholding them:
        // it can, and the machine cannot tell; see Deploy/SECURITY.md.)
        let replay = try LyingServer(
            in: world, rewrite: Self.rewritingRecords { records in records = old.withLock { $0 } + records })
        defer { replay.stop() }
        _ = try a.replica.addRule(pattern: "four.example", browser: "firefox", priority: 1)
        try world.sync(a)
        try replay.serving(world) { try world.sync(b) }
        var expected = held
        for (name, value) in try SyncWorld.state(b.replica)
        where name.contains("four.example") || name.hasPrefix("settings/") { expected[name] = value }
        #expect(try SyncWorld.state(b.replica) == expected, "a replayed page changes nothing b holds")

        // Swapped values and a forged deletion: refused by name, the rest applies.
        let liar = try LyingServer(
            in: world,
            rewrite: Self.rewritingRecords { records in
                let rules = records.indices.filter { Self.fields(records[$0])["browser"] != nil }
                if rules.count >= 2 {
                    var first = Self.fields(records[rules[0]]), second = Self.fields(records[rules[1]])
                    (first["browser"], second["browser"]) = (second["browser"], first["browser"])
                    records[rules[0]] = Self.with(records[rules[0]], fields: first)
                    records[rules[1]] = Self.with(records[rules[1]], fields: second)
                }
                if rules.count >= 4 {
                    var fields = Self.fields(records[rules[2]])
                    if case .object(var flag)? = fields["deleted"] {
                        flag["v"] = .bool(true); fields["deleted"] = .object(flag)
                    }
                    records[rules[2]] = Self.with(records[rules[2]], fields: fields)
                }
            })
        defer { liar.stop() }
        for pattern in ["one.example", "two.example", "three.example"] {
            _ = try a.replica.addRule(pattern: pattern, browser: "firefox", priority: 9)
        }
        _ = try a.replica.addRule(pattern: "five.example", browser: "firefox", priority: 1)
        try world.sync(a)
        let before = try SyncWorld.rules(b.replica)
        let lied = try liar.serving(world) { try world.sync(b) }
        let refused = lied.problems.filter { $0.contains("set aside record") }
        #expect(refused.count == 3, "\(lied.problems)")
        #expect(
            refused.allSatisfy { $0.contains("does not open") || $0.contains("not the one the device sealed") },
            "\(refused)")
        let after = try SyncWorld.rules(b.replica)
        #expect(
            after.keys.sorted() == (before.keys.sorted() + ["five.example"]).sorted(),
            "nothing deleted; the honest record applied")
        // Honest again, b catches up with everything.
        try world.sync(b)
        #expect(try SyncWorld.rules(b.replica) == (try SyncWorld.rules(a.replica)))
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
        #expect(
            Set(lied.removed.filter { $0.collection == "rules" }.map(\.key)) == ["one.example", "two.example"],
            "\(lied)")
        #expect(try SyncWorld.rules(b.replica).isEmpty)
        for removed in try b.replica.removedRecords(limit: 10) { _ = try b.replica.restore(removed: removed.id) }
        #expect(try SyncWorld.rules(b.replica).keys.sorted() == ["one.example", "two.example"])
    }
}
