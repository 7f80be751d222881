/// A parsed `.desktop` file (Desktop Entry Specification 1.5): groups of
/// `key=value` lines, localised keys (`Name[de]`), value escapes, desktop
/// actions. https://specifications.freedesktop.org/desktop-entry-spec/latest/
public struct DesktopEntry: Sendable, Equatable {
    /// Keys by group name (`Desktop Entry`, `Desktop Action new-private-window`, …);
    /// localised keys keep their locale (`Name[de]`).
    public let groups: [String: [String: String]]
    /// The desktop file ID (`org.mozilla.firefox.desktop`) and where it was read.
    public let id: String
    public let path: String

    /// Why a file is not a desktop entry.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let path: String
        public let line: Int
        public let reason: String
        public var description: String { "\(path):\(line): \(reason)" }
    }

    /// Parses the text of a desktop entry.
    /// - Throws: ``Problem`` with the line when the file is malformed.
    public init(text: String, id: String, path: String) throws(Problem) {
        var groups: [String: [String: String]] = [:]
        var current: String?
        for (offset, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            if trimmed.hasPrefix("[") {
                guard trimmed.hasSuffix("]"), trimmed.count > 2 else {
                    throw Problem(path: path, line: offset + 1, reason: "a group header must be [Name]")
                }
                let name = String(trimmed.dropFirst().dropLast())
                guard groups[name] == nil else {
                    throw Problem(path: path, line: offset + 1, reason: "the group [\(name)] appears twice")
                }
                groups[name] = [:]
                current = name
                continue
            }
            guard let group = current else {
                throw Problem(path: path, line: offset + 1, reason: "a key before any group")
            }
            guard let equals = trimmed.firstIndex(of: "=") else {
                throw Problem(path: path, line: offset + 1, reason: "a line that is not key=value")
            }
            let key = String(trimmed[..<equals].reversed().drop { $0 == " " || $0 == "\t" }.reversed())
            let value = String(trimmed[trimmed.index(after: equals)...].drop { $0 == " " || $0 == "\t" })
            guard !key.isEmpty, key.allSatisfy({ $0.isLetter || $0.isNumber || "-[]@_.".contains($0) }) else {
                throw Problem(path: path, line: offset + 1, reason: "an invalid key '\(key)'")
            }
            if groups[group]?[key] == nil { groups[group]?[key] = value }
        }
        guard groups["Desktop Entry"] != nil else {
            throw Problem(path: path, line: 1, reason: "no [Desktop Entry] group")
        }
        self.groups = groups
        self.id = id
        self.path = path
    }

    /// A string value of the main group, unescaped (`\s \n \t \r \\`).
    public func string(_ key: String, group: String = "Desktop Entry") -> String? {
        groups[group]?[key].map(Self.unescape)
    }

    /// A localised string: the best of `key[ll_CC@mod]`, `key[ll_CC]`,
    /// `key[ll@mod]`, `key[ll]`, then `key` (spec, "Localized values for keys").
    public func localized(_ key: String, locale: String?, group: String = "Desktop Entry") -> String? {
        if let locale, !locale.isEmpty, locale != "C", locale != "POSIX" {
            let base = locale.split(separator: ".").first.map(String.init) ?? locale // drop .ENCODING
            let modifier = base.split(separator: "@").dropFirst().first.map { "@\($0)" } ?? ""
            let languageCountry = base.split(separator: "@").first.map(String.init) ?? base
            let language = languageCountry.split(separator: "_").first.map(String.init) ?? languageCountry
            for candidate in [languageCountry + modifier, languageCountry, language + modifier, language] {
                if let value = string("\(key)[\(candidate)]", group: group) { return value }
            }
        }
        return string(key, group: group)
    }

    public func bool(_ key: String) -> Bool {
        string(key) == "true"
    }

    /// A `;`-separated list (`\;` is a literal semicolon).
    public func list(_ key: String, group: String = "Desktop Entry") -> [String] {
        guard let raw = groups[group]?[key] else { return [] }
        var items: [String] = []
        var current = ""
        var escaped = false
        for character in raw {
            if escaped {
                current.append(character == ";" ? ";" : "\\\(character)")
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == ";" {
                items.append(Self.unescape(current))
                current = ""
            } else {
                current.append(character)
            }
        }
        if !current.isEmpty { items.append(Self.unescape(current)) }
        return items
    }

    /// The desktop actions this entry declares, with their names and Exec lines.
    public var actions: [(id: String, name: String, exec: String?)] {
        list("Actions").compactMap { id in
            let group = "Desktop Action \(id)"
            guard groups[group] != nil, let name = string("Name", group: group) else { return nil }
            return (id, name, string("Exec", group: group))
        }
    }

    static func unescape(_ text: String) -> String {
        guard text.contains("\\") else { return text }
        var output = ""
        var escaped = false
        for character in text {
            if escaped {
                switch character {
                case "s": output.append(" ")
                case "n": output.append("\n")
                case "t": output.append("\t")
                case "r": output.append("\r")
                case "\\": output.append("\\")
                default: output.append("\\"); output.append(character)
                }
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else {
                output.append(character)
            }
        }
        if escaped { output.append("\\") }
        return output
    }
}
