import Glibc

/// The XDG base directories, read once by the spec's rules
/// (https://specifications.freedesktop.org/basedir-spec/latest/): a value
/// that is unset, empty or relative is ignored and the default is used; a
/// list keeps its absolute entries and falls back to its default when none
/// is left. `HOME`, when unset or empty, is the user's entry in the password
/// database.
public struct XDGDirectories: Sendable, Equatable {
    public let home: String
    public let dataHome: String
    public let configHome: String
    public let stateHome: String
    /// Most important first.
    public let dataDirs: [String]
    public let configDirs: [String]

    public init(environment: [String: String]) {
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? Self.passwordDatabaseHome()
        func folder(_ name: String, _ fallback: String) -> String {
            environment[name].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "\(home)/\(fallback)"
        }
        func list(_ name: String, _ fallback: [String]) -> [String] {
            let entries = (environment[name] ?? "").split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
            return entries.isEmpty ? fallback : entries
        }
        self.home = home
        dataHome = folder("XDG_DATA_HOME", ".local/share")
        configHome = folder("XDG_CONFIG_HOME", ".config")
        stateHome = folder("XDG_STATE_HOME", ".local/state")
        dataDirs = list("XDG_DATA_DIRS", ["/usr/local/share", "/usr/share"])
        configDirs = list("XDG_CONFIG_DIRS", ["/etc/xdg"])
    }

    /// This process's.
    public static func current() -> XDGDirectories {
        var environment: [String: String] = [:]
        for name in ["HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_DIRS", "XDG_CONFIG_DIRS"] {
            if let value = getenv(name) { environment[name] = String(cString: value) }
        }
        return XDGDirectories(environment: environment)
    }

    private static func passwordDatabaseHome() -> String {
        guard let entry = getpwuid(getuid()), let directory = entry.pointee.pw_dir else { return "/" }
        return String(cString: directory)
    }
}
