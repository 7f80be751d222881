import ArgumentParser
import Glibc
import Replica
import SystemServices

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Options every command takes.
public struct GlobalOptions: ParsableArguments {
    public init() {}

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The replica's folder (default: $BRSYNC_HOME, else $XDG_DATA_HOME/brsync, else ~/.local/share/brsync).",
            valueName: "dir"), completion: .directory)
    var home: String?

    public var resolvedHome: String { Self.home(flag: home) }

    /// The replica folder: `--home`, `BRSYNC_HOME`, `$XDG_DATA_HOME/brsync`, `~/.local/share/brsync`.
    public static func home(flag: String?) -> String {
        if let home = flag, !home.isEmpty { return absolute(home) }
        if let home = ProcessEnvironment.value("BRSYNC_HOME"), !home.isEmpty { return absolute(home) }
        return XDGDirectories.current().dataHome + "/brsync"
    }

    public static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        if path.hasPrefix("~/"), let user = ProcessEnvironment.value("HOME") { return user + path.dropFirst(1) }
        return FileManager.default.currentDirectoryPath + "/" + path
    }

    /// Takes global options given before the subcommand (`brsync --home DIR
    /// init`): `--home` becomes `BRSYNC_HOME` for this process and the ones it
    /// starts (the sync helper), which it equals. The rest is returned for the
    /// parser.
    public static func hoist(_ arguments: [String]) throws -> [String] {
        var rest = arguments[...]
        while let first = rest.first, first.hasPrefix("--home") {
            let value: String
            if first == "--home", rest.count >= 2, !rest[rest.startIndex + 1].hasPrefix("-") {
                value = rest[rest.startIndex + 1]
                rest = rest.dropFirst(2)
            } else if first.hasPrefix("--home=") {
                value = String(first.dropFirst("--home=".count))
                rest = rest.dropFirst()
            } else if first == "--home" {
                throw CLIFailure(message: "--home needs a folder: brsync --home DIR COMMAND …")
            } else {
                break
            }
            guard !value.isEmpty else {
                throw CLIFailure(message: "--home needs a folder: brsync --home DIR COMMAND …")
            }
            setenv("BRSYNC_HOME", absolute(value), 1)
        }
        // Between a command group and its subcommand (`brsync rules --home
        // DIR list`), where the parser takes no option: taken the same way.
        var words = Array(rest)
        if words.count >= 3, !words[0].hasPrefix("-"), words[1] == "--home" || words[1].hasPrefix("--home=") {
            let taken = words[1] == "--home" ? Array(words[1...2]) : [words[1]]
            words.removeSubrange(1..<(1 + taken.count))
            // not a group's subcommand: the parser says
            guard words.count >= 2, !words[1].hasPrefix("-") else { return Array(rest) }
            _ = try hoist(taken)
        }
        return words
    }

    /// How long a write waits for another process's lock: `BRSYNC_BUSY_TIMEOUT_MS`, default 5000.
    var busyTimeout: Int32 { Self.busyTimeout }

    static var busyTimeout: Int32 {
        ProcessEnvironment.value("BRSYNC_BUSY_TIMEOUT_MS").flatMap { Int32($0) }.map { max(0, $0) }
            ?? Replica.defaultBusyTimeoutMilliseconds
    }

    public func openReplica() throws -> Replica {
        try Self.openReplica(home: resolvedHome)
    }

    public static func openReplica(home: String) throws -> Replica {
        try Replica.open(home: home, busyTimeout: busyTimeout)
    }
}
