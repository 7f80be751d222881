import Testing

@testable import Model

/// Rules that name the app a link comes from: `from:APP PATTERN`.
@Suite struct SourcePatternTests {
    func rule(_ pattern: String, _ browser: String, priority: Int = 0) -> UrlRule {
        UrlRule(pattern: pattern, browser: browser, priority: priority, createdAtMillis: 0)
    }

    @Test func aSourceIsPartOfThePatternAndItsKey() throws {
        let pattern = try Pattern("  from:com.Slack.Slack   GitHub.com/Org ")
        #expect(pattern.source == "com.slack.slack")
        #expect(pattern.text == "from:com.Slack.Slack GitHub.com/Org")
        #expect(pattern.key == "from:com.slack.slack \(try Pattern("GitHub.com/Org").key)")
        #expect(pattern.key != (try Pattern("github.com/org").key), "a source rule and the plain rule are two rules")
        #expect(pattern.indexKey == (try Pattern("github.com/org").indexKey), "filed under the same host suffix")
        // Patterns that only start with f are patterns as ever.
        #expect(try Pattern("fromage.fr").source == nil)
        #expect(try Pattern("from.example.com").key == "from.example.com")
        // The space that separates them is what every earlier parser refuses.
        #expect(pattern.text.contains(" "))
    }

    @Test func badSourcesAreRefusedWithTheReason() {
        for (text, reason) in [
            ("from:slack", "followed by a space"),
            ("from:slack   ", "followed by a space"),
            ("from:sl/ack github.com", "not an app's id"),
            ("from: github.com", "not an app's id"),
            ("from:slack from:teams github.com", "one app at most"),
            ("from:slack github.com extra", "whitespace"),
            ("from:+++ github.com", "with a letter or digit"),
            ("from:. github.com", "not an app's id"),
        ] {
            #expect(throws: PatternProblem.self, "\(text)") { try Pattern(text) }
            do { _ = try Pattern(text) } catch { #expect(error.reason.contains(reason), "\(text): \(error.reason)") }
        }
    }

    @Test func aSourceRuleDecidesOnlyLinksFromItsAppAndBeforeAnyOther() throws {
        let url = try NormalizedURL("https://github.com/org/repo")
        let rules = try [
            rule("github.com", "firefox", priority: 100), rule("from:com.slack.Slack github.com", "chrome"),
            rule("from:thunderbird *.com", "edge"),
        ].map(CompiledRule.init)
        let index = RuleIndex(compiled: rules)
        #expect(index.decide(url)?.rule.browser == "firefox", "no source: source rules do not match")
        #expect(
            index.decide(url, source: "com.slack.Slack")?.rule.browser == "chrome",
            "over a plain rule of higher priority")
        #expect(index.decide(url, source: "COM.SLACK.SLACK")?.rule.browser == "chrome", "ids compare without case")
        #expect(index.decide(url, source: "thunderbird")?.rule.browser == "edge")
        #expect(index.decide(url, source: "teams")?.rule.browser == "firefox")
        #expect(try Pattern("from:slack github.com").match(url) == .sourceUnknown)
        #expect(try Pattern("from:slack github.com").match(MatchSubject(url, source: "teams")) == .sourceDiffers)
        #expect(try Pattern("from:slack github.com").match(MatchSubject(url, source: "slack")) == .match)
        #expect(RulePrecedence.reason(rules[1], before: rules[0]).contains("app the link came from"))
    }
}
