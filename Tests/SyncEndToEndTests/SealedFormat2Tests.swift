import JSON
import Replica
import Storage
import SyncClient
import SyncCore
import Synchronization
import TestSupport
import Testing

/// Sealed format 2 end to end (docs/sealed-format-v2.md): machines that
/// speak protocol 6 turn an encrypted account to format 2 once all of them
/// do, seal their new writes as one box each, and read records that mix
/// both formats; a machine left at protocol 5 is told to upgrade and keeps
/// its edits.
@Suite struct SealedFormat2Tests {
    /// The protocol before format 2 (a brsync not yet upgraded).
    static let older = Wire.sealedFormatProtocol - 1

    /// Whether the server holds `pattern`'s record with boxes (format 2), by its hidden key.
    static func isBoxed(
        _ world: SyncWorld, _ cipher: RecordCipher, _ pattern: String, on machine: SimulatedMachine
    ) throws -> Bool {
        let hidden = try #require(try LyingServerTests.hiddenRuleKeys(machine.replica, cipher)[pattern])
        let record = try #require(try world.store.records(account: "alice").first { $0.key == hidden })
        return record.state.fields.values.contains { RecordState.isBox($0.value) }
    }

    /// `pattern` → `browser` on `machine`, with the browsers it names.
    static func rule(_ machine: SimulatedMachine, _ pattern: String, _ browser: String, priority: Int? = nil) throws {
        for id in ["firefox", "chrome"] where try machine.replica.browsers().allSatisfy({ $0.browser.id != id }) {
            _ = try machine.replica.addBrowser(id: id, name: nil, format: nil, scheme: nil, exec: nil)
        }
        _ = try machine.replica.addRule(pattern: pattern, browser: browser, priority: priority)
    }

    @Test(arguments: StoreKind.allCases) func anAccountWhoseMachinesAllUpgradeWritesBoxes(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        (a.protocolVersion, b.protocolVersion) = (Self.older, Self.older)
        try Self.rule(a, "before.example", "firefox")
        #expect(try world.sync(a).problems.isEmpty)
        let key = try KeyChangeTests.shareNewKey(world, from: a, with: [b])
        let cipher = RecordCipher(key)
        #expect(try !Self.isBoxed(world, cipher, "before.example", on: a))

        // a upgrades: b, seen lately at 5, holds the account in format 1.
        a.protocolVersion = Wire.sealedFormatProtocol
        #expect(try world.sync(a).problems.isEmpty)
        try Self.rule(a, "one.example", "firefox")
        #expect(try world.sync(a).problems.isEmpty)
        #expect(try a.replica.sealedFormat() == .one)
        #expect(try !Self.isBoxed(world, cipher, "one.example", on: a))

        // b upgrades: the account is marked; each machine learns it at its next pull.
        b.protocolVersion = Wire.sealedFormatProtocol
        #expect(try world.sync(b).problems.isEmpty)
        #expect(try world.sync(b).problems.isEmpty)
        #expect(try world.sync(a).problems.isEmpty)
        #expect(try a.replica.sealedFormat() == .two && b.replica.sealedFormat() == .two)

        // New writes go up as boxes; an edit of a format 1 record makes it mixed.
        try Self.rule(a, "two.example", "chrome")
        try Self.rule(a, "before.example", "chrome", priority: 50)
        #expect(try world.sync(a).problems.isEmpty)
        #expect(try Self.isBoxed(world, cipher, "two.example", on: a))
        #expect(try Self.isBoxed(world, cipher, "before.example", on: a))
        #expect(try world.sync(b).problems.isEmpty)
        #expect(try SyncWorld.rules(b.replica) == SyncWorld.rules(a.replica))
        #expect(try SyncWorld.rules(b.replica)["two.example"] == "chrome")
        #expect(try SyncWorld.rules(b.replica)["before.example"] == "chrome")
        #expect(try b.replica.rule(pattern: "before.example")?.priority == 50)

        // A new machine with the key reads every record, whatever its format.
        let fresh = try world.machine("fresh")
        fresh.protocolVersion = Wire.sealedFormatProtocol
        try AccountKeyFile.add(key, home: fresh.replica.home)
        #expect(try world.sync(fresh).problems.isEmpty)
        #expect(try SyncWorld.rules(fresh.replica) == SyncWorld.rules(a.replica))

        // A machine still at protocol 5 is told to upgrade; its edit stays for later.
        let c = try world.machine("c")
        c.protocolVersion = Self.older
        try AccountKeyFile.add(key, home: c.replica.home)
        try Self.rule(c, "old.example", "firefox")
        #expect {
            try world.sync(c)
        } throws: { error in
            "\(error)".contains("sealed in format 2") && "\(error)".contains("upgrade")
        }
        #expect(try c.replica.unpushedCount() == 3, "the rule and the two browsers it added")
        // Upgraded, it sends them in the format they were pinned to when the
        // refused push first took them (format 1: it had not pulled the mark
        // yet), so a retry is the same push; its next edit is a box.
        c.protocolVersion = Wire.sealedFormatProtocol
        #expect(try world.sync(c).problems.isEmpty)
        #expect(try c.replica.unpushedCount() == 0 && c.replica.sealedFormat() == .two)
        #expect(try !Self.isBoxed(world, cipher, "old.example", on: c))
        try Self.rule(c, "old.example", "chrome")
        #expect(try world.sync(c).problems.isEmpty)
        #expect(try Self.isBoxed(world, cipher, "old.example", on: c))
        #expect(try world.sync(a).problems.isEmpty)
        #expect(try SyncWorld.rules(a.replica)["old.example"] == "chrome")
    }

    /// A machine keeps the boxes it pulls, and its relay sends each write in
    /// the box its writer sealed: after a restore lost a record, the server
    /// holds it again exactly as its writer sent it, never sealed anew by
    /// the relaying machine (a field without its write is what the outside
    /// review's F1 rolled back). Boxes of stamps a record no longer holds go.
    @Test(arguments: StoreKind.allCases) func aRelaySendsTheBoxesTheirWritersSealed(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        let key = try KeyChangeTests.shareNewKey(world, from: a, with: [b])
        let cipher = RecordCipher(key)
        for machine in [a, b, a] { #expect(try world.sync(machine).problems.isEmpty) }
        #expect(try a.replica.sealedFormat() == .two && b.replica.sealedFormat() == .two)
        let copy = try world.backupServer()
        try Self.rule(a, "relay.example", "firefox")
        #expect(try world.sync(a).problems.isEmpty)
        let hidden = try #require(try LyingServerTests.hiddenRuleKeys(a.replica, cipher)["relay.example"])
        let written = try #require(try world.store.records(account: "alice").first { $0.key == hidden })
        #expect(try world.sync(b).problems.isEmpty)
        let ruleKey = try #require(
            try b.replica.records(.rules).first { $0.1.fields["pattern"]?.value == .string("relay.example") }?.0)
        let kept = try b.replica.keptBoxes(.rules, key: ruleKey)
        #expect(kept.count == 1 && kept.first.map { written.state.fields.values.contains($0) } == true)

        // b does not know the mark (a server that never sends it): its boxes go as they came all the same.
        try Database(path: b.replica.home + "/replica.sqlite").execute("DELETE FROM meta WHERE key = 'sealed_format'")
        #expect(try b.replica.sealedFormat() == .one)
        try world.restoreServer(copy)
        let liar = try LyingServer(in: world) { request, status, body in
            guard request.path.hasPrefix("/v1/pull"), status == 200, case .object(var answer)? = body else {
                return nil
            }
            answer["sealedFormat"] = nil
            return .object(answer)
        }
        defer { liar.stop() }
        _ = try liar.serving(world) { try world.sync(b) }
        #expect(try b.replica.sealedFormat() == .one)
        let relayed = try #require(try world.store.records(account: "alice").first { $0.key == hidden })
        #expect(relayed.state.fields == written.state.fields, "the record as its writer sent it")
        #expect(try world.sync(a).problems.isEmpty)
        #expect(try world.sync(b).problems.isEmpty)
        #expect(try SyncWorld.rules(a.replica) == SyncWorld.rules(b.replica))

        // An edit elsewhere moves the rule on: b keeps the new write's box, not the old one.
        try Self.rule(a, "relay.example", "chrome")
        #expect(try world.sync(a).problems.isEmpty)
        #expect(try world.sync(b).problems.isEmpty)
        let now = try b.replica.keptBoxes(.rules, key: ruleKey)
        let record = try #require(try world.store.records(account: "alice").first { $0.key == hidden })
        #expect(!now.isEmpty && now.allSatisfy { record.state.fields.values.contains($0) } && now != kept)
    }

    /// A lying server cannot make a machine trade the box its writer sealed
    /// for a relay's part of it (genuine: a relay seals the fields it still
    /// holds at a stamp, and the server may keep either): the part opens
    /// (its field is the write's), but the machine keeps the writer's box,
    /// which holds more of the write. A box kept before boxes had weights
    /// (replica schema 33 gave it 0) is weighed first, once, with the key
    /// (re-review of format 2, F2); a kept row that does not open goes.
    @Test(arguments: StoreKind.allCases, [false, true])
    func aMachineKeepsTheWritersBoxOverAPartOfIt(_ kind: StoreKind, keptBeforeWeights: Bool) throws {
        let world = try SyncWorld(kind)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        let key = try KeyChangeTests.shareNewKey(world, from: a, with: [b])
        let cipher = RecordCipher(key)
        for machine in [a, b, a] { #expect(try world.sync(machine).problems.isEmpty) }
        try Self.rule(a, "part.example", "firefox")
        #expect(try world.sync(a).problems.isEmpty)
        #expect(try world.sync(b).problems.isEmpty)
        let hidden = try #require(try LyingServerTests.hiddenRuleKeys(a.replica, cipher)["part.example"])
        let written = try #require(try world.store.records(account: "alice").first { $0.key == hidden })
        let ruleKey = try #require(
            try b.replica.records(.rules).first { $0.1.fields["pattern"]?.value == .string("part.example") }?.0)
        let whole = try #require(written.state.fields["pattern"])
        #expect(try b.replica.keptBoxes(.rules, key: ruleKey) == [whole])

        // The server serves the record again (b pulls from the start) with
        // the write's fields in a part of it: every field, no manifest (the
        // key and the manifest still name the writer's box, which is then
        // offered to keep by no field of the record's own).
        let write = try cipher.openBox(
            try #require(whole.value.stringValue), collection: "rules", hiddenKey: hidden, stamp: whole.stamp)
        let part = StampedValue(
            .string(
                cipher.sealBox(
                    RecordCipher.Write(key: write.key, fields: write.fields), collection: "rules", hiddenKey: hidden,
                    stamp: whole.stamp)),
            stamp: whole.stamp)
        var lied = written.state.fields
        for (name, register) in lied
        where register == whole && name != RecordCipher.keyField && name != RecordCipher.manifestField {
            lied[name] = part
        }
        let liedFields = try JSONValue.parse(RecordState.encodeFields(lied))
        let liar = try LyingServer(
            in: world,
            rewrite: LyingServerTests.rewritingRecords { records in
                for (index, record) in records.enumerated() where LyingServerTests.hiddenKey(record) == hidden {
                    guard case .object(let fields) = liedFields else { return }
                    records[index] = LyingServerTests.with(record, fields: fields)
                }
            })
        defer { liar.stop() }
        let file = try Database(path: b.replica.home + "/replica.sqlite")
        try file.execute("UPDATE meta SET value = '0' WHERE key = 'pull_cursor'")
        if keptBeforeWeights {
            try file.execute(
                """
                UPDATE boxes SET weight = 0;
                INSERT INTO boxes (collection, key, stamp, sealed, weight)
                VALUES ('rules', 'gone.example', '\(whole.stamp)', 'e2.not-a-box', 0);
                INSERT INTO boxes (collection, key, stamp, sealed, weight) VALUES (X'00ff', X'00', X'ff', X'00', 0);
                INSERT OR REPLACE INTO meta (key, value) VALUES ('boxes_unweighed', '1');
                """)
        }
        _ = try liar.serving(world) { try world.sync(b) }
        #expect(liar.rewritten.value.load(ordering: .relaxed) > 0)
        #expect(try b.replica.keptBoxes(.rules, key: ruleKey) == [whole], "the writer's box, not the part")
        #expect(try SyncWorld.rules(b.replica)["part.example"] == "firefox")
        #expect(try file.scalar("SELECT COUNT(*) FROM boxes WHERE weight = 0")?.intValue == 0)
        #expect(try file.scalar("SELECT COUNT(*) FROM boxes WHERE key = 'gone.example'")?.intValue == 0)
        #expect(try file.scalar("SELECT COUNT(*) FROM meta WHERE key = 'boxes_unweighed'")?.intValue == 0)
    }

    /// A writer's relay of its own write sends the whole box its push
    /// sealed (the same bytes), not the part of the write the record still
    /// holds once a later edit took some fields over: a part without the
    /// write's manifest is what a server could serve with a sibling rolled
    /// back behind it (re-review of format 2, F1), and an honest server
    /// might keep it over the whole box by its tie rule.
    @Test(arguments: StoreKind.allCases) func aWritersRelaySendsItsOwnWritesWhole(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        let key = try KeyChangeTests.shareNewKey(world, from: a, with: [b])
        let cipher = RecordCipher(key)
        for machine in [a, b, a] { #expect(try world.sync(machine).problems.isEmpty) }
        #expect(try a.replica.sealedFormat() == .two)
        try Self.rule(a, "own.example", "firefox")
        #expect(try world.sync(a).problems.isEmpty)
        let hidden = try #require(try LyingServerTests.hiddenRuleKeys(a.replica, cipher)["own.example"])
        let first = try #require(try world.store.records(account: "alice").first { $0.key == hidden })
        let whole = try #require(first.state.fields["pattern"])
        try Self.rule(a, "own.example", "chrome")
        #expect(try world.sync(a).problems.isEmpty)
        let second = try #require(try world.store.records(account: "alice").first { $0.key == hidden })
        #expect(second.state.fields["pattern"] == whole && second.state.fields["browser"]!.stamp > whole.stamp)

        let sent = Mutex<[JSONValue]>([])
        let recorder = try LyingServer(in: world) { request, _, _ in
            if request.path == "/v1/relay",
                case .object(let body)? = try? JSONValue.parse(String(decoding: request.body, as: UTF8.self)),
                case .array(let records)? = body["records"]
            {
                sent.withLock { $0 += records.filter { LyingServerTests.hiddenKey($0) == hidden } }
            }
            return nil
        }
        defer { recorder.stop() }
        try a.replica.requireFullRelay()
        #expect(try recorder.serving(world) { try world.sync(a) }.problems.isEmpty)
        let relayed = try #require(sent.withLock { $0 }.first, "a relayed the rule")
        guard case .object(let written) = try JSONValue.parse(RecordState.encodeFields(second.state.fields)) else {
            Issue.record("fields are an object")
            return
        }
        #expect(LyingServerTests.fields(relayed) == written, "every write in the box its push sealed")
        let held = try #require(try world.store.records(account: "alice").first { $0.key == hidden })
        #expect(held.state.fields == second.state.fields)
        #expect(try world.sync(b).problems.isEmpty)
        #expect(try SyncWorld.rules(b.replica)["own.example"] == "chrome")
    }
}
