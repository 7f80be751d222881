import JSON
import Model
import SyncCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The export format: the synced data of a replica (device-local launch
/// commands are not part of it). `brsync import` reads it back.
///
/// `{"format": "brsync-export", "version": 1, "browsers": [Browser…],
///   "rules": [UrlRule…], "settings": {"defaultBrowser": "firefox"}}`
public struct ExportDocument: Codable, Sendable {
    public static let formatName = "brsync-export"
    public static let currentVersion = 1

    public var format: String?
    public var version: Int?
    public var browsers: [Browser]
    public var rules: [UrlRule]
    public var settings: [String: String]

    public init(browsers: [Browser], rules: [UrlRule], settings: [String: String]) {
        format = Self.formatName
        version = Self.currentVersion
        self.browsers = browsers
        self.rules = rules
        self.settings = settings
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        format = try container.decodeIfPresent(String.self, forKey: .format)
        version = try container.decodeIfPresent(Int.self, forKey: .version)
        browsers = try container.decodeIfPresent([Browser].self, forKey: .browsers) ?? []
        rules = try container.decodeIfPresent([UrlRule].self, forKey: .rules) ?? []
        settings = try container.decodeIfPresent([String: String].self, forKey: .settings) ?? [:]
    }
}

extension Replica {
    /// Settings that describe this account rather than a setup to carry
    /// elsewhere: device names, and the ids of the keys rotations replaced
    /// (an imported id would make this machine treat the account's current
    /// key as one it replaced, and move the server "forward" off it). Export
    /// leaves them out and import ignores them.
    static func isAccountSetting(_ name: String) -> Bool {
        name.hasPrefix(deviceNamePrefix) || name == replacedKeysSetting || name == keyCertificatesSetting
    }

    public func export() throws -> ExportDocument {
        var settings: [String: String] = [:]
        for (key, state) in try records(.settings) where !state.isDeleted && !Self.isAccountSetting(key) {
            if let value = state.fields["value"]?.value.stringValue { settings[key] = value }
        }
        return ExportDocument(browsers: try browsers().map(\.browser), rules: try rules(), settings: settings)
    }

    /// What an import changed.
    public struct ImportSummary: Sendable, Equatable {
        public var browsers = 0
        public var rules = 0
        public var settings = 0
    }

    /// Checks every record of `document` first, then writes all of them in one
    /// transaction: either everything is imported or nothing is.
    public func importDocument(_ document: ExportDocument) throws -> ImportSummary {
        if let format = document.format, format != ExportDocument.formatName {
            throw ReplicaError.invalidInput("not a brsync export: format is '\(format)'")
        }
        if let version = document.version, version > ExportDocument.currentVersion {
            throw ReplicaError.invalidInput(
                "the export has version \(version), newer than this brsync reads (\(ExportDocument.currentVersion))")
        }
        var browserIDs: Set<String> = []
        for browser in document.browsers {
            if let problem = Browser.problem(withID: browser.id) {
                throw ReplicaError.invalidInput("browser '\(browser.id)': \(problem)")
            }
            if let problem = URLFormat.problem(with: browser.urlFormat) {
                throw ReplicaError.invalidInput("browser '\(browser.id)': \(problem)")
            }
            guard browserIDs.insert(browser.id).inserted else {
                throw ReplicaError.invalidInput("browser '\(browser.id)' appears twice")
            }
        }
        var ruleKeys: [String: String] = [:]
        var patterns: [Pattern] = []
        for rule in document.rules {
            let pattern: Pattern
            do { pattern = try Pattern(rule.pattern) } catch { throw ReplicaError.invalidInput(error.description) }
            if let other = ruleKeys[pattern.key] {
                throw ReplicaError.invalidInput("the rules '\(other)' and '\(rule.pattern)' are the same pattern")
            }
            if rule.browser.isBlank {
                throw ReplicaError.invalidInput("the rule '\(rule.pattern)' names no browser")
            }
            ruleKeys[pattern.key] = rule.pattern
            patterns.append(pattern)
        }
        var summary = ImportSummary()
        try transaction {
            for browser in document.browsers {
                var changes = browser.extra
                changes["name"] = .string(browser.name)
                changes["urlScheme"] = .string(browser.urlScheme)
                changes["urlFormat"] = .string(browser.urlFormat)
                changes["enabled"] = .bool(browser.enabled)
                changes[RecordState.deletedField] = .bool(false)
                if try write(.browsers, key: browser.id, changes: changes) != .unchanged { summary.browsers += 1 }
            }
            for (rule, pattern) in zip(document.rules, patterns) {
                var changes = rule.extra
                changes["pattern"] = .string(pattern.text)
                changes["browser"] = .string(rule.browser)
                changes["priority"] = .int(Int64(rule.priority))
                if rule.createdAtMillis != 0 {
                    changes["createdAt"] = .int(rule.createdAtMillis)
                } else if (try record(.rules, key: pattern.key))?.fields["createdAt"]?.value.intValue ?? 0 == 0 {
                    // A file without the time (hand-written, an older app's): made now, here; a rule held keeps its own.
                    changes["createdAt"] = .int(currentMillis)
                }
                changes["origin"] = rule.origin.map { .string($0) } ?? .null
                changes[RecordState.deletedField] = .bool(false)
                if try write(.rules, key: pattern.key, changes: changes) != .unchanged { summary.rules += 1 }
            }
            for (name, value) in document.settings.sorted(by: { $0.key < $1.key }) where !Self.isAccountSetting(name) {
                let changes: [String: JSONValue] = ["value": .string(value), RecordState.deletedField: .bool(false)]
                if try write(.settings, key: name, changes: changes) != .unchanged { summary.settings += 1 }
            }
        }
        return summary
    }
}
