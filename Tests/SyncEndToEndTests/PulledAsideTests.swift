import JSON
import Replica
import SyncClient
import SyncCore
import Synchronization
import TestSupport
import Testing

/// Records a pull sets aside are kept in the replica with why, not only
/// named in the sync's message (Deploy/SECURITY.md, "A device's own writes,
/// counted": a record set aside never meets a ledger entry, and is asked for
/// again), until a pull applies them.
extension LyingServerTests {
    /// A lying server drops one record's manifest: the record is set aside,
    /// kept with why under the key the server files it by, and shown by
    /// `brsync status` (text and JSON); seeing it again keeps when it was
    /// first set aside. A day later it is asked for again by its hidden key
    /// (`pull?keys=`), once a day at most: a lying answer keeps it set aside
    /// and records not asked for are left out; the honest answer applies it
    /// and the entry leaves, as it does when an ordinary pull brings it.
    @Test(arguments: StoreKind.allCases) func aRecordSetAsideIsKeptUntilAPullAppliesIt(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let a = try world.machine("a")
        try Self.rules(a, ["one.example", "two.example"])
        let (key, _) = try KeyChangeTests.changeKey(world, a)
        let hidden = try Self.hiddenRuleKeys(a.replica, RecordCipher(key))
        let target = try #require(hidden["one.example"])
        let liar = try LyingServer(
            in: world,
            rewrite: Self.rewritingRecords { records in
                for index in records.indices where Self.hiddenKey(records[index]) == target {
                    var fields = Self.fields(records[index])
                    fields["e2e.manifest"] = nil
                    records[index] = Self.with(records[index], fields: fields)
                }
            })
        defer { liar.stop() }
        let b = try world.machine("b")
        let lied = try liar.serving(world) {
            try AccountKeyFile.add(key, home: b.replica.home)
            return try world.sync(b)
        }
        #expect(lied.problems.contains { $0.contains("carries no manifest") }, "\(lied.problems)")
        var aside = try b.replica.pulledAside()
        #expect(aside.count == 1, "\(aside)")
        #expect(aside.first?.collection == "rules" && aside.first?.filedKey == target, "\(aside)")
        // Its key opened before its manifest failed: it is named as the user knows it.
        #expect(aside.first?.shownKey == "one.example" && aside.first?.shown == "rules 'one.example'", "\(aside)")
        #expect(aside.first?.why.contains("carries no manifest") == true, "\(aside)")
        #expect(try SyncWorld.rules(b.replica) == ["two.example": "firefox"])
        let first = aside.first?.firstAtMillis ?? 0

        // `brsync status` says so, and its JSON lists it.
        let brsync = ProcessRunner.binary("brsync")
        let status = try ProcessRunner.run(brsync, ["status", "--home", b.replica.home])
        #expect(
            status.stdout.contains("set aside: 1 record(s) the server sent were never applied here")
                && status.stdout.contains("carries no manifest"), "\(status.stdout)\(status.stderr)")
        let json = try JSONValue.parse(
            try ProcessRunner.run(brsync, ["status", "--json", "--home", b.replica.home]).stdout)
        guard case .object(let members) = json, case .array(let listed)? = members["setAside"] else {
            Issue.record("no setAside: \(json)")
            return
        }
        #expect(members["setAsideFromServer"] == .int(1) && listed.count == 1, "\(json)")
        if case .object(let entry)? = listed.first {
            #expect(entry["filedKey"] == .string(target) && entry["collection"] == .string("rules"), "\(entry)")
            #expect(entry["key"] == .string("one.example"), "\(entry)")
        }

        // Served the same again (a pull from zero): one entry, first seen as before.
        try b.replica.beginReconcile()
        _ = try liar.serving(world) { try world.sync(b) }
        aside = try b.replica.pulledAside()
        #expect(aside.count == 1 && aside.first?.firstAtMillis == first, "\(aside)")

        // Asked for again only once its day has come: not at the next sync.
        let day: Int64 = 86_400_000
        _ = try world.sync(b)
        #expect(try b.replica.pulledAsideCount() == 1)
        #expect(try b.replica.pulledAsideDue(every: day, limit: 100).isEmpty)

        // A day later it is asked for by its hidden key. The lying server
        // strips it again, adds a good copy of it after that (which copy is
        // the record?) and a record nobody asked for: still set aside, the
        // rest left out, and nothing due again for a day.
        let other = try #require(hidden["two.example"])
        let extra = Mutex<JSONValue?>(nil)
        let honestTarget = Mutex<JSONValue?>(nil)
        let asking = Mutex<[String]>([])
        let worse = try LyingServer(in: world) { request, status, body in
            guard request.path == "/v1/pull", status == 200, case .object(var page)? = body,
                case .array(var records)? = page["changes"]
            else { return nil }
            let asked = request.target.contains("keys=")
            if asked { asking.withLock { $0.append(request.target) } }
            for index in records.indices {
                if Self.hiddenKey(records[index]) == other { extra.withLock { $0 = records[index] } }
                guard Self.hiddenKey(records[index]) == target else { continue }
                if !asked { honestTarget.withLock { $0 = records[index] } }
                var fields = Self.fields(records[index])
                fields["e2e.manifest"] = nil
                records[index] = Self.with(records[index], fields: fields)
            }
            if asked, let added = extra.withLock({ $0 }) { records.append(added) }
            // And the record asked for twice: a good copy after the stripped one.
            if asked, let good = honestTarget.withLock({ $0 }) { records.append(good) }
            page["changes"] = .array(records)
            return .object(page)
        }
        defer { worse.stop() }
        try b.replica.beginReconcile() // so the liar sees two.example's record to add later
        _ = try worse.serving(world) { try world.sync(b) }
        b.clock.skew += day + 3_600_000
        let stillLying = try worse.serving(world) { try world.sync(b) }
        #expect(asking.withLock { $0.count } == 1, "\(asking.withLock { $0 })")
        #expect(asking.withLock { $0.first?.contains("keys=rules:\(target)") } == true)
        #expect(
            stillLying.problems.contains { $0.contains("records not asked for, or one twice: left out") },
            "\(stillLying.problems)")
        #expect(try b.replica.pulledAsideCount() == 1)
        #expect(try b.replica.pulledAsideDue(every: day, limit: 100).isEmpty)
        #expect(try SyncWorld.rules(b.replica) == ["two.example": "firefox"])

        // Another day, the honest server: the record opens and passes, and is applied.
        b.clock.skew += day + 3_600_000
        let honest = try world.sync(b)
        #expect(!honest.problems.contains { $0.contains("set aside") }, "\(honest.problems)")
        #expect(try b.replica.pulledAside().isEmpty)
        #expect(try SyncWorld.rules(b.replica) == ["one.example": "firefox", "two.example": "firefox"])
        #expect(!(try ProcessRunner.run(brsync, ["status", "--home", b.replica.home]).stdout.contains("set aside:")))

        // Kept until a pull applies it either way: set aside again, then the
        // writer edits it and an ordinary pull brings it whole.
        try b.replica.beginReconcile()
        _ = try liar.serving(world) { try world.sync(b) }
        #expect(try b.replica.pulledAsideCount() == 1)
        _ = try a.replica.addRule(pattern: "one.example", browser: "firefox", priority: 2)
        try world.sync(a)
        let edited = try world.sync(b)
        #expect(!edited.problems.contains { $0.contains("set aside") }, "\(edited.problems)")
        #expect(try b.replica.pulledAsideCount() == 0)
    }
}
