import JSON
import Replica
import SyncClient
import SyncCore
import Synchronization
import TestSupport
import Testing

/// Records sealed as records (Deploy/SECURITY.md, "A lying server", 2): a
/// machine that does not hold a record yet is never shown a state of it that
/// never existed.
extension LyingServerTests {
    /// The hidden key of each rule of `replica`, by pattern.
    static func hiddenRuleKeys(_ replica: Replica, _ cipher: RecordCipher) throws -> [String: String] {
        var keys: [String: String] = [:]
        for (key, state) in try replica.records(.rules) {
            if case .string(let pattern)? = state.fields["pattern"]?.value {
                keys[pattern] = cipher.hiddenKey(collection: "rules", key: key)
            }
        }
        return keys
    }

    static func hiddenKey(_ record: JSONValue) -> String {
        guard case .object(let object) = record, case .string(let key)? = object["key"] else { return "" }
        return key
    }

    static func versions(_ record: JSONValue) -> [String: JSONValue] { member("versions", of: record) }

    static func with(_ record: JSONValue, versions: [String: JSONValue]) -> JSONValue {
        with(record, "versions", versions)
    }

    /// A new machine is served records the server cut or mixed with their
    /// past: a value rolled back to an older one (with its old stamp, which
    /// opens), a deletion flag dropped (the deleted rule would come back), a
    /// version vector cut (a write hidden), a manifest dropped, an older
    /// manifest beside newer values. Each is refused by name and nothing of
    /// it applied; a forged version-vector entry is harmless (values are
    /// decided by sealed stamps); every other record syncs. The honest
    /// server then gives a new machine everything. In both sealed formats
    /// (format 2's boxes are caught by its own checks, in its own words).
    @Test(arguments: StoreKind.allCases, Wire.SealedFormat.allCases)
    func aRecordRolledBackCutOrRevivedIsRefusedByName(_ kind: StoreKind, format: Wire.SealedFormat) throws {
        let world = try SyncWorld(kind)
        world.protocolVersion = format == .one ? SealedFormat2Tests.older : Wire.protocolVersion
        let a = try world.machine("a")
        let patterns = ["one.example", "two.example", "three.example", "four.example", "five.example", "six.example"]
        try Self.rules(a, patterns)
        _ = try a.replica.addBrowser(id: "chrome", name: nil, format: nil, scheme: nil, exec: nil)
        let (key, _) = try KeyChangeTests.changeKey(world, a)
        let hidden = try Self.hiddenRuleKeys(a.replica, RecordCipher(key))
        #expect(hidden.count == patterns.count)

        // The records as they are now, kept by the server to serve later.
        let old = Mutex<[String: JSONValue]>([:])
        let recorder = try LyingServer(
            in: world,
            rewrite: Self.rewritingRecords { records in
                old.withLock { for record in records { $0[Self.hiddenKey(record)] = record } }
            })
        defer { recorder.stop() }
        let b = try world.machine("b")
        try recorder.serving(world) { try KeyChangeTests.addKey(world, b, key) }
        #expect(old.withLock { $0.count } >= patterns.count)

        // a moves one, five and six to chrome and deletes two.
        for pattern in ["one.example", "five.example", "six.example"] {
            _ = try a.replica.addRule(pattern: pattern, browser: "chrome", priority: nil)
        }
        _ = try a.replica.removeRule(pattern: "two.example")
        try world.sync(a)

        let liar = try LyingServer(
            in: world,
            rewrite: Self.rewritingRecords { records in
                let before = old.withLock { $0 }
                for index in records.indices {
                    let record = records[index]
                    var fields = Self.fields(record)
                    switch Self.hiddenKey(record) {
                    case hidden["one.example"]:
                        fields["browser"] = Self.fields(before[Self.hiddenKey(record)]!)["browser"]
                    case hidden["two.example"]:
                        fields["deleted"] = nil
                        fields["e2e.deleted"] = nil
                    case hidden["three.example"]:
                        records[index] = Self.with(record, versions: [:])
                        continue
                    case hidden["four.example"]:
                        var versions = Self.versions(record)
                        versions["feedfacefeedface"] = .int(3)
                        records[index] = Self.with(record, versions: versions)
                        continue
                    case hidden["five.example"]:
                        fields["e2e.manifest"] = nil
                    case hidden["six.example"]:
                        fields["e2e.manifest"] = Self.fields(before[Self.hiddenKey(record)]!)["e2e.manifest"]
                    default:
                        continue
                    }
                    records[index] = Self.with(record, fields: fields)
                }
            })
        defer { liar.stop() }
        let c = try world.machine("c")
        let lied = try liar.serving(world) {
            try AccountKeyFile.add(key, home: c.replica.home)
            return try world.sync(c)
        }
        let refused = lied.problems.filter { $0.contains("set aside record") }
        func refusal(_ pattern: String) -> String? { refused.first { $0.contains("'\(pattern)'") } }
        #expect(refusal("one.example")?.contains("field \"browser\" was rolled back to") == true, "\(refused)")
        let dropped = format == .one ? "its deletion flag was dropped" : "field \"deleted\" of the write of"
        #expect(refusal("two.example")?.contains(dropped) == true, "\(refused)")
        #expect(refusal("three.example")?.contains("its version vector hides a write") == true, "\(refused)")
        #expect(refusal("five.example")?.contains("carries no manifest") == true, "\(refused)")
        #expect(refusal("six.example")?.contains("came without a manifest") == true, "\(refused)")
        #expect(refused.count == 5, "\(refused)")
        #expect(
            try SyncWorld.rules(c.replica) == ["four.example": "firefox"],
            "nothing of a refused record applied; a forged entry changes no value")

        // The honest server gives a new machine everything as a has it.
        let d = try world.machine("d")
        let honest = try { () throws -> SyncClient.Summary in
            try AccountKeyFile.add(key, home: d.replica.home)
            return try world.sync(d)
        }()
        #expect(!honest.problems.contains { $0.contains("set aside") }, "\(honest.problems)")
        #expect(try SyncWorld.rules(d.replica) == (try SyncWorld.rules(a.replica)))
        #expect(
            try SyncWorld.rules(d.replica)["two.example"] == nil
                && (try SyncWorld.rules(d.replica)["one.example"]) == "chrome")
    }
}

extension LyingServerTests {
    /// A server whose clock header says the end of time, the year 292
    /// million, 1970 or nonsense: no crash, no stamp taken from it; the
    /// machine edits offline and syncs with the honest server after.
    @Test func aLyingClockIsNotTaken() throws {
        let world = try SyncWorld(.sqlite)
        let a = try world.machine("a")
        try Self.rules(a, ["one.example"])
        try world.sync(a)
        let offset = try a.replica.syncState().clockOffsetMilliseconds
        for lie in [
            "9223372036854775807", "9223372036854775806", "9223372036854000000", "0", "-9223372036854775808", "12x",
        ] {
            let liar = try LyingServer(
                in: world, headers: { $0.set(Wire.timeHeader, lie) }, rewrite: { _, _, _ in nil })
            defer { liar.stop() }
            _ = try a.replica.addRule(pattern: "two.example", browser: "firefox", priority: nil)
            _ = try liar.serving(world) { try world.sync(a) }
            #expect(abs(try a.replica.syncState().clockOffsetMilliseconds - offset) < 60_000, "\(lie)")
            _ = try a.replica.addRule(pattern: "three.example", browser: "firefox", priority: nil)
            _ = try a.replica.removeRule(pattern: "two.example")
            #expect(a.replica.lastStamp.wallMillis < 7_258_118_400_000, "\(lie): \(a.replica.lastStamp)")
        }
        try world.sync(a)
        let b = try world.machine("b")
        try world.sync(b)
        #expect(try SyncWorld.rules(b.replica).keys.sorted() == ["one.example", "three.example"])
    }
}

extension LyingServerTests {
    /// Pull pages that never end: each holds what `records` makes of the
    /// real page and the cursor asked from (numbered just past it), moves the
    /// cursor by one and says more follow. The cursor passes the server's
    /// sequence, so the server starts a new epoch (it takes the client to be
    /// ahead of a restore): the liar keeps naming the one the machine knows.
    static func endlessPages(
        _ records: @escaping @Sendable (_ page: [String: JSONValue], _ since: Int64) -> [JSONValue]
    ) -> LyingServer.Rewrite {
        { request, status, body in
            guard request.path == "/v1/pull", status == 200, case .object(var page)? = body else { return nil }
            let since = request.target.split(separator: "since=").last.flatMap { Int64($0.prefix { $0.isNumber }) } ?? 0
            if let epoch = request.target.split(separator: "epoch=").dropFirst().first?.prefix(while: { $0 != "&" }) {
                page["epoch"] = .string(String(epoch))
            }
            page["changes"] = .array(
                records(page, since).map { record in
                    guard case .object(var numbered) = record else { return record }
                    numbered["seq"] = .int(since + 1)
                    return .object(numbered)
                })
            page["more"] = .bool(true)
            page["next"] = .int(since + 1)
            return .object(page)
        }
    }

    /// Answers that never let a sync end: pulls that name another epoch
    /// than pushes (every round relays everything again), and empty pages
    /// that move the cursor by one and say more follow. Each sync stops
    /// after a bounded number of requests, with what was wrong; nothing is
    /// lost, and the honest server syncs on.
    @Test func answersThatNeverEndAreStopped() throws {
        let world = try SyncWorld(.sqlite)
        let a = try world.machine("a")
        try Self.rules(a, ["one.example", "two.example"])
        try world.sync(a)

        let flipping = try LyingServer(in: world) { request, status, body in
            guard request.path == "/v1/pull", status == 200, case .object(var page)? = body,
                case .string(let epoch)? = page["epoch"]
            else { return nil }
            page["epoch"] = .string(String(epoch.reversed()))
            return .object(page)
        }
        defer { flipping.stop() }
        _ = try a.replica.addRule(pattern: "three.example", browser: "firefox", priority: nil)
        #expect { _ = try flipping.serving(world) { try world.sync(a) } } throws: {
            "\($0)".contains("times in one sync")
        }
        #expect(flipping.rewritten.value.load(ordering: .relaxed) < 40)
        try world.sync(a) // the honest server's epoch again (a full re-sync)

        let endless = try LyingServer(in: world, rewrite: Self.endlessPages { _, _ in [] })
        defer { endless.stop() }
        #expect { _ = try endless.serving(world) { try world.sync(a) } } throws: {
            "\($0)".contains("pages in a row that changed nothing here")
        }
        #expect(
            endless.rewritten.value.load(ordering: .relaxed) <= 512 + 8,
            "the pull stops after 512 pages that change nothing")

        // The same unchanged record on every page, under a new number each time.
        try world.sync(a)
        let replayed = Mutex<JSONValue?>(nil)
        let repeating = try LyingServer(
            in: world,
            rewrite: Self.endlessPages { page, _ in
                if case .array(let records)? = page["changes"], let first = records.first {
                    replayed.withLock { $0 = $0 ?? first }
                }
                return replayed.withLock { $0 }.map { [$0] } ?? []
            })
        defer { repeating.stop() }
        let c = try world.machine("c")
        #expect { _ = try repeating.serving(world) { try world.sync(c) } } throws: {
            "\($0)".contains("pages in a row that changed nothing here")
        }
        #expect(repeating.rewritten.value.load(ordering: .relaxed) <= 512 + 8)
        // The same, with a version-vector counter that grows on every page:
        // a vector that only grew is no change here either.
        let growing = try LyingServer(
            in: world,
            rewrite: Self.endlessPages { _, since in
                guard case .object(var record)? = replayed.withLock({ $0 }) else { return [] }
                var versions = Self.versions(.object(record))
                versions["ffffffffffffffff"] = .int(1_000 + since)
                record["versions"] = .object(versions)
                return [.object(record)]
            })
        defer { growing.stop() }
        #expect { _ = try growing.serving(world) { try world.sync(c) } } throws: {
            "\($0)".contains("pages in a row that changed nothing here")
        }
        #expect(growing.rewritten.value.load(ordering: .relaxed) <= 512 + 8)

        // Pushes whose acknowledgement is always one short, or negative: the
        // sync stops (refused, or with what was wrong) after a few requests.
        _ = try a.replica.addRule(pattern: "four.example", browser: "firefox", priority: nil)
        for shift in [Int64(-1), -100] {
            let short = try LyingServer(in: world) { request, status, body in
                guard request.path == "/v1/push", status == 200, case .object(var answer)? = body,
                    case .int(let acknowledged)? = answer["acknowledged"]
                else { return nil }
                answer["acknowledged"] = .int(shift == -1 ? acknowledged - 1 : shift)
                return .object(answer)
            }
            defer { short.stop() }
            #expect(throws: SyncError.self, "\(shift)") { _ = try short.serving(world) { try world.sync(a) } }
            #expect(
                short.rewritten.value.load(ordering: .relaxed) < 40,
                "\(shift): \(short.rewritten.value.load(ordering: .relaxed)) answers")
        }

        // Honest again: everything syncs, nothing was lost.
        try world.sync(a)
        let b = try world.machine("b")
        try world.sync(b)
        #expect(
            try SyncWorld.rules(b.replica).keys.sorted() == [
                "four.example", "one.example", "three.example", "two.example",
            ])
    }
}

extension LyingServerTests {
    /// A push answer whose `lost` list says this machine's edit lost to an
    /// older value: not kept as a conflict (the merge would not have chosen
    /// it), and the user is told.
    @Test func aConflictTheStampsDoNotBearOutIsNotKept() throws {
        let world = try SyncWorld(.sqlite)
        let a = try world.machine("a")
        try Self.rules(a, ["one.example"])
        try world.sync(a)
        let liar = try LyingServer(in: world) { request, status, body in
            guard request.path == "/v1/push", status == 200, case .object(var answer)? = body,
                case .object(let pushed)? = try? JSONValue.parse(String(decoding: request.body, as: UTF8.self)),
                let from = pushed["from"]
            else { return nil }
            let old = JSONValue.object(["s": .string("0000000000000001-00000000-aaaa"), "v": .string("chrome")])
            let mine = JSONValue.object(["s": .string("7000000000000000-00000000-bbbb"), "v": .string("firefox")])
            answer["lost"] = .array([
                .object([
                    "seq": from, "collection": .string("rules"), "key": .string("one.example"),
                    "field": .string("browser"), "lost": mine, "winner": old,
                ])
            ])
            return .object(answer)
        }
        defer { liar.stop() }
        try Self.editSeeingNoConflictKept(world, a, through: liar, saying: "not newer than the value it beat")
    }
}

extension LyingServerTests {
    /// A push answer's `lost` entry about a record the push did not change
    /// (real values from the account's history, so the stamps bear it out):
    /// not kept, so nothing can be restored from it.
    @Test func aConflictOnARecordThePushDidNotChangeIsNotKept() throws {
        let world = try SyncWorld(.sqlite)
        let a = try world.machine("a")
        try Self.rules(a, ["one.example", "two.example"])
        try world.sync(a)
        let liar = try LyingServer(in: world) { request, status, body in
            guard request.path == "/v1/push", status == 200, case .object(var answer)? = body else { return nil }
            let old = JSONValue.object(["s": .string("0000000000000001-00000000-aaaa"), "v": .string("chrome")])
            let new = JSONValue.object(["s": .string("0000000000000002-00000000-aaaa"), "v": .string("firefox")])
            answer["lost"] = .array([
                .object([
                    "seq": .int(1), "collection": .string("rules"), "key": .string("other.example"),
                    "field": .string("browser"), "lost": old, "winner": new,
                ])
            ])
            return .object(answer)
        }
        defer { liar.stop() }
        _ = try a.replica.addRule(pattern: "one.example", browser: "firefox", priority: 5)
        let lied = try liar.serving(world) { try world.sync(a) }
        #expect(try a.replica.conflicts(limit: 10).isEmpty)
        #expect(lied.problems.contains { $0.contains("a record this push did not change") }, "\(lied.problems)")
    }
}

extension LyingServerTests {
    /// A push answer that counts more unlisted lost values than the push
    /// holds (Int64.max) is not repeated to the user as a count.
    @Test func anImpossibleCountOfLostValuesIsNotBelieved() throws {
        let world = try SyncWorld(.sqlite)
        let a = try world.machine("a")
        try Self.rules(a, ["one.example"])
        let liar = try LyingServer(in: world) { request, status, body in
            guard request.path == "/v1/push", status == 200, case .object(var answer)? = body else { return nil }
            answer["lostOmitted"] = .int(Int64.max)
            return .object(answer)
        }
        defer { liar.stop() }
        let lied = try liar.serving(world) { try world.sync(a) }
        #expect(lied.problems.contains { $0.contains("more than they hold: not believed") }, "\(lied.problems)")
        #expect(
            !lied.problems.contains { $0.contains("\(Int64.max)") && !$0.contains("not believed") }, "\(lied.problems)")
    }
}

extension LyingServerTests {
    /// A version vector padded with made-up devices to the cap (Deploy/
    /// SECURITY.md, "A lying server"): a machine outside it still edits and
    /// deletes the rule. Its vector is cut, the smallest counters first,
    /// never past the cap; the honest server takes the edit, and a machine
    /// outside the padded vector it then holds edits again; every machine
    /// ends with the same rules and nothing set aside.
    @Test func aVectorPaddedToTheCapLocksNoRule() throws {
        let world = try SyncWorld(.sqlite)
        let a = try world.machine("a")
        try Self.rules(a, ["one.example", "two.example", "three.example"])
        _ = try a.replica.addBrowser(id: "chrome", name: nil, format: nil, scheme: nil, exec: nil)
        let (key, _) = try KeyChangeTests.changeKey(world, a)
        let hidden = try Self.hiddenRuleKeys(a.replica, RecordCipher(key))
        let padded = Set(["one.example", "two.example"].compactMap { hidden[$0] })
        let liar = try LyingServer(
            in: world,
            rewrite: Self.rewritingRecords { records in
                for index in records.indices where padded.contains(Self.hiddenKey(records[index])) {
                    var versions = Self.versions(records[index])
                    var fake = 0
                    while versions.count < Wire.maxVersionEntries {
                        versions[String(format: "%016x", fake)] = .int(7)
                        fake += 1
                    }
                    records[index] = Self.with(records[index], versions: versions)
                }
            })
        defer { liar.stop() }
        let c = try world.machine("c")
        let lied = try liar.serving(world) {
            try AccountKeyFile.add(key, home: c.replica.home)
            return try world.sync(c)
        }
        #expect(liar.rewritten.value.load(ordering: .relaxed) > 0)
        #expect(lied.problems.isEmpty, "a padded vector opens: values are decided by stamps \(lied.problems)")
        let full = try c.replica.records(.rules).filter { $0.state.versions.counters.count == Wire.maxVersionEntries }
        #expect(full.count == 2, "c holds the padded vectors")

        _ = try c.replica.addRule(pattern: "one.example", browser: "chrome", priority: nil)
        _ = try c.replica.removeRule(pattern: "two.example")
        #expect(try c.replica.records(.rules).allSatisfy { $0.state.versions.counters.count <= Wire.maxVersionEntries })
        let pushed = try world.sync(c)
        #expect(pushed.problems.isEmpty, "\(pushed.problems)")
        #expect(try world.sync(a).problems.isEmpty)
        #expect(try SyncWorld.rules(a.replica) == ["one.example": "chrome", "three.example": "firefox"])

        // The honest server now holds c's full vector; d is outside it.
        let d = try world.machine("d")
        try AccountKeyFile.add(key, home: d.replica.home)
        #expect(try world.sync(d).problems.isEmpty)
        _ = try d.replica.addRule(pattern: "one.example", browser: "firefox", priority: nil)
        for machine in [d, a, c] { #expect(try world.sync(machine).problems.isEmpty) }
        for machine in [a, c, d] {
            #expect(
                try SyncWorld.rules(machine.replica) == ["one.example": "firefox", "three.example": "firefox"],
                "\(machine.name)")
        }
        // A liar sets c's own counter to the largest the wire carries: c's edits still go up.
        _ = try a.replica.addRule(pattern: "three.example", browser: "chrome", priority: nil)
        #expect(try world.sync(a).problems.isEmpty)
        let own = c.replica.deviceID
        let maxing = try LyingServer(
            in: world,
            rewrite: Self.rewritingRecords { records in
                for index in records.indices where Self.hiddenKey(records[index]) == hidden["three.example"] {
                    var versions = Self.versions(records[index])
                    versions[own] = .int(Int64.max)
                    records[index] = Self.with(records[index], versions: versions)
                }
            })
        defer { maxing.stop() }
        let maxed = try maxing.serving(world) { try world.sync(c) }
        #expect(maxed.problems.isEmpty, "\(maxed.problems)")
        #expect(try c.replica.record(.rules, key: "three.example")?.versions[own] == UInt64(Int64.max))
        _ = try c.replica.addRule(pattern: "three.example", browser: "firefox", priority: nil)
        let pushed2 = try world.sync(c)
        #expect(pushed2.problems.isEmpty && pushed2.pushed > 0, "\(pushed2.problems)")
        #expect(try world.sync(a).problems.isEmpty)
        #expect(try SyncWorld.rules(a.replica)["three.example"] == "firefox")
    }
}

extension LyingServerTests {
    /// A push answer's `lost` entry naming a deletion flag without its
    /// sealed twin, in an encrypted account (the flag is readable, so the
    /// server could show a deletion no machine made, and `brsync restore`
    /// would make it): not kept, and the user is told. With this push's own
    /// register as the winner, so only the twin is missing.
    @Test func aLostDeletionFlagWithoutItsTwinIsNotKept() throws {
        let world = try SyncWorld(.sqlite)
        let a = try world.machine("a")
        try Self.rules(a, ["one.example"])
        _ = try KeyChangeTests.changeKey(world, a)
        let liar = try LyingServer(in: world) { request, status, body in
            guard request.path == "/v1/push", status == 200, case .object(var answer)? = body,
                let pushed = try? Wire.read(String(decoding: request.body, as: UTF8.self), PushRequest.init(reading:)),
                let change = pushed.changes.first, let flag = change.state.fields[RecordState.deletedField]
            else { return nil }
            let deleted = JSONValue.object(["s": .string("0000000000000001-00000000-bbbb"), "v": .bool(true)])
            answer["lost"] = .array([
                .object([
                    "seq": .int(change.sequence), "collection": .string(change.collection.rawValue),
                    "key": .string(change.key), "field": .string(RecordState.deletedField), "lost": deleted,
                    "winner": flag.json,
                ])
            ])
            return .object(answer)
        }
        defer { liar.stop() }
        try Self.editSeeingNoConflictKept(world, a, through: liar, saying: "without its sealed twin: not kept")
    }
}

extension LyingServerTests {
    /// Edits `one.example` on `a` through `liar`: the conflict its answer
    /// makes up is not kept, and the sync says `why`.
    static func editSeeingNoConflictKept(
        _ world: SyncWorld, _ a: SimulatedMachine, through liar: LyingServer, saying why: String
    ) throws {
        _ = try a.replica.addRule(pattern: "one.example", browser: "firefox", priority: 5)
        let lied = try liar.serving(world) { try world.sync(a) }
        #expect(try a.replica.conflicts(limit: 10).isEmpty)
        #expect(lied.conflicts == 0 && lied.problems.contains { $0.contains(why) }, "\(lied.problems)")
    }
}
