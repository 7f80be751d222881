import JSON
import Model
import Storage
import SyncCore

/// A browser as this machine sees it: the synced part and the device-local part.
public struct LocalBrowser: Sendable, Hashable {
    public var browser: Browser
    /// The launch command on this machine (`%u` is the URL); nil when none.
    public var exec: String?
    public var desktopEntry: String?
    public var isDefault: Bool
    /// When the launch command is built from a base browser's (a synced
    /// profile with no command of its own here): that browser's id.
    public var execFrom: String? = nil
    /// Why this profile has no launch command here although its base
    /// browser has one: its arguments wait for this machine's approval
    /// (``awaitsApproval``), or the base's command cannot take them.
    public var profileHeld: String? = nil
    /// The profile's synced arguments are not ones synced data may choose,
    /// and this machine's user has not approved them (`brsync browsers approve`).
    public var awaitsApproval = false

    /// Enabled and launchable here.
    public var isUsable: Bool { browser.enabled && !(exec ?? "").isEmpty }
}

extension Replica {
    static let browserFields: Set<String> = ["name", "urlScheme", "urlFormat", "enabled", RecordState.deletedField]

    /// Every browser that is not deleted, with this machine's data, by id.
    public func browsers() throws -> [LocalBrowser] {
        let local = try read {
            try database.query("SELECT id, exec, desktop_entry FROM local_browsers") { row in
                (row.string(0) ?? "", row.string(1), row.string(2))
            }
        }
        var localByID: [String: (String?, String?)] = [:]
        for (id, exec, entry) in local { localByID[id] = (exec, entry) }
        let defaultID = try setting(SettingName.defaultBrowser)
        let list = try records(.browsers).compactMap { key, state -> LocalBrowser? in
            guard !state.isDeleted else { return nil }
            let browser = Self.browser(key: key, state: state)
            let here = localByID[key]
            return LocalBrowser(browser: browser, exec: here?.0, desktopEntry: here?.1, isDefault: defaultID == key)
        }
        // A profile with no command of its own here takes its base browser's
        // (that browser's own command: profiles of profiles are not followed),
        // when its arguments are ones synced data may choose or this
        // machine's user approved them.
        var approved: Set<String>?
        return try list.map { item in
            guard item.exec == nil, let profile = item.browser.profile else { return item }
            var derived = item
            guard let base = list.first(where: { $0.browser.id == profile.base }), base.browser.profile == nil else {
                if list.contains(where: { $0.browser.id == profile.base }) {
                    derived.profileHeld =
                        "its base '\(profile.base)' is a profile itself, and profiles of profiles are not run"
                }
                return derived
            }
            guard let baseExec = base.exec else { return item }
            if let problem = try Self.approvalProblem(
                item.browser,
                approved: {
                    if approved == nil { approved = try approvedProfiles() }
                    return approved ?? []
                })
            {
                derived.profileHeld = problem
                derived.awaitsApproval = true
                return derived
            }
            switch Result(catching: { () throws(ExecCommand.Problem) in try profile.command(from: baseExec) }) {
            case .success(let exec):
                derived.exec = exec
                derived.execFrom = base.browser.id
            case .failure(let problem):
                derived.profileHeld = "the arguments cannot go to '\(base.browser.id)' safely: \(problem.reason)"
            }
            return derived
        }
    }

    static func browser(key: String, state: RecordState) -> Browser {
        let values = state.values
        var extra = values
        for field in browserFields { extra[field] = nil }
        return Browser(
            id: key, name: values["name"]?.stringValue ?? key, urlScheme: values["urlScheme"]?.stringValue ?? "",
            urlFormat: values["urlFormat"]?.stringValue ?? URLFormat.passThrough,
            enabled: values["enabled"]?.boolValue ?? true, extra: extra)
    }

    /// The browser a rule or command names: an id, a catalog id, or an iOS scheme
    /// (`googlechromes` names `chrome`). Deleted browsers are not found.
    public func findBrowser(named name: String, in list: [LocalBrowser]? = nil) throws -> LocalBrowser? {
        let all = try list ?? browsers()
        if let exact = all.first(where: { $0.browser.id == name }) { return exact }
        let lower = name.lowercased()
        if let entry = BrowserCatalog.entry(named: lower), let found = all.first(where: { $0.browser.id == entry.id }) {
            return found
        }
        return all.first { !$0.browser.urlScheme.isEmpty && $0.browser.urlScheme.lowercased() == lower }
    }

    /// Adds or updates a browser. Catalog ids (or schemes) take name, scheme
    /// and format from the catalog unless given. Re-adding a deleted browser
    /// brings it back.
    /// - Returns: the browser's id.
    @discardableResult
    /// - Parameter profile: makes the browser a profile of another (synced;
    ///   each machine builds its command from its own base browser's).
    public func addBrowser(
        id requested: String, name: String?, format: String?, scheme: String?, exec: String?,
        profile: BrowserProfile? = nil
    ) throws -> String {
        let entry = BrowserCatalog.entry(named: requested)
        let id = entry?.id ?? requested
        if let problem = Browser.problem(withID: id) {
            throw ReplicaError.invalidInput("invalid browser id '\(requested)': \(problem)")
        }
        if let format, let problem = URLFormat.problem(with: format) { throw ReplicaError.invalidInput(problem) }
        if let exec { try Self.validateExec(exec) }
        if let name, name.isBlank {
            throw ReplicaError.invalidInput("a browser name must not be blank")
        }
        try transaction {
            let existing = try record(.browsers, key: id)
            var changes: [String: JSONValue] = [RecordState.deletedField: .bool(false)]
            let isNew = existing == nil || existing?.isDeleted == true
            if let name {
                changes["name"] = .string(name)
            } else if isNew {
                changes["name"] = .string(entry?.name ?? id)
            }
            if let format {
                changes["urlFormat"] = .string(format)
            } else if isNew {
                changes["urlFormat"] = .string(entry?.urlFormat ?? URLFormat.passThrough)
            }
            if let scheme {
                changes["urlScheme"] = .string(scheme)
            } else if isNew {
                changes["urlScheme"] = .string(entry?.urlScheme ?? "")
            }
            if isNew { changes["enabled"] = .bool(true) }
            if let profile {
                guard profile.base != id else {
                    throw ReplicaError.invalidInput("a browser cannot be a profile of itself")
                }
                changes.merge(profile.fields) { $1 }
            }
            try write(.browsers, key: id, changes: changes)
            // A profile made here runs here with the arguments its maker gave.
            if profile != nil { try recordApproval(id) }
            if let exec { try setLaunchCommand(exec, for: id) }
        }
        return id
    }

    static func validateExec(_ exec: String) throws {
        if exec.isBlank {
            throw ReplicaError.invalidInput("a launch command must not be blank")
        }
        if exec.contains(where: { $0 == "\n" || $0 == "\r" || $0 == "\0" }) {
            throw ReplicaError.invalidInput("a launch command must be one line")
        }
    }

    /// Sets this machine's launch command for a browser (device-local, never synced).
    public func setLaunchCommand(_ exec: String, for id: String) throws {
        try Self.validateExec(exec)
        try transaction {
            try database.run(
                "INSERT INTO local_browsers (id, exec, manual) VALUES (?, ?, 1) ON CONFLICT (id) DO UPDATE SET exec = excluded.exec, manual = 1",
                [.text(id), .text(exec)])
        }
    }

    /// Records what detection found on this machine: launch command and
    /// desktop entry. A command set by hand is kept unless `replacing`.
    /// - Returns: false when a command set by hand was kept.
    @discardableResult
    public func setDetected(_ id: String, exec: String, desktopEntry: String, replacing: Bool = false) throws -> Bool {
        try Self.validateExec(exec)
        return try transaction {
            let manual =
                try database.scalar("SELECT manual FROM local_browsers WHERE id = ?", [.text(id)])?.intValue == 1
            let keep = manual && !replacing
            try database.run(
                """
                INSERT INTO local_browsers (id, exec, desktop_entry, installed, manual) VALUES (?, ?, ?, 1, 0)
                ON CONFLICT (id) DO UPDATE SET desktop_entry = excluded.desktop_entry, installed = 1,
                    exec = CASE WHEN ? THEN exec ELSE excluded.exec END, manual = CASE WHEN ? THEN 1 ELSE 0 END
                """, [.text(id), .text(exec), .text(desktopEntry), .integer(keep ? 1 : 0), .integer(keep ? 1 : 0)])
            return !keep
        }
    }

    /// Resolves a user-typed browser name to an existing browser, or throws with close matches.
    public func requireBrowser(named name: String) throws -> LocalBrowser {
        let all = try browsers()
        if let found = try findBrowser(named: name, in: all) { return found }
        if let entry = BrowserCatalog.entry(named: name) {
            throw ReplicaError.notFound("browser '\(entry.id)' is not added yet: run 'brsync browsers add \(entry.id)'")
        }
        let candidates = all.map(\.browser.id) + BrowserCatalog.entries.map(\.id)
        let close = Suggestions.closeMatches(to: name, in: candidates)
        let hint =
            close.isEmpty
            ? "see 'brsync browsers list'" : "did you mean \(close.map { "'\($0)'" }.joined(separator: ", "))?"
        throw ReplicaError.notFound("unknown browser '\(name)'; \(hint)")
    }

    public func removeBrowser(named name: String) throws -> String {
        let found = try requireBrowser(named: name)
        try write(.browsers, key: found.browser.id, changes: [RecordState.deletedField: .bool(true)])
        return found.browser.id
    }

    public func setBrowserEnabled(named name: String, _ enabled: Bool) throws -> String {
        let found = try requireBrowser(named: name)
        try write(.browsers, key: found.browser.id, changes: ["enabled": .bool(enabled)])
        return found.browser.id
    }

    // MARK: - Settings

    /// A setting's value, or nil when unset or deleted.
    public func setting(_ name: String) throws -> String? {
        guard let state = try record(.settings, key: name), !state.isDeleted else { return nil }
        return state.fields["value"]?.value.stringValue
    }

    public func setSetting(_ name: String, _ value: String?) throws {
        if let value {
            try write(.settings, key: name, changes: ["value": .string(value), RecordState.deletedField: .bool(false)])
        } else {
            try write(.settings, key: name, changes: [RecordState.deletedField: .bool(true)])
        }
    }

    /// No default browser: links no rule decides go to the picker.
    public func clearDefaultBrowser() throws {
        try setSetting(SettingName.defaultBrowser, nil)
    }

    public func setDefaultBrowser(named name: String) throws -> String {
        let found = try requireBrowser(named: name)
        try setSetting(SettingName.defaultBrowser, found.browser.id)
        return found.browser.id
    }
}
