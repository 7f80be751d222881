import ArgumentParser
import Foundation
import Replica

/// Options every command takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "The replica's folder (default: $BRSYNC_HOME, else $XDG_DATA_HOME/brsync, else ~/.local/share/brsync).",
        valueName: "dir"))
    var home: String?

    /// The replica folder: `--home`, `BRSYNC_HOME`, `$XDG_DATA_HOME/brsync`, `~/.local/share/brsync`.
    var resolvedHome: String {
        let environment = ProcessInfo.processInfo.environment
        if let home, !home.isEmpty { return Self.absolute(home) }
        if let home = environment["BRSYNC_HOME"], !home.isEmpty { return Self.absolute(home) }
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") { return "\(data)/brsync" }
        let user = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return "\(user)/.local/share/brsync"
    }

    static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        if path.hasPrefix("~/"), let user = ProcessInfo.processInfo.environment["HOME"] { return user + path.dropFirst(1) }
        return FileManager.default.currentDirectoryPath + "/" + path
    }

    /// How long a write waits for another process's lock: `BRSYNC_BUSY_TIMEOUT_MS`, default 5000.
    var busyTimeout: Int32 {
        ProcessInfo.processInfo.environment["BRSYNC_BUSY_TIMEOUT_MS"].flatMap { Int32($0) }.map { max(0, $0) }
            ?? Replica.defaultBusyTimeoutMilliseconds
    }

    func openReplica() throws -> Replica {
        try Replica.open(home: resolvedHome, busyTimeout: busyTimeout)
    }
}
