import JSON
import Model
import Storage
import SyncCore

extension Replica {

    static func rule(key: String, state: RecordState) -> UrlRule {
        // One pass over the fields: those a rule names, and the rest kept as they are.
        var rule = UrlRule(pattern: key, browser: "", createdAtMillis: 0)
        for (name, register) in state.fields {
            let value = register.value
            switch name {
            case "pattern": rule.pattern = value.stringValue ?? key
            case "browser": rule.browser = value.stringValue ?? ""
            case "priority": rule.priority = Int(clamping: value.intValue ?? 0)
            case "createdAt": rule.createdAtMillis = value.intValue ?? 0
            case "origin": rule.origin = value.stringValue
            case RecordState.deletedField: break
            default: rule.extra[name] = value
            }
        }
        return rule
    }

    /// Every rule that is not deleted, in precedence order (deciding first):
    /// sorted by the `precedence` column, read from the columns each rule's row
    /// carries (see ``RuleColumns``), so no pattern is parsed and no stamped
    /// field is read; rules whose pattern this version cannot parse come
    /// last, by key.
    public func rules() throws -> [UrlRule] {
        let rows = try withLargePageCache {
            try read {
                try database.query(
                    """
                    SELECT key, priority, rule_pattern, rule_browser, rule_created, rule_rest
                    FROM records WHERE collection = 'rules' AND deleted = 0 ORDER BY precedence
                    """
                ) { row in
                    let key = row.string(0) ?? ""
                    return (
                        key,
                        RuleColumns.rule(
                            key: key, priority: row.int64(1), pattern: row.string(2), browser: row.string(3),
                            created: row.int64(4), rest: row.string(5))
                    )
                }
            }
        }
        // A row without its columns (a record the migration could not read) is read from its fields.
        // (Deleted in between by another process: left out, as a listing a moment later would.)
        return try rows.compactMap { key, rule in
            if let rule { return rule }
            return try record(.rules, key: key).flatMap { $0.isDeleted ? nil : Self.rule(key: key, state: $0) }
        }
    }

    /// The live rule with the same normalised pattern as `text`, or nil (also
    /// for a pattern that does not parse).
    public func rule(pattern text: String) throws -> UrlRule? {
        guard let key = try? Pattern(text).key, let state = try record(.rules, key: key), !state.isDeleted else {
            return nil
        }
        return Self.rule(key: key, state: state)
    }

    /// The rules that may match a URL with this host: those filed under the
    /// host's label suffixes, through the `index_key` index. Patterns that no
    /// longer parse are left out.
    public func candidateRules(forHost host: String) throws -> [CompiledRule] {
        let keys = Pattern.candidateIndexKeys(forHost: host)
        // Not `joined(separator:)`: in `brsync resolve`, its first use looked
        // up a generic conformance at run time, ~2% of the whole process.
        var placeholders = ""
        for index in keys.indices { placeholders += index == keys.startIndex ? "?" : ", ?" }
        let rows = try read {
            try database.query(
                // INDEXED BY: without statistics SQLite would scan every rule by primary key.
                "SELECT key, fields FROM records INDEXED BY records_by_index_key WHERE collection = 'rules' AND index_key IN (\(placeholders)) AND deleted = 0",
                keys.map { .text($0) }
            ) { row in (row.string(0) ?? "", try RecordCoding.decodeFields(row, column: 1)) }
        }
        return rows.compactMap { key, state in try? CompiledRule(Self.rule(key: key, state: state)) }
    }

    /// The highest priority of any rule, or nil when there are none.
    public func maximumRulePriority() throws -> Int? {
        try read {
            try database.scalar("SELECT MAX(priority) FROM records WHERE collection = 'rules' AND deleted = 0")?
                .intValue
        }
    }

    /// Adds a rule, or updates the rule with the same normalised pattern.
    /// Without `priority` the rule gets a priority above every other rule, so
    /// the newest rule wins among equals (as on the phone).
    /// - Throws: for an invalid pattern or an unknown browser (with close matches).
    @discardableResult
    /// - Parameter keepTracking: sets whether the opened URL keeps its
    ///   tracking parameters; nil leaves it as it is (off for a new rule).
    public func addRule(
        pattern text: String, browser name: String, priority: Int?, keepTracking: Bool? = nil
    ) throws -> (rule: UrlRule, created: Bool) {
        let pattern: Pattern
        do { pattern = try Pattern(text) } catch { throw ReplicaError.invalidInput(error.description) }
        let browser = try requireBrowser(named: name)
        return try transaction {
            let existing = try record(.rules, key: pattern.key)
            let isNew = existing == nil || existing?.isDeleted == true
            let resolvedPriority =
                try priority
                ?? {
                    if !isNew, let current = existing?.fields["priority"]?.value.intValue {
                        return Int(clamping: current)
                    }
                    return RulePrecedence.priorityForNewRule(existingMaximum: try maximumRulePriority())
                }()
            var changes: [String: JSONValue] = [
                "pattern": .string(pattern.text), "browser": .string(browser.browser.id),
                "priority": .int(Int64(resolvedPriority)), RecordState.deletedField: .bool(false),
            ]
            if let keepTracking { changes["keepTracking"] = .bool(keepTracking) }
            if isNew {
                changes["createdAt"] = .int(currentMillis)
                changes["origin"] = .string(deviceID)
            }
            try write(.rules, key: pattern.key, changes: changes)
            guard let state = try record(.rules, key: pattern.key) else { throw ReplicaError.notFound("rule vanished") }
            return (Self.rule(key: pattern.key, state: state), isNew)
        }
    }

    /// Deletes the rule whose normalised pattern equals `text`'s (a tombstone).
    public func removeRule(pattern text: String) throws -> UrlRule {
        let pattern: Pattern
        do { pattern = try Pattern(text) } catch { throw ReplicaError.invalidInput(error.description) }
        return try transaction {
            // A rule is kept under its pattern's normal form; one another
            // client wrote under another key (the server does not read a
            // rule's fields) is found by the pattern it shows.
            let own = try record(.rules, key: pattern.key).flatMap { $0.isDeleted ? nil : pattern.key }
            let key =
                try own
                ?? liveRecords(.rules).first { _, state in
                    state.fields["pattern"]?.value.stringValue.flatMap { try? Pattern($0).key } == pattern.key
                }?.key ?? pattern.key
            guard let state = try record(.rules, key: key), !state.isDeleted else {
                let patterns = try rules().map(\.pattern)
                // The same pattern in rules for one app: name them with the option that reaches them.
                let forApps =
                    pattern.source != nil
                    ? []
                    : patterns.compactMap { text -> String? in
                        guard let other = try? Pattern(text), let app = other.source,
                            other.key == "\(Pattern.sourcePrefix)\(app) \(pattern.key)"
                        else { return nil }
                        return app
                    }
                let close = Suggestions.closeMatches(to: pattern.key, in: patterns)
                let hint =
                    !forApps.isEmpty
                    ? "rules for apps have it: \(forApps.sorted().map { "'--from-app \($0)'" }.joined(separator: ", "))"
                    : close.isEmpty
                        ? "see 'brsync rules list'" : "did you mean \(close.map { "'\($0)'" }.joined(separator: ", "))?"
                throw ReplicaError.notFound("no rule with the pattern '\(text)'; \(hint)")
            }
            try write(.rules, key: key, changes: [RecordState.deletedField: .bool(true)])
            return Self.rule(key: key, state: state)
        }
    }

    /// The synced setting that holds the tracking parameter list.
    public static let trackingParametersSetting = "tracking_parameters"

    /// How links are cleaned here: the synced parameter list, or the default
    /// one. A stored list that does not read (written by a newer client, or
    /// damaged) gives the default, so a click still opens.
    public func linkCleanup() throws -> LinkCleanup {
        guard let text = try setting(Self.trackingParametersSetting) else { return LinkCleanup() }
        return (try? LinkCleanup(parsing: text)) ?? LinkCleanup()
    }

    /// Sets the synced tracking parameter list; nil puts back the default.
    public func setTrackingParameters(_ cleanup: LinkCleanup?) throws {
        try setSetting(Self.trackingParametersSetting, cleanup?.settingText)
    }

    /// Takes `removing` off the tracking parameter list (case does not
    /// matter) and adds `adding` (NAME or PREFIX*) where not there yet, in
    /// one write: `cleanup params` and the settings window.
    /// - Returns: the list now.
    /// - Throws: ``ReplicaError/invalidInput(_:)`` for a name that is none,
    ///   one not on the list to remove, or a list past ``LinkCleanup/maxParameters``;
    ///   nothing is written then.
    @discardableResult
    public func changeTrackingParameters(adding: [String], removing: [String]) throws -> [String] {
        for name in adding {
            if let problem = LinkCleanup.problem(name: name) { throw ReplicaError.invalidInput(problem) }
        }
        return try transaction {
            var names = try linkCleanup().parameters
            for name in removing {
                guard let index = names.firstIndex(where: { $0.lowercased() == name.lowercased() }) else {
                    throw ReplicaError.invalidInput(
                        "'\(DisplayText.printable(name))' is not on the list; see 'brsync cleanup show'")
                }
                names.remove(at: index)
            }
            for name in adding where !names.contains(where: { $0.lowercased() == name.lowercased() }) {
                names.append(name)
            }
            guard names.count <= LinkCleanup.maxParameters else {
                throw ReplicaError.invalidInput("the list holds at most \(LinkCleanup.maxParameters) names")
            }
            try setTrackingParameters(LinkCleanup(parameters: names))
            return names
        }
    }
}
