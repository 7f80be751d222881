/// The order in which rules decide, the same on every machine:
/// 1. higher ``UrlRule/priority`` first;
/// 2. on equal priority the more specific pattern: an exact host before a
///    wildcard host, then more literal text first;
/// 3. then the newer rule (``UrlRule/createdAtMillis``);
/// 4. then the pattern key, so that no two distinct rules tie.
public enum RulePrecedence {
    /// Whether `a` decides before `b`.
    public static func precedes(_ a: CompiledRule, _ b: CompiledRule) -> Bool {
        // A rule for the app the link came from is more specific than any other.
        if (a.pattern.source == nil) != (b.pattern.source == nil) { return a.pattern.source != nil }
        if a.rule.priority != b.rule.priority { return a.rule.priority > b.rule.priority }
        if a.pattern.hasExactHost != b.pattern.hasExactHost { return a.pattern.hasExactHost }
        if a.pattern.literalLength != b.pattern.literalLength { return a.pattern.literalLength > b.pattern.literalLength }
        if a.rule.createdAtMillis != b.rule.createdAtMillis { return a.rule.createdAtMillis > b.rule.createdAtMillis }
        return a.pattern.key < b.pattern.key
    }

    /// The priority a newly remembered rule gets: above every existing rule, as on the phone.
    public static func priorityForNewRule(existingMaximum: Int?) -> Int {
        guard let existingMaximum else { return 0 }
        return existingMaximum == Int.max ? Int.max : existingMaximum + 1
    }

    /// Why `winner` decided before `loser`, in words (for `brsync explain`).
    public static func reason(_ winner: CompiledRule, before loser: CompiledRule) -> String {
        if (winner.pattern.source == nil) != (loser.pattern.source == nil) { return "a rule for the app the link came from wins" }
        if winner.rule.priority != loser.rule.priority { return "lower priority (\(loser.rule.priority) < \(winner.rule.priority))" }
        if winner.pattern.hasExactHost != loser.pattern.hasExactHost { return "same priority, but a wildcard host loses to an exact host" }
        if winner.pattern.literalLength != loser.pattern.literalLength { return "same priority, but a less specific pattern" }
        if winner.rule.createdAtMillis != loser.rule.createdAtMillis { return "same priority and specificity, but older" }
        return "tie broken by pattern text"
    }
}

/// A rule with its parsed pattern.
public struct CompiledRule: Sendable, Hashable {
    public let rule: UrlRule
    public let pattern: Pattern

    public init(rule: UrlRule, pattern: Pattern) {
        self.rule = rule
        self.pattern = pattern
    }

    /// Parses the rule's pattern.
    public init(_ rule: UrlRule) throws(PatternProblem) {
        self.rule = rule
        pattern = try Pattern(rule.pattern)
    }
}
