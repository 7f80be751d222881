import Foundation
import JSON
import Model
import Replica
import SyncCore
import TestSupport
import Testing

/// Rule keys are the ASCII form of a pattern's host (UTS #46), so the
/// Unicode tables decide them. brsync moved from Unicode 15.1 to 18.0: rules
/// made by a machine still on the old tables must keep meaning the same rule
/// on one on the new, or the same pattern would sync as two rules.
/// Tests/Data/idn-rule-keys-15.1.json holds 709 IDN patterns (the error-free
/// IDN rows of Unicode's 13.0 conformance data, and 600 sampled code points
/// that 15.1 allowed, each in a label) with the keys a brsync on the 15.1
/// tables gave them. (`scripts/generate-uts46 --stable-since` checks every
/// code point: none that 15.1 allowed maps otherwise in 18.0.)
@Suite struct IDNKeyStabilityTests {
    struct Entry: Decodable {
        let pattern: String
        let key: String
    }

    static func corpus() throws -> [Entry] {
        struct File: Decodable {
            let unicode: String
            let rules: [Entry]
        }
        let path = Repository.file("Tests/Data/idn-rule-keys-15.1.json")
        let file = try JSONDecoder().decode(File.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(file.unicode == "15.1.0")
        return file.rules
    }

    @Test func idnKeysMadeWithOlderTablesStayTheSame() throws {
        let corpus = try Self.corpus()
        #expect(corpus.count > 700)
        #expect(corpus.filter { !$0.key.hasPrefix("xn--") && !$0.key.contains(".xn--") }.isEmpty, "every key is an IDN")
        let changed = corpus.filter { (try? Pattern($0.pattern).key) != $0.key }
        #expect(
            changed.isEmpty,
            "\(changed.prefix(10).map { "\($0.pattern): \($0.key) → \((try? Pattern($0.pattern).key) ?? "refused")" })")
    }

    /// A machine on the 15.1 tables (its rules written under the keys those
    /// gave) and one on the tables of this build add the same IDN patterns
    /// without having synced; after they sync, each holds every rule once and
    /// so does the server.
    @Test(arguments: StoreKind.allCases) func machinesOnOlderAndNewerTablesShareEveryIDNRule(_ kind: StoreKind) throws {
        let corpus = try Self.corpus()
        let world = try SyncWorld(kind)
        let older = try world.machine("older")
        let newer = try world.machine("newer")
        for machine in [older, newer] {
            _ = try machine.replica.addBrowser(id: "firefox", name: nil, format: nil, scheme: nil, exec: nil)
        }
        for (index, entry) in corpus.enumerated() {
            // As the older brsync wrote it: the key its tables gave.
            try older.replica.write(
                .rules, key: entry.key,
                changes: [
                    "pattern": .string(entry.pattern), "browser": .string("firefox"), "priority": .int(Int64(index)),
                    "createdAt": .int(1_700_000_000_000), "origin": .string(older.replica.deviceID),
                    RecordState.deletedField: .bool(false),
                ])
            try newer.replica.addRule(pattern: entry.pattern, browser: "firefox", priority: index)
        }
        try world.sync(older)
        try world.sync(newer)
        try world.sync(older)
        for machine in [older, newer] {
            let rules = try machine.replica.rules()
            #expect(rules.count == corpus.count, "\(machine.name): \(rules.count) rules for \(corpus.count) patterns")
            #expect(Set(rules.map(\.pattern)) == Set(corpus.map(\.pattern)))
        }
        let onServer = try world.freshView().keys.filter { $0.hasPrefix("rules/") }
        #expect(onServer.count == corpus.count, "the server holds each rule once")
    }
}
