import JSON
import Replica
import SyncClient
import SyncCore
import Synchronization
import Testing
import TestSupport

/// Records sealed as records (Deploy/SECURITY.md, "A lying server", 2): a
/// machine that does not hold a record yet is never shown a state of it that
/// never existed.
extension LyingServerTests {
    /// The hidden key of each rule of `replica`, by pattern.
    static func hiddenRuleKeys(_ replica: Replica, _ cipher: RecordCipher) throws -> [String: String] {
        var keys: [String: String] = [:]
        for (key, state) in try replica.records(.rules) {
            if case .string(let pattern)? = state.fields["pattern"]?.value { keys[pattern] = cipher.hiddenKey(collection: "rules", key: key) }
        }
        return keys
    }

    static func hiddenKey(_ record: JSONValue) -> String {
        guard case .object(let object) = record, case .string(let key)? = object["key"] else { return "" }
        return key
    }

    static func versions(_ record: JSONValue) -> [String: JSONValue] {
        guard case .object(let object) = record, case .object(let versions)? = object["versions"] else { return [:] }
        return versions
    }

    static func with(_ record: JSONValue, versions: [String: JSONValue]) -> JSONValue {
        guard case .object(var object) = record else { return record }
        object["versions"] = .object(versions)
        return .object(object)
    }

    /// A new machine is served records the server cut or mixed with their
    /// past: a value rolled back to an older one (with its old stamp, which
    /// opens), a deletion flag dropped (the deleted rule would come back), a
    /// version vector cut (a write hidden), a manifest dropped, an older
    /// manifest beside newer values. Each is refused by name and nothing of
    /// it applied; a forged version-vector entry is harmless (values are
    /// decided by sealed stamps); every other record syncs. The honest
    /// server then gives a new machine everything.
    @Test(arguments: StoreKind.allCases) func aRecordRolledBackCutOrRevivedIsRefusedByName(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let a = try world.machine("a")
        let patterns = ["one.example", "two.example", "three.example", "four.example", "five.example", "six.example"]
        try Self.rules(a, patterns)
        _ = try a.replica.addBrowser(id: "chrome", name: nil, format: nil, scheme: nil, exec: nil)
        let (key, _) = try KeyChangeTests.changeKey(world, a)
        let hidden = try Self.hiddenRuleKeys(a.replica, RecordCipher(key))
        #expect(hidden.count == patterns.count)

        // The records as they are now, kept by the server to serve later.
        let old = Mutex<[String: JSONValue]>([:])
        let recorder = try LyingServer(in: world, rewrite: Self.rewritingRecords { records in
            old.withLock { for record in records { $0[Self.hiddenKey(record)] = record } }
        })
        defer { recorder.stop() }
        let b = try world.machine("b")
        try recorder.serving(world) { try KeyChangeTests.addKey(world, b, key) }
        #expect(old.withLock { $0.count } >= patterns.count)

        // a moves one, five and six to chrome and deletes two.
        for pattern in ["one.example", "five.example", "six.example"] { _ = try a.replica.addRule(pattern: pattern, browser: "chrome", priority: nil) }
        _ = try a.replica.removeRule(pattern: "two.example")
        try world.sync(a)

        let liar = try LyingServer(in: world, rewrite: Self.rewritingRecords { records in
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
        #expect(refusal("one.example")?.contains("field \"browser\" was rolled back to an older value") == true, "\(refused)")
        #expect(refusal("two.example")?.contains("its deletion flag was dropped") == true, "\(refused)")
        #expect(refusal("three.example")?.contains("its version vector hides a write") == true, "\(refused)")
        #expect(refusal("five.example")?.contains("carries no manifest") == true, "\(refused)")
        #expect(refusal("six.example")?.contains("came without a manifest") == true, "\(refused)")
        #expect(refused.count == 5, "\(refused)")
        #expect(try SyncWorld.rules(c.replica) == ["four.example": "firefox"], "nothing of a refused record applied; a forged entry changes no value")

        // The honest server gives a new machine everything as a has it.
        let d = try world.machine("d")
        let honest = try { () throws -> SyncClient.Summary in
            try AccountKeyFile.add(key, home: d.replica.home)
            return try world.sync(d)
        }()
        #expect(!honest.problems.contains { $0.contains("set aside") }, "\(honest.problems)")
        #expect(try SyncWorld.rules(d.replica) == (try SyncWorld.rules(a.replica)))
        #expect(try SyncWorld.rules(d.replica)["two.example"] == nil && (try SyncWorld.rules(d.replica)["one.example"]) == "chrome")
    }
}
