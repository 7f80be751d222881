/// Rules filed by the host label suffix every matching host must end with
/// (``Pattern/indexKey``), so resolving a URL looks at the few rules filed under
/// the URL host's suffixes (`a.b.com`, `b.com`, `com`) and those with no literal
/// host suffix, never at every rule.
public struct RuleIndex: Sendable {
    private var buckets: [String: [CompiledRule]] = [:]
    /// Rules whose pattern no longer parses (from a newer client, say): kept out of matching.
    public private(set) var invalid: [(rule: UrlRule, problem: PatternProblem)] = []
    public private(set) var count = 0

    public init(rules: some Sequence<UrlRule>) {
        for rule in rules {
            do {
                insert(try CompiledRule(rule))
            } catch {
                invalid.append((rule, error))
            }
        }
    }

    public init(compiled: some Sequence<CompiledRule>) {
        for rule in compiled { insert(rule) }
    }

    public mutating func insert(_ rule: CompiledRule) {
        buckets[rule.pattern.indexKey, default: []].append(rule)
        count += 1
    }

    /// The rules that could match `url` (a superset of the matching ones).
    public func candidates(for url: NormalizedURL) -> [CompiledRule] {
        var result: [CompiledRule] = []
        for key in Pattern.candidateIndexKeys(forHost: url.host) {
            if let bucket = buckets[key] { result += bucket }
        }
        return result
    }

    /// The rule that decides `url`: the first in ``RulePrecedence`` order that
    /// matches and passes `isUsable` (rules naming a disabled or missing browser
    /// are skipped, not fatal). A rule that names an app decides only links
    /// from `source`, and before any other rule.
    /// - Parameter source: the id of the app the link came from, when known.
    public func decide(
        _ url: NormalizedURL, source: String? = nil, isUsable: (UrlRule) -> Bool = { _ in true }
    ) -> CompiledRule? {
        // Prepared on the first candidate: most links have none.
        var subject: MatchSubject?
        var best: CompiledRule?
        for key in Pattern.candidateIndexKeys(forHost: url.host) {
            guard let bucket = buckets[key] else { continue }
            let prepared = subject ?? MatchSubject(url, source: source)
            subject = prepared
            for candidate in bucket {
                if let current = best, !RulePrecedence.precedes(candidate, current) { continue }
                if candidate.pattern.match(prepared).isMatch && isUsable(candidate.rule) {
                    best = candidate
                }
            }
        }
        return best
    }
}
