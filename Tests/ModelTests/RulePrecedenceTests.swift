import Testing
@testable import Model

@Suite struct RulePrecedenceTests {
    func rule(_ pattern: String, _ browser: String, priority: Int = 0, created: Int64 = 0) -> UrlRule {
        UrlRule(pattern: pattern, browser: browser, priority: priority, createdAtMillis: created)
    }

    func decide(_ rules: [UrlRule], _ url: String) throws -> String? {
        let index = RuleIndex(rules: rules)
        // Any insertion order gives the same answer.
        let reversed = RuleIndex(rules: rules.reversed())
        let first = index.decide(try NormalizedURL(url))?.rule.browser
        #expect(reversed.decide(try NormalizedURL(url))?.rule.browser == first)
        return first
    }

    @Test func higherPriorityWins() throws {
        let rules = [rule("github.com", "a", priority: 1), rule("github.com/user", "b", priority: 2)]
        #expect(try decide(rules, "https://github.com/user/x") == "b")
        let swapped = [rule("github.com", "a", priority: 3), rule("github.com/user", "b", priority: 2)]
        #expect(try decide(swapped, "https://github.com/user/x") == "a")
    }

    @Test func exactHostBeatsWildcardOnEqualPriority() throws {
        let rules = [rule("*.example.com", "wild", created: 10), rule("example.com", "exact", created: 1)]
        #expect(try decide(rules, "https://example.com/") == "exact")
    }

    @Test func longerLiteralBeatsShorterOnEqualPriority() throws {
        let rules = [rule("example.com", "short", created: 10), rule("example.com/docs", "long", created: 1)]
        #expect(try decide(rules, "https://example.com/docs/x") == "long")
        #expect(try decide(rules, "https://example.com/other") == "short")
    }

    @Test func newerBeatsOlderWhenEquallySpecific() throws {
        let rules = [rule("a.example.com", "old", created: 1), rule("b.example.com", "x", created: 5),
                     rule("*.example.com", "w", created: 9), rule("a.example.org", "y", created: 3)]
        #expect(try decide(rules, "https://a.example.com/") == "old")
        let tie = [rule("example.com/a*", "old", created: 1), rule("example.com/*b", "new", created: 2)]
        #expect(try decide(tie, "https://example.com/ab") == "new")
    }

    @Test func keyBreaksFullTies() throws {
        let tie = [rule("example.com/a*", "first", created: 1), rule("example.com/*a", "second", created: 1)]
        // Same priority, host, literal length and time: the smaller key ("example.com/*a") wins.
        #expect(try decide(tie, "https://example.com/aa") == "second")
    }

    @Test func unusableRulesAreSkipped() throws {
        let index = RuleIndex(rules: [rule("github.com", "gone", priority: 5), rule("github.com", "here", priority: 1)])
        let decided = index.decide(try NormalizedURL("https://github.com/")) { $0.browser != "gone" }
        #expect(decided?.rule.browser == "here")
    }

    @Test func newRulePriorityIsAboveAll() {
        #expect(RulePrecedence.priorityForNewRule(existingMaximum: nil) == 0)
        #expect(RulePrecedence.priorityForNewRule(existingMaximum: 7) == 8)
        #expect(RulePrecedence.priorityForNewRule(existingMaximum: -3) == -2)
    }

    @Test func indexLooksOnlyAtCandidates() throws {
        var rules = (0..<1000).map { rule("host\($0).example", "b\($0)") }
        rules.append(rule("*.wild.example", "w"))
        let index = RuleIndex(rules: rules)
        let candidates = index.candidates(for: try NormalizedURL("https://host7.example/x"))
        #expect(candidates.map(\.rule.browser) == ["b7"])
        #expect(index.count == 1001)
    }

    @Test func invalidStoredPatternsAreSetAside() {
        let index = RuleIndex(rules: [rule("", "x"), rule("ok.example", "y")])
        #expect(index.invalid.count == 1)
        #expect(index.count == 1)
    }
}
