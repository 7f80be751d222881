/// The order in which rules decide, the same on every machine:
/// 1. higher ``UrlRule/priority`` first;
/// 2. on equal priority the more specific pattern: an exact host before a
///    wildcard host, then more literal text first;
/// 3. then the newer rule (``UrlRule/createdAtMillis``);
/// 4. then the pattern key, so that no two distinct rules tie.
public enum RulePrecedence {
    /// Whether `a` decides before `b`.
    public static func precedes(_ a: CompiledRule, _ b: CompiledRule) -> Bool {
        SortKey(a).precedes(SortKey(b))
    }

    /// What decides a rule's place, taken out once: sorting many rules by
    /// their keys moves small values instead of whole rules and patterns.
    public struct SortKey: Sendable, Hashable {
        let fromApp: Bool
        let priority: Int
        let exactHost: Bool
        let literalLength: Int
        let createdAtMillis: Int64
        let key: String

        public init(_ compiled: CompiledRule) {
            fromApp = compiled.pattern.source != nil
            priority = compiled.rule.priority
            exactHost = compiled.pattern.hasExactHost
            literalLength = compiled.pattern.literalLength
            createdAtMillis = compiled.rule.createdAtMillis
            key = compiled.pattern.key
        }

        /// Whether the rule with this key decides before the other's.
        public func precedes(_ other: SortKey) -> Bool {
            // A rule for the app the link came from is more specific than any other.
            if fromApp != other.fromApp { return fromApp }
            if priority != other.priority { return priority > other.priority }
            if exactHost != other.exactHost { return exactHost }
            if literalLength != other.literalLength { return literalLength > other.literalLength }
            if createdAtMillis != other.createdAtMillis { return createdAtMillis > other.createdAtMillis }
            // Byte order of the UTF-8 text, as a database compares it (see collationText).
            return key.utf8.lexicographicallyPrecedes(other.key.utf8)
        }

        /// The rule's place as text that sorts byte by byte (SQLite's BINARY
        /// collation) exactly as ``precedes(_:)`` orders: fixed-width hex
        /// fields, those that order from high to low complemented, signed
        /// ones offset so they order as unsigned numbers, then the key.
        /// Stored beside each rule, it lets the database list rules in the
        /// order they decide without parsing a pattern.
        /// Written byte by byte: it is made for every rule a pull stores.
        public var collationText: String {
            func ascending(_ value: Int64) -> UInt64 { UInt64(bitPattern: value) ^ (1 << 63) }
            let fixed = 1 + 16 + 1 + 16 + 16
            let digits: StaticString = "0123456789abcdef"
            var bytes = [UInt8](repeating: 0, count: fixed)
            bytes.reserveCapacity(fixed + key.utf8.count)
            bytes.withUnsafeMutableBufferPointer { out in
                func hex(_ value: UInt64, at start: Int) {
                    for position in 0..<16 {
                        out[start + position] = digits.utf8Start[Int((value >> UInt64(60 - 4 * position)) & 0xF)]
                    }
                }
                out[0] = UInt8(ascii: fromApp ? "0" : "1")
                hex(~ascending(Int64(priority)), at: 1)
                out[17] = UInt8(ascii: exactHost ? "0" : "1")
                hex(~UInt64(max(0, literalLength)), at: 18)
                hex(~ascending(createdAtMillis), at: 34)
            }
            bytes.append(contentsOf: key.utf8)
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// The priority a newly remembered rule gets: above every existing rule, as on the phone.
    public static func priorityForNewRule(existingMaximum: Int?) -> Int {
        guard let existingMaximum else { return 0 }
        return existingMaximum == Int.max ? Int.max : existingMaximum + 1
    }

    /// Why `winner` decided before `loser`, in words (for `brsync explain`).
    public static func reason(_ winner: CompiledRule, before loser: CompiledRule) -> String {
        if (winner.pattern.source == nil) != (loser.pattern.source == nil) {
            return "a rule for the app the link came from wins"
        }
        if winner.rule.priority != loser.rule.priority {
            return "lower priority (\(loser.rule.priority) < \(winner.rule.priority))"
        }
        if winner.pattern.hasExactHost != loser.pattern.hasExactHost {
            return "same priority, but a wildcard host loses to an exact host"
        }
        if winner.pattern.literalLength != loser.pattern.literalLength {
            return "same priority, but a less specific pattern"
        }
        if winner.rule.createdAtMillis != loser.rule.createdAtMillis {
            return "same priority and specificity, but older"
        }
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
