import Glibc
import Model

/// The application a link came from, found by walking this process's
/// parents in `/proc` (brsync is started by the app itself, or by
/// `xdg-open`, `gio` or a shell the app started). A sandboxed app's links
/// arrive through the OpenURI portal, which names no app.
public struct SourceApp: Sendable, Equatable, CustomStringConvertible {
    /// How the app was named.
    public enum Kind: String, Sendable {
        /// Its desktop file (`GIO_LAUNCHED_DESKTOP_FILE`, set by whoever
        /// launched it from its menu entry): the id is the file's name
        /// without `.desktop`.
        case desktopFile = "desktop-file"
        /// A Flatpak's application id (`/.flatpak-info`, or `FLATPAK_ID`).
        case flatpak
        /// A Snap's name (its cgroup, `snap.NAME.…`).
        case snap
        /// The program's file name (nothing better was there).
        case executable
    }

    /// The id rules name the app by: a desktop-file id, Flatpak id, Snap
    /// name or program name (letters, digits, `.`, `_`, `-`).
    public let id: String
    public let kind: Kind
    /// The process it was found in.
    public let pid: Int32

    public var description: String { "\(id) (\(kind.rawValue), process \(pid))" }

    /// Why no app could be named.
    public enum Unknown: Error, Sendable, Equatable, CustomStringConvertible {
        /// The link came through the desktop's OpenURI portal (a sandboxed
        /// app), which does not say which app asked.
        case portal
        /// The process that started brsync is gone (it exited at once),
        /// or none of its parents is an app.
        case gone
        public var description: String {
            switch self {
            case .portal:
                "unknown app: the link came through the desktop portal (a sandboxed app), which does not say which"
            case .gone: "unknown app: the program that opened the link had exited, or was no app (a session's service)"
            }
        }
    }

    /// Programs that only pass a link on: the walk goes on to their parent.
    static let passersOn: Set<String> = [
        "xdg-open", "gio", "gio-launch-desktop", "gvfs-open", "kde-open", "kde-open5", "kde-open6", "kfmclient",
        "kioclient",
        "kioclient5", "exo-open", "mimeopen", "sensible-browser", "x-www-browser", "www-browser", "gnome-www-browser",
        "sh", "bash", "dash", "zsh", "fish", "ksh", "env", "setsid", "nohup", "timeout", "stdbuf", "flock",
        "brsync", "brsync-sync", "brsync-picker",
    ]

    /// Portal processes: a link through them names no app.
    static let portals: Set<String> = [
        "xdg-desktop-portal", "xdg-desktop-portal-gnome", "xdg-desktop-portal-gtk", "xdg-desktop-portal-kde",
        "xdg-desktop-portal-wlr", "xdg-desktop-portal-hyprland", "xdg-desktop-portal-lxqt",
    ]

    /// Where the walk ends without an app: the process that adopts orphans
    /// (a session's systemd, a container's init), and the session bus.
    static let stops: Set<String> = [
        "systemd", "init", "tini", "dumb-init", "dbus-daemon", "dbus-broker", "dbus-broker-launch",
    ]

    /// Interpreters: a script is named by its own name (`comm`), not theirs.
    static let interpreters: Set<String> = [
        "python", "python3", "perl", "ruby", "node", "gjs", "java", "lua", "php", "tclsh", "wish",
    ]

    /// The app that started the process `pid` (by default this one's
    /// parent), or why there is none. Reads a few small files per parent,
    /// at most 16 parents up.
    /// - Parameter proc: the proc file system (tests give another root).
    public static func find(from pid: Int32 = getppid(), proc: String = "/proc") -> Result<SourceApp, Unknown> {
        var current = pid
        for _ in 0..<16 {
            guard current > 1, let stat = readFile("\(proc)/\(current)/stat"), let (comm, parent) = parseStat(stat)
            else { return .failure(.gone) }
            // (The kernel cuts a process's name to 15 characters: the portals' are longer.)
            if portals.contains(comm) || comm.hasPrefix("xdg-desktop-po") { return .failure(.portal) }
            // A launcher or shell passes the link on: its parent is read next
            // (what it inherited says nothing of its own).
            if passersOn.contains(comm) {
                current = parent
                continue
            }
            let environment = readFile("\(proc)/\(current)/environ").map(parseEnvironment) ?? [:]
            if let info = readFile("\(proc)/\(current)/root/.flatpak-info"), let id = flatpakID(info) {
                return .success(SourceApp(id: id, kind: .flatpak, pid: current))
            }
            if let id = environment["FLATPAK_ID"], isID(id) {
                return .success(SourceApp(id: id, kind: .flatpak, pid: current))
            }
            do {
                // The desktop file names the process it was launched as (its
                // pid beside it), or a process of the same program (an app's
                // helper processes); a program started from a terminal that
                // was launched from its menu inherits the terminal's.
                if let file = environment["GIO_LAUNCHED_DESKTOP_FILE"], let id = desktopID(file), id != "brsync",
                    launchedAs(environment["GIO_LAUNCHED_DESKTOP_FILE_PID"], current, proc: proc)
                {
                    return .success(SourceApp(id: id, kind: .desktopFile, pid: current))
                }
                if let cgroup = readFile("\(proc)/\(current)/cgroup"), let name = snapName(cgroup) {
                    return .success(SourceApp(id: name, kind: .snap, pid: current))
                }
                if stops.contains(comm) { return .failure(.gone) }
                // A script runs its interpreter's program under its own name.
                let program = executableName(proc: proc, pid: current) ?? comm
                let isScript =
                    program != comm
                    && (interpreters.contains(program) || program.hasPrefix("python") || passersOn.contains(program))
                let name = isScript ? scriptName(proc: proc, pid: current, comm: comm) : program
                if isID(name), !passersOn.contains(name) {
                    return .success(SourceApp(id: name, kind: .executable, pid: current))
                }
            }
            current = parent
        }
        return .failure(.gone)
    }

    /// Whether a desktop file found in the environment of process `pid`
    /// names it: its `GIO_LAUNCHED_DESKTOP_FILE_PID` is `pid`, or a process
    /// of the same program; or there is none (older launchers).
    static func launchedAs(_ launchedPID: String?, _ pid: Int32, proc: String) -> Bool {
        guard let launchedPID else { return true }
        guard let launched = Int32(launchedPID), launched > 1 else { return false }
        if launched == pid { return true }
        guard let own = executableName(proc: proc, pid: pid), let theirs = executableName(proc: proc, pid: launched)
        else { return false }
        return own == theirs
    }

    /// A script's name: the file its interpreter runs (from its command
    /// line), whose name the kernel keeps whole, unlike `comm` (15 characters).
    static func scriptName(proc: String, pid: Int32, comm: String) -> String {
        guard let line = readFile("\(proc)/\(pid)/cmdline") else { return comm }
        for argument in line.split(separator: "\0").dropFirst().prefix(3) where !argument.hasPrefix("-") {
            let name = argument.split(separator: "/").last.map(String.init) ?? String(argument)
            if name.hasPrefix(comm) { return name }
        }
        return comm
    }

    /// A file's bytes as text (nil when it cannot be read); /proc files are small.
    static func readFile(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 256 * 1024 {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `comm` and the parent's pid from `/proc/PID/stat` (`PID (COMM) STATE PPID …`;
    /// the name may hold spaces and parentheses: it ends at the last `)`).
    static func parseStat(_ text: String) -> (String, Int32)? {
        guard let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")") else { return nil }
        let comm = String(text[text.index(after: open)..<close])
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count >= 2, let parent = Int32(fields[1]) else { return nil }
        return (comm, parent)
    }

    static func parseEnvironment(_ text: String) -> [String: String] {
        var environment: [String: String] = [:]
        for entry in text.split(separator: "\0") {
            guard let equals = entry.firstIndex(of: "=") else { continue }
            environment[String(entry[..<equals])] = String(entry[entry.index(after: equals)...])
        }
        return environment
    }

    /// `name=` of the `[Application]` group of a `.flatpak-info` file.
    static func flatpakID(_ info: String) -> String? {
        var inApplication = false
        for line in info.split(separator: "\n") {
            let trimmed = line.trimmingSpaces
            if trimmed.hasPrefix("[") { inApplication = trimmed == "[Application]"; continue }
            if inApplication, trimmed.hasPrefix("name="), isID(String(trimmed.dropFirst(5))) {
                return String(trimmed.dropFirst(5))
            }
        }
        return nil
    }

    /// The desktop-file id of a `.desktop` file's path.
    static func desktopID(_ path: String) -> String? {
        guard let name = path.split(separator: "/").last, name.hasSuffix(".desktop") else { return nil }
        let id = String(name.dropLast(8))
        return isID(id) ? id : nil
    }

    /// The Snap a process runs in, from its cgroup (`…/snap.NAME.APP-….scope`).
    static func snapName(_ cgroup: String) -> String? {
        for line in cgroup.split(separator: "\n") {
            for part in line.split(separator: "/") where part.hasPrefix("snap.") {
                let name = part.dropFirst(5).prefix { $0 != "." }
                if isID(String(name)) { return String(name) }
            }
        }
        return nil
    }

    /// The file name of the program a process runs (`/proc/PID/exe`).
    static func executableName(proc: String, pid: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("\(proc)/\(pid)/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        let path = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // A program replaced since it started is " (deleted)".
        let name = path.split(separator: "/").last.map(String.init) ?? path
        return name.hasSuffix(" (deleted)") ? String(name.dropLast(10)) : name
    }

    /// Whether `text` can name an app (``Model/Pattern/isSourceID(_:)``).
    public static func isID(_ text: String) -> Bool { Pattern.isSourceID(text) }
}

private extension Substring {
    var trimmingSpaces: Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" || text.last == "\r" { text = text.dropLast() }
        return text
    }
}
