import TestSupport
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
        let rules = [
            rule("a.example.com", "old", created: 1), rule("b.example.com", "x", created: 5),
            rule("*.example.com", "w", created: 9), rule("a.example.org", "y", created: 3),
        ]
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

    /// The stored collation text sorts byte by byte exactly as `precedes`
    /// orders, at the extremes of every field too (the database lists rules
    /// by it). Seeded: `BRSYNC_TEST_SEED` re-runs one.
    @Test func collationTextSortsAsPrecedenceDoes() throws {
        var random = SeededRandom.fromEnvironment(fallback: 20_261_129)
        print("collationTextSortsAsPrecedenceDoes seed \(random.seed)")
        let patterns = [
            "github.com", "*.github.com", "github.com/a/*", "github.com/a/**", "from:slack github.com",
            "from:slack *.example.com/x", "example.com:8443", "https://example.com", "file:///home/me/**",
            "ex\u{e9}mple.com/caf\u{e9}", "example.com/e\u{301}", "a.b.c.d.example.org/path?q=*", "*.co.uk",
        ]
        let priorities = [Int.min, Int.min + 1, -1, 0, 1, 2, Int.max - 1, Int.max]
        let times: [Int64] = [Int64.min, -1, 0, 1, 1_700_000_000_000, Int64.max]
        let keys = try (0..<300).map { _ in
            let rule = UrlRule(
                pattern: patterns.randomElement(using: &random)!, browser: "b",
                priority: priorities.randomElement(using: &random)!,
                createdAtMillis: times.randomElement(using: &random)!)
            return RulePrecedence.SortKey(try CompiledRule(rule))
        }
        for a in keys {
            for b in keys {
                let byText = a.collationText.utf8.lexicographicallyPrecedes(b.collationText.utf8)
                #expect(a.precedes(b) == byText, "\(a.collationText) vs \(b.collationText)")
            }
        }
    }

    /// The text is the one replicas already store (`precedence`): a change
    /// to how it is written must give the same bytes, or rules stored before
    /// and after would list out of order. Checked against a row a replica
    /// stored, and against the text as first written (string by string) at
    /// the extremes of every field.
    @Test func collationTextIsTheStoredOne() throws {
        let stored = UrlRule(
            pattern: "blwsivkk4998.example", browser: "b", priority: 0, createdAtMillis: 1_795_940_677_120)
        #expect(
            RulePrecedence.SortKey(try CompiledRule(stored)).collationText
                == "17fffffffffffffff0ffffffffffffffeb7ffffe5dd99809ffblwsivkk4998.example")
        func hex(_ value: UInt64) -> String {
            let digits = String(value, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
        func ascending(_ value: Int64) -> UInt64 { UInt64(bitPattern: value) ^ (1 << 63) }
        for pattern in ["from:slack *.example.com/x", "a.b", "*.co.uk", "ex\u{e9}mple.com/caf\u{e9}"] {
            for priority in [Int.min, -1, 0, Int.max] {
                for created: Int64 in [Int64.min, 0, Int64.max] {
                    let compiled = try CompiledRule(
                        UrlRule(pattern: pattern, browser: "b", priority: priority, createdAtMillis: created))
                    let first =
                        (compiled.pattern.source != nil ? "0" : "1") + hex(~ascending(Int64(priority)))
                        + (compiled.pattern.hasExactHost ? "0" : "1")
                        + hex(~UInt64(max(0, compiled.pattern.literalLength))) + hex(~ascending(created))
                        + compiled.pattern.key
                    #expect(RulePrecedence.SortKey(compiled).collationText == first)
                }
            }
        }
    }
}
