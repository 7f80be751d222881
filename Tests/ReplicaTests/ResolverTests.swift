import Foundation
import Model
import TestSupport
import Testing

@testable import Replica

@Suite struct ResolverTests {
    @Test func ruleThenDefaultThenNothing() throws {
        let fixture = try ReplicaFixture()
        let replica = fixture.replica
        try fixture.usable("firefox")
        try fixture.usable("chrome")
        try replica.addRule(pattern: "zoom.us", browser: "chrome", priority: nil)
        let byRule = try replica.resolve(try NormalizedURL("https://us02web.zoom.us/j/123"))
        #expect(byRule.source == .rule && byRule.browser?.browser.id == "chrome" && byRule.rule?.pattern == "zoom.us")
        #expect(byRule.phoneOpen == "googlechromes://us02web.zoom.us/j/123")

        let none = try replica.resolve(try NormalizedURL("https://example.com"))
        #expect(none.source == .none && none.browser == nil && none.phoneOpen == nil)

        _ = try replica.setDefaultBrowser(named: "firefox")
        let byDefault = try replica.resolve(try NormalizedURL("https://example.com"))
        #expect(byDefault.source == .defaultBrowser && byDefault.browser?.browser.id == "firefox")
    }

    @Test func rulesForUnusableBrowsersAreSkipped() throws {
        let fixture = try ReplicaFixture()
        let replica = fixture.replica
        try fixture.usable("firefox")
        try fixture.usable("chrome")
        try replica.addBrowser(id: "brave", name: nil, format: nil, scheme: nil, exec: nil) // no launch command here
        try replica.addRule(pattern: "example.com", browser: "firefox", priority: 1)
        try replica.addRule(pattern: "example.com/docs", browser: "chrome", priority: 5)
        try replica.addRule(pattern: "example.com/docs/api", browser: "brave", priority: 9)
        let url = try NormalizedURL("https://example.com/docs/api/x")
        #expect(try replica.resolve(url).browser?.browser.id == "chrome")
        _ = try replica.setBrowserEnabled(named: "chrome", false)
        #expect(try replica.resolve(url).browser?.browser.id == "firefox")
        _ = try replica.removeBrowser(named: "firefox")
        #expect(try replica.resolve(url).source == .none)
        let (_, verdicts) = try replica.explain(url)
        #expect(
            verdicts.map(\.outcome) == [
                .skipped("browser 'brave' has no launch command on this machine"),
                .skipped("browser 'chrome' is disabled"),
                .skipped("browser 'firefox' is not known here (removed, or never added)"),
            ])
    }

    @Test func phoneRulesNamingASchemeResolve() throws {
        let fixture = try ReplicaFixture()
        try fixture.usable("chrome")
        let document = ExportDocument(
            browsers: [],
            rules: [
                UrlRule(pattern: "meet.google.com", browser: "googlechromes", priority: 3, createdAtMillis: 5)
            ], settings: [:])
        _ = try fixture.replica.importDocument(document)
        #expect(
            try fixture.replica.resolve(try NormalizedURL("https://meet.google.com/abc")).browser?.browser.id
                == "chrome")
    }

    @Test func explainSaysWhoWonAndWhy() throws {
        let fixture = try ReplicaFixture()
        let replica = fixture.replica
        try fixture.usable("firefox")
        try fixture.usable("chrome")
        try replica.addRule(pattern: "github.com", browser: "firefox", priority: 1)
        try replica.addRule(pattern: "github.com/work/*", browser: "chrome", priority: 2)
        try replica.addRule(pattern: "gitlab.com", browser: "chrome", priority: 3)
        let (resolution, verdicts) = try replica.explain(try NormalizedURL("https://github.com/work/repo"))
        #expect(resolution.rule?.pattern == "github.com/work/*")
        #expect(
            verdicts.map(\.outcome) == [
                .noMatch("the host differs"), .won, .lost(to: "github.com/work/*", because: "lower priority (1 < 2)"),
            ])
    }

    /// The indexed lookup through SQLite decides exactly as matching every rule would.
    @Test func indexedResolutionAgreesWithAFullScan() throws {
        var random = SeededRandom.fromEnvironment(fallback: 77)
        print("indexedResolutionAgreesWithAFullScan seed: \(random.seed)")
        let fixture = try ReplicaFixture()
        let replica = fixture.replica
        let browsers = ["firefox", "chrome", "brave"]
        for browser in browsers { try fixture.usable(browser) }
        let hosts = [
            "example.com", "a.example.com", "b.a.example.com", "example.org", "www.example.com", "localhost:8080",
            "10.0.0.1",
        ]
        let paths = ["", "/a", "/a/*", "/a/**", "/*/b", "/a?x=*"]
        var patterns: Set<String> = []
        for _ in 0..<150 {
            var host = hosts.randomElement(using: &random)!
            switch Int.random(in: 0..<5, using: &random) {
            case 0: host = "*." + host
            case 1: host = host.replacingOccurrences(of: "example", with: "ex*le")
            case 2: host = host.replacingOccurrences(of: "e", with: "?")
            default: break
            }
            let scheme = ["", "", "https://", "http://"].randomElement(using: &random)!
            patterns.insert(scheme + host + paths.randomElement(using: &random)!)
        }
        try replica.transaction {
            for pattern in patterns.sorted() {
                try replica.addRule(
                    pattern: pattern, browser: browsers.randomElement(using: &random)!,
                    priority: Int.random(in: 0..<4, using: &random))
            }
        }
        let index = RuleIndex(rules: try replica.rules())
        #expect(index.invalid.isEmpty)
        for _ in 0..<300 {
            let host = hosts.randomElement(using: &random)!
            let url = try NormalizedURL(
                ["https://", "http://"].randomElement(using: &random)! + host
                    + ["/", "/a", "/a/b", "/a/b/c", "/x/b", "/a?x=1"].randomElement(using: &random)!)
            let full = index.decide(url)?.rule.pattern
            #expect(try replica.resolve(url).rule?.pattern == full, "\(url), seed \(random.seed)")
        }
    }
}

@Suite struct ExchangeTests {
    @Test func exportImportRoundTrips() throws {
        let a = try ReplicaFixture()
        try a.usable("firefox")
        try a.replica.addBrowser(id: "work", name: "Work", format: "{url}", scheme: nil, exec: nil)
        try a.replica.addRule(pattern: "github.com", browser: "firefox", priority: nil)
        try a.replica.addRule(pattern: "*.corp.example/**", browser: "work", priority: 7)
        _ = try a.replica.setDefaultBrowser(named: "work")
        let exported = try a.replica.export()

        let b = try ReplicaFixture()
        let summary = try b.replica.importDocument(exported)
        #expect(summary == Replica.ImportSummary(browsers: 2, rules: 2, settings: 1))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        #expect(try encoder.encode(b.replica.export()) == encoder.encode(exported))
        // Importing the same again changes nothing.
        #expect(try b.replica.importDocument(exported) == Replica.ImportSummary())
    }

    /// A rule imported without its time is made at the import (not in
    /// 1970); importing it again keeps the time it got; a time given is kept.
    @Test func anImportedRuleWithoutItsTimeIsMadeNow() throws {
        let fixture = try ReplicaFixture()
        try fixture.usable("firefox")
        let document = try JSONDecoder().decode(
            ExportDocument.self,
            from: Data(
                #"""
                {"rules": [{"pattern": "no-time.example", "browser": "firefox"},
                           {"pattern": "timed.example", "browser": "firefox", "createdAt": "2026-01-02T03:04:05.000Z"}]}
                """#.utf8))
        _ = try fixture.replica.importDocument(document)
        let made = try #require(try fixture.replica.rules().first { $0.pattern == "no-time.example" }).createdAtMillis
        #expect(made == fixture.wallMillis)
        fixture.wallMillis += 60_000
        #expect(
            try fixture.replica.rules().first { $0.pattern == "timed.example" }?.createdAtMillis == 1_767_323_045_000)
        #expect(try fixture.replica.importDocument(document) == Replica.ImportSummary(), "again: nothing changes")
        #expect(try fixture.replica.rules().first { $0.pattern == "no-time.example" }?.createdAtMillis == made)
    }

    @Test func anInvalidRecordImportsNothing() throws {
        let fixture = try ReplicaFixture()
        let before = try fixture.replica.changeCount()
        let documents = [
            ExportDocument(
                browsers: [Browser(id: "ok", name: "Ok")],
                rules: [
                    UrlRule(pattern: "good.example", browser: "ok", createdAtMillis: 0),
                    UrlRule(pattern: "bad pattern", browser: "ok", createdAtMillis: 0),
                ], settings: [:]),
            ExportDocument(browsers: [Browser(id: "Not Valid", name: "x")], rules: [], settings: [:]),
            ExportDocument(browsers: [Browser(id: "x", name: "x", urlFormat: "nothing")], rules: [], settings: [:]),
            ExportDocument(
                browsers: [],
                rules: [
                    UrlRule(pattern: "a.example", browser: "x", createdAtMillis: 0),
                    UrlRule(pattern: "A.example/", browser: "y", createdAtMillis: 0),
                ], settings: [:]),
        ]
        for document in documents {
            #expect(throws: ReplicaError.self) { try fixture.replica.importDocument(document) }
        }
        #expect(try fixture.replica.changeCount() == before)
        #expect(try fixture.replica.rules().isEmpty && fixture.replica.browsers().isEmpty)
    }
}
