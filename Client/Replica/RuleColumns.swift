import JSON
import Model
import Storage
import SyncCore

/// The columns a rule's row carries beside its fields (see `ReplicaSchema`),
/// derived from them by ``Replica/rule(key:state:)`` whenever the row is
/// written (the one write path, `store`): the index key resolving looks
/// rules up by, the priority, the place in the order rules decide, and the
/// rule itself as listing shows it, so 20,000 rules are listed without
/// reading their stamped fields. NULL for other collections; a deletion
/// keeps its index key and priority only.
struct RuleColumns: Sendable {
    static let names = [
        "index_key", "priority", "precedence", "rule_pattern", "rule_browser", "rule_created", "rule_rest",
    ]

    var values: [DatabaseValue]

    static let none = RuleColumns(values: names.map { _ in .null })

    private init(values: [DatabaseValue]) { self.values = values }

    init(key: String, state: RecordState) {
        let rule = Replica.rule(key: key, state: state)
        let pattern = try? Pattern(rule.pattern)
        // A pattern this version cannot parse is filed under "" so it is still seen (and set aside).
        let indexKey = DatabaseValue.text(pattern?.indexKey ?? "")
        let priority = DatabaseValue.integer(Int64(rule.priority))
        guard !state.isDeleted else {
            self.init(values: [indexKey, priority] + Array(repeating: .null, count: Self.names.count - 2))
            return
        }
        // One that does not parse comes after every rule that does ("2" sorts after
        // the "0" and "1" a collation text starts with), by key.
        let precedence = pattern.map { RulePrecedence.SortKey(CompiledRule(rule: rule, pattern: $0)).collationText }
        self.init(values: [
            indexKey, priority, .text(precedence ?? "2" + key), .text(rule.pattern), .text(rule.browser),
            .integer(rule.createdAtMillis), Self.rest(of: rule),
        ])
    }

    /// `rule_rest`: the rule's other fields as a JSON object, or NULL. Most
    /// rules have an origin and nothing else, written without building the object.
    private static func rest(of rule: UrlRule) -> DatabaseValue {
        switch (rule.origin, rule.extra.isEmpty) {
        case (nil, true): return .null
        case (let origin?, true):
            var bytes = Array(#"{"origin":"#.utf8)
            JSONValue.writeString(origin, into: &bytes)
            bytes.append(UInt8(ascii: "}"))
            return .text(String(decoding: bytes, as: UTF8.self))
        case (let origin, false):
            var rest = rule.extra
            if let origin { rest["origin"] = .string(origin) }
            return .text(JSONValue.object(rest).jsonText)
        }
    }

    /// The rule a listing row holds (`rule_pattern` … `rule_rest`, after its
    /// key and priority), or nil when the row has none (a record the
    /// migration could not read): the caller reads its fields then.
    static func rule(
        key: String, priority: Int64?, pattern: String?, browser: String?, created: Int64?, rest: String?
    )
        -> UrlRule?
    {
        guard let pattern, let browser, let created, let priority else { return nil }
        var rule = UrlRule(
            pattern: pattern, browser: browser, priority: Int(clamping: priority), createdAtMillis: created)
        if let rest, case .object(var extra)? = try? JSONValue.parse(rest) {
            if case .string(let origin)? = extra.removeValue(forKey: "origin") { rule.origin = origin }
            rule.extra = extra
        }
        return rule
    }
}
