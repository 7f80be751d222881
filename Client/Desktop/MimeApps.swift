import Glibc
import SystemServices

/// The default-application settings of the MIME Applications Associations
/// specification: `[Default Applications]` in `mimeapps.list`, the user's file
/// in `$XDG_CONFIG_HOME` first.
/// https://specifications.freedesktop.org/mime-apps-spec/latest/
public struct MimeApps: Sendable {
    public let configHome: String
    public let searchFiles: [String]

    public init(environment: [String: String]) {
        let xdg = XDGDirectories(environment: environment)
        let (configHome, dataHome, configDirs, dataDirs) = (xdg.configHome, xdg.dataHome, xdg.configDirs, xdg.dataDirs)
        self.configHome = configHome
        searchFiles =
            ["\(configHome)/mimeapps.list"] + configDirs.map { "\($0)/mimeapps.list" }
            + ["\(dataHome)/applications/mimeapps.list"] + dataDirs.map { "\($0)/applications/mimeapps.list" }
    }

    public var userFile: String { "\(configHome)/mimeapps.list" }

    /// The default desktop file ID for `mimeType`, the first one listed.
    public func defaultApplication(for mimeType: String) -> String? {
        for file in searchFiles {
            guard let text = BrowserDetector.read(file) else { continue }
            if let value = Self.defaults(in: text)[mimeType], let first = value.split(separator: ";").first {
                return String(first)
            }
        }
        return nil
    }

    static func defaults(in text: String) -> [String: String] {
        var inGroup = false
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let trimmed = line.trimmingCharacters()
            if trimmed.hasPrefix("[") { inGroup = trimmed == "[Default Applications]"; continue }
            guard inGroup, let equals = trimmed.firstIndex(of: "=") else { continue }
            values[String(trimmed[..<equals])] = String(trimmed[trimmed.index(after: equals)...])
        }
        return values
    }

    /// Sets (or with nil removes) the user's default for each MIME type,
    /// keeping every other line of the file as it was.
    public func setDefaults(_ changes: [(mimeType: String, desktopID: String?)]) throws(Launcher.Failure) {
        let text = BrowserDetector.read(userFile) ?? ""
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        var groupStart = lines.firstIndex { $0.trimmingCharacters() == "[Default Applications]" }
        if groupStart == nil {
            if !lines.isEmpty { lines.append("") }
            lines.append("[Default Applications]")
            groupStart = lines.count - 1
        }
        guard let start = groupStart else { return }
        for (mimeType, desktopID) in changes {
            var end = lines.count
            for index in (start + 1)..<lines.count where lines[index].trimmingCharacters().hasPrefix("[") {
                end = index
                break
            }
            let existing = ((start + 1)..<end).first { lines[$0].trimmingCharacters().hasPrefix("\(mimeType)=") }
            switch (existing, desktopID) {
            case (let index?, let id?): lines[index] = "\(mimeType)=\(id);"
            case (let index?, nil): lines.remove(at: index)
            case (nil, let id?): lines.insert("\(mimeType)=\(id);", at: start + 1)
            case (nil, nil): break
            }
        }
        try Files.write(lines.joined(separator: "\n") + "\n", to: userFile, mode: 0o644)
    }
}

extension String {
    func replacingPercent() -> String {
        var output = ""
        for character in self { output += character == "%" ? "%%" : String(character) }
        return output
    }
}

extension StringProtocol {
    func trimmingCharacters() -> String {
        String(
            drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed().drop { $0 == " " || $0 == "\t" || $0 == "\r" }
                .reversed())
    }
}

/// Writing files whole (``DurableFile``), into folders made as needed.
enum Files {
    static func write(_ text: String, to path: String, mode: mode_t) throws(Launcher.Failure) {
        let folder = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        makeFolders(folder)
        do {
            try DurableFile.write(text, to: path, mode: mode)
        } catch {
            throw Launcher.Failure(program: path, reason: error.reason)
        }
    }

    static func makeFolders(_ path: String) {
        var current = ""
        for part in path.split(separator: "/") {
            current += "/\(part)"
            mkdir(current, 0o755)
        }
    }
}

/// Makes brsync the default web browser, and puts the previous one back.
public struct DefaultBrowserRegistration: Sendable {
    public static let desktopID = "brsync.desktop"
    public static let mimeTypes = [
        "x-scheme-handler/http", "x-scheme-handler/https", "text/html", "application/xhtml+xml",
    ]

    public let applicationsFolder: String
    public let mimeApps: MimeApps
    /// Where the previous defaults are remembered: this machine's state
    /// (`$XDG_STATE_HOME/brsync`), apart from the replica, so a click can
    /// still reach the previous browser when the replica is gone.
    public let stateFile: String
    /// Where brsync 0.1 kept them (the brsync home); still read.
    let legacyStateFile: String

    public init(environment: [String: String], brsyncHome: String) {
        let xdg = XDGDirectories(environment: environment)
        let (dataHome, stateHome) = (xdg.dataHome, xdg.stateHome)
        applicationsFolder = "\(dataHome)/applications"
        mimeApps = MimeApps(environment: environment)
        stateFile = "\(stateHome)/brsync/previous-defaults"
        legacyStateFile = "\(brsyncHome)/previous-defaults"
    }

    /// The remembered previous defaults, as written.
    func readState() -> String? {
        BrowserDetector.read(stateFile) ?? BrowserDetector.read(legacyStateFile)
    }

    public var desktopFile: String { "\(applicationsFolder)/\(Self.desktopID)" }

    /// The desktop entry that hands links to `brsync open`, with the replica
    /// folder written in (a desktop session does not read the shell's
    /// `BRSYNC_HOME`). `TryExec` names the program too: once it is removed
    /// (`apt remove brsync` without `brsync uninstall`), desktops that read it
    /// (GIO's, KDE's) take the entry as not installed, so the next click
    /// opens in another browser instead of in nothing; `brsync doctor` says
    /// that the entry runs a brsync that cannot start.
    public static func desktopEntry(executable: String, home: String) -> String {
        """
        [Desktop Entry]
        Type=Application
        Name=brsync
        GenericName=Browser selector
        Comment=Open each link in the browser its rule names, or ask which one
        TryExec=\(executable.replacing("\\", with: "\\\\"))
        Exec=\(execArgument(executable)) open --home \(execArgument(home)) %u
        Icon=web-browser
        Terminal=false
        StartupNotify=false
        Categories=Network;WebBrowser;
        MimeType=x-scheme-handler/http;x-scheme-handler/https;text/html;application/xhtml+xml;

        """
    }

    /// An argument of an Exec line: the spec's quoting rules, then the string
    /// escape of desktop files (so a backslash is written as four). A `%`
    /// is doubled (`%%`), so a path cannot become a field code.
    static func execArgument(_ argument: String) -> String {
        let text = argument.replacingPercent()
        guard text.contains(where: { " \t\"'\\$`".contains($0) }) else { return text }
        var quoted = "\""
        for character in text {
            switch character {
            case "\\": quoted += "\\\\\\\\"
            case "\"", "`", "$": quoted += "\\\\\(character)"
            default: quoted.append(character)
            }
        }
        return quoted + "\""
    }

    /// Writes `brsync.desktop` and makes it the default for http, https and
    /// HTML, remembering the previous defaults. brsync itself and "no
    /// default" are never remembered as previous: a type whose current
    /// default is brsync, or has none, keeps what was remembered for it.
    /// - Returns: the previous default for each type.
    @discardableResult
    public func install(executable: String, home: String) throws(Launcher.Failure) -> [String: String] {
        try Files.write(Self.desktopEntry(executable: executable, home: home), to: desktopFile, mode: 0o644)
        var previous: [String: String] = [:]
        for type in Self.mimeTypes {
            if let current = mimeApps.defaultApplication(for: type), current != Self.desktopID, !current.isEmpty {
                previous[type] = current
            }
        }
        let remembered = rememberedDefaults()
        let merged = remembered.merging(previous) { _, new in new }
        if merged != remembered {
            let text = Self.mimeTypes.map { "\($0)=\(merged[$0] ?? "")" }.joined(separator: "\n") + "\n"
            try Files.write(text, to: stateFile, mode: 0o600)
        }
        try mimeApps.setDefaults(Self.mimeTypes.map { ($0, Self.desktopID) })
        return previous
    }

    /// The remembered previous defaults, by type (none empty).
    func rememberedDefaults() -> [String: String] {
        var previous: [String: String] = [:]
        for line in (readState() ?? "").split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.count == 2, !parts[1].isEmpty, parts[1] != Self.desktopID {
                previous[String(parts[0])] = String(parts[1])
            }
        }
        return previous
    }

    /// Puts the remembered defaults back where brsync is the default and
    /// removes `brsync.desktop`. A type whose default is not brsync (the
    /// user chose another since, or brsync was uninstalled already) is left
    /// alone: running it twice changes nothing the second time.
    /// - Returns: the defaults restored (an empty value: the type now has no user default).
    @discardableResult
    public func uninstall() throws(Launcher.Failure) -> [String: String] {
        let remembered = rememberedDefaults()
        var restored: [String: String] = [:]
        for type in Self.mimeTypes where mimeApps.defaultApplication(for: type) == Self.desktopID {
            restored[type] = remembered[type] ?? ""
        }
        try mimeApps.setDefaults(
            Self.mimeTypes.compactMap { type in
                restored[type].map { old in (type, old.isEmpty ? nil : old) }
            })
        unlink(desktopFile)
        unlink(stateFile)
        unlink(legacyStateFile)
        return restored
    }
}
