import Glibc
import Model
import SystemServices

/// Finds the web browsers installed on this machine from their XDG desktop
/// entries: `$XDG_DATA_HOME/applications`, every `$XDG_DATA_DIRS/applications`,
/// Flatpak exports (user and system) and Snap's desktop folder, earlier
/// folders first (an ID found earlier hides later ones, as the spec says).
public struct BrowserDetector: Sendable {
    /// A browser found on this machine.
    public struct Found: Sendable, Equatable {
        /// The catalog id, or a slug made from the desktop file ID.
        public let browserID: String
        public let isCatalogBrowser: Bool
        public let name: String
        public let desktopID: String
        public let path: String
        public let exec: String
        /// Desktop actions (New Private Window, …) with their commands.
        public let actions: [Action]

        public struct Action: Sendable, Equatable {
            public let id: String
            public let name: String
            public let exec: String
        }
    }

    /// A file skipped with the reason (malformed, not a browser, …): warnings.
    public struct Skipped: Sendable, Equatable {
        public let path: String
        public let reason: String
    }

    public let directories: [String]
    public let locale: String?
    let path: [String]

    /// The search folders from the environment, in precedence order.
    public static func standardDirectories(environment: [String: String]) -> [String] {
        let xdg = XDGDirectories(environment: environment)
        let dataHome = xdg.dataHome
        var folders: [String] = []
        // Each once, in the order of precedence (XDG_DATA_DIRS may name the data home again, or a folder twice).
        for folder in [dataHome] + xdg.dataDirs + [
            "\(dataHome)/flatpak/exports/share", "/var/lib/flatpak/exports/share", "/var/lib/snapd/desktop",
        ] {
            let trimmed = folder.count > 1 && folder.hasSuffix("/") ? String(folder.dropLast()) : folder
            if !folders.contains(trimmed) { folders.append(trimmed) }
        }
        return folders.map { "\($0)/applications" }
    }

    public init(directories: [String], locale: String?, path: [String]) {
        self.directories = directories
        self.locale = locale
        self.path = path
    }

    /// Every browser entry: handles `x-scheme-handler/http` or `https`, or is in
    /// the `WebBrowser` category; not `Hidden`, not `NoDisplay`, with a `TryExec`
    /// that exists. Native, Flatpak and Snap entries of one catalog browser are
    /// one browser (the first found wins).
    public func detect() -> (found: [Found], skipped: [Skipped]) {
        var seenIDs: Set<String> = []
        var seenBrowsers: Set<String> = []
        var found: [Found] = []
        var skipped: [Skipped] = []
        for directory in directories {
            for (desktopID, file) in Self.desktopFiles(in: directory) {
                guard seenIDs.insert(desktopID).inserted else { continue } // hidden by an earlier folder
                guard let text = Self.read(file) else {
                    skipped.append(Skipped(path: file, reason: "cannot be read"))
                    continue
                }
                let entry: DesktopEntry
                do { entry = try DesktopEntry(text: text, id: desktopID, path: file) } catch {
                    skipped.append(Skipped(path: file, reason: error.reason))
                    continue
                }
                guard entry.string("Type") == "Application" else { continue }
                let mimeTypes = entry.list("MimeType")
                let isBrowser =
                    mimeTypes.contains("x-scheme-handler/http") || mimeTypes.contains("x-scheme-handler/https")
                    || entry.list("Categories").contains("WebBrowser")
                guard isBrowser else { continue }
                if entry.bool("Hidden") || entry.bool("NoDisplay") { continue }
                if let tryExec = entry.string("TryExec"), !isExecutable(tryExec) {
                    skipped.append(Skipped(path: file, reason: "TryExec \(tryExec) is not installed"))
                    continue
                }
                guard let exec = entry.string("Exec"), (try? ExecCommand(exec)) != nil else {
                    skipped.append(Skipped(path: file, reason: "no usable Exec line"))
                    continue
                }
                if desktopID == "brsync.desktop" { continue } // brsync itself, when it is the default browser
                let catalog = BrowserCatalog.entry(forDesktopID: desktopID)
                let browserID = catalog?.id ?? Self.slug(desktopID)
                guard seenBrowsers.insert(browserID).inserted else { continue }
                let actions = entry.actions.compactMap { action -> Found.Action? in
                    guard let exec = action.exec else { return nil }
                    return Found.Action(id: action.id, name: action.name, exec: exec)
                }
                found.append(
                    Found(
                        browserID: browserID, isCatalogBrowser: catalog != nil,
                        name: entry.localized("Name", locale: locale) ?? catalog?.name ?? browserID,
                        desktopID: desktopID, path: file, exec: exec, actions: actions))
            }
        }
        return (found.sorted { $0.browserID < $1.browserID }, skipped)
    }

    /// Desktop files under a folder with their desktop file IDs (`sub/a.desktop` is `sub-a.desktop`).
    static func desktopFiles(in directory: String, prefix: String = "") -> [(String, String)] {
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var results: [(String, String)] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            let path = "\(directory)/\(name)"
            var info = stat()
            guard stat(path, &info) == 0 else { continue }
            if info.st_mode & S_IFMT == S_IFDIR {
                results += desktopFiles(in: path, prefix: prefix + name + "-")
            } else if name.hasSuffix(".desktop") {
                results.append((prefix + name, path))
            }
        }
        return results.sorted { $0.0 < $1.0 }
    }

    /// The `Icon=` of the desktop entry at `path` (a theme icon name or an
    /// absolute path), or nil.
    /// The `Name` of the desktop entry at `path` (untranslated), or nil.
    public static func name(ofEntryAt path: String) -> String? {
        guard let text = read(path), let entry = try? DesktopEntry(text: text, id: "", path: path) else { return nil }
        return entry.string("Name")
    }

    public static func icon(ofEntryAt path: String) -> String? {
        guard let text = read(path), let entry = try? DesktopEntry(text: text, id: "", path: path) else { return nil }
        return entry.string("Icon")
    }

    /// The action ids browsers give their private window (Firefox
    /// `private-window`/`new-private-window`, Chromium `incognito`, Chrome,
    /// Brave, Edge and Vivaldi `new-private-window`, …).
    static let privateActionIDs: Set<String> = [
        "private-window", "new-private-window", "incognito", "new-incognito-window",
        "private", "inprivate", "new-inprivate-window",
    ]

    /// The command of the private-window action of the desktop entry at
    /// `path` (an action with a known id, else one whose name says private,
    /// incognito or InPrivate), or nil.
    public static func privateWindowCommand(ofEntryAt path: String) -> String? {
        guard let text = read(path), let entry = try? DesktopEntry(text: text, id: "", path: path) else { return nil }
        let actions = entry.actions.filter { $0.exec.map { (try? ExecCommand($0)) != nil } ?? false }
        let byID = actions.first { privateActionIDs.contains($0.id.lowercased()) }
        let byName = actions.first { action in
            let name = action.name.lowercased()
            return ["private", "incognito", "inprivate"].contains { name.contains($0) }
        }
        return (byID ?? byName)?.exec
    }

    static func read(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes += buffer[0..<count]
            if bytes.count > 1 << 20 { return nil } // no desktop entry is a megabyte
        }
        return String(validating: bytes, as: UTF8.self)
    }

    func isExecutable(_ program: String) -> Bool {
        if program.hasPrefix("/") { return access(program, X_OK) == 0 }
        return path.contains { access("\($0)/\(program)", X_OK) == 0 }
    }

    /// `org.example.Browser.desktop` → `org.example.browser`, a valid browser id.
    static func slug(_ desktopID: String) -> String {
        var id = desktopID.lowercased()
        if id.hasSuffix(".desktop") { id.removeLast(8) }
        let mapped = id.map {
            ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "-" || $0 == "." || $0 == "_" ? $0 : "-"
        }
        let text = String(mapped).drop { !($0.isLetter || $0.isNumber) }
        return String(text.prefix(64)).isEmpty ? "browser" : String(text.prefix(64))
    }
}
