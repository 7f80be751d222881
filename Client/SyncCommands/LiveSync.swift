import BrsyncCommands
import Glibc
import Replica
import SystemServices

/// Live sync (`brsync watch`) switched on and off without a terminal, as
/// the settings window does: through the `brsync-watch` systemd user
/// service when it serves this replica (it starts again at the next login),
/// else as a process of its own for this session. Either way the watch's
/// own lock says whether it runs (``WatchWake/status(home:)``).
public enum LiveSync {
    /// How live sync stands for a replica.
    public struct Standing: Sendable, Equatable {
        /// A watch runs and gave a sign of life lately.
        public var alive: Bool
        /// It runs as the `brsync-watch` user service.
        public var asService: Bool
    }

    public static let unit = "brsync-watch.service"

    public static func standing(home: String) -> Standing {
        let running = WatchWake.status(home: home)
        let alive = running?.isAlive(nowMillis: WatchWake.bootMillis()) == true
        // Read from the watch's lock and /proc only: a window asks at every
        // reload, so whether systemd could run it (a process to start) is
        // asked only when switching.
        return Standing(alive: alive, asService: running.map { WatchWake.runsAsService(pid: $0.pid) } ?? false)
    }

    /// Starts live sync for the replica in `home`, and waits (up to 5 s) for
    /// the watch to say it runs.
    /// - Parameter brsync: the `brsync` program to start when the service cannot.
    /// - Returns: what was done, in words.
    public static func start(home: String, brsync: String) throws -> String {
        if standing(home: home).alive { return "Live sync runs already." }
        _ = try Replica.open(home: home) // a replica that does not open is said now, not by a watch that ends
        if serviceAvailable(home: home) {
            try systemctl(["enable", "--now", unit])
            try waitFor(home: home, alive: true)
            return "Live sync runs, as the \(unit) user service: it starts again at each login."
        }
        // A process of its own, in a session of its own (`setsid --fork`: not
        // this process's child, so it outlives the window and leaves no
        // zombie), its output nowhere: the replica records what it meets.
        let started: ChildProcess.Termination?
        do {
            let child = try ChildProcess(["setsid", "--fork", brsync, "--home", home, "watch"], newSession: true)
            started = child.wait(timeoutMilliseconds: 10_000)
        } catch {
            throw CLIFailure(message: "live sync could not be started: \(error)")
        }
        guard started?.code == 0 else {
            throw CLIFailure(message: "live sync could not be started ('setsid --fork \(brsync) watch' failed)")
        }
        try waitFor(home: home, alive: true)
        return "Live sync runs until it is switched off or this machine restarts (the \(unit) user service, "
            + "which scripts/install and the packages set up, would start it at each login)."
    }

    /// Stops live sync for the replica in `home` (the user service is
    /// disabled too, so it does not start at the next login).
    public static func stop(home: String) throws -> String {
        guard let running = WatchWake.status(home: home) else {
            if serviceAvailable(home: home) { try? systemctl(["disable", unit]) }
            return "Live sync does not run."
        }
        if WatchWake.runsAsService(pid: running.pid) {
            try systemctl(["disable", "--now", unit])
        } else {
            guard WatchWake.isWatchProcess(pid: running.pid) else {
                throw CLIFailure(
                    message:
                        "the process holding this replica's watch lock (pid \(running.pid)) is not a brsync watch: "
                        + "nothing was stopped")
            }
            guard kill(running.pid, SIGTERM) == 0 else {
                throw CLIFailure(
                    message: "the watch (pid \(running.pid)) could not be stopped: \(SystemError.text())")
            }
        }
        try waitFor(home: home, alive: false)
        return "Live sync stopped: edits go up at the next sync (the sync timer, or Sync now)."
    }

    /// Whether the user service runs live sync for the replica in `home`:
    /// `systemctl --user` answers, the unit is installed, and `home` is the
    /// replica a watch started without `--home` uses.
    static func serviceAvailable(home: String) -> Bool {
        guard ProcessEnvironment.value("BRSYNC_HOME").map({ $0.isEmpty }) ?? true,
            canonical(home) == canonical(XDGDirectories.current().dataHome + "/brsync"),
            let found = Subprocess.run(["systemctl", "--user", "cat", unit], timeoutMilliseconds: 10_000)
        else { return false }
        return found.status == 0
    }

    static func systemctl(_ arguments: [String]) throws {
        guard let done = Subprocess.run(["systemctl", "--user"] + arguments, timeoutMilliseconds: 30_000) else {
            throw CLIFailure(message: "systemctl could not be started")
        }
        guard done.status == 0 else {
            let said = done.errors.split(separator: "\n").first.map(String.init) ?? "exit \(done.status ?? -1)"
            throw CLIFailure(message: "'systemctl --user \(arguments.joined(separator: " "))' failed: \(said)")
        }
    }

    /// Waits, up to 5 s, for the watch to run (or to end).
    static func waitFor(home: String, alive: Bool) throws {
        for _ in 0..<50 {
            if standing(home: home).alive == alive { return }
            usleep(100_000)
        }
        throw CLIFailure(
            message: alive
                ? "live sync was started but does not run (see 'brsync watch' in a terminal, or its log: "
                    + "journalctl --user -u brsync-watch)"
                : "live sync was asked to stop and still runs")
    }

    private static func canonical(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
