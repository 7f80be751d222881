import Glibc

/// Starts a browser: the expanded Exec arguments, without a shell, in a new
/// session (detached from the terminal, outliving brsync), with standard
/// streams on /dev/null. Returns as soon as the program has started.
public enum Launcher {
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public let program: String
        public let reason: String
        public var description: String { "cannot start \(program): \(reason)" }
    }

    /// glibc's POSIX_SPAWN_SETSID (spawn.h; only declared with _GNU_SOURCE).
    static let spawnSetSID: Int16 = 0x80

    /// Starts `arguments`, with `environment` added to this process's.
    public static func launch(_ arguments: [String], environment extra: [String: String] = [:]) throws(Failure) {
        guard let program = arguments.first else { throw Failure(program: "", reason: "the command is empty") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for descriptor: Int32 in [0, 1, 2] {
            posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A session of its own: closing the terminal does not take the browser with it.
        posix_spawnattr_setflags(&attributes, Launcher.spawnSetSID)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        // posix_spawnp reports a program that cannot be executed (glibc waits for the exec).
        let environment = Subprocess.environment(adding: extra)
        defer { environment.forEach { free($0) } }
        let status = posix_spawnp(&pid, program, &actions, &attributes, argv, environment + [nil])
        guard status == 0 else { throw Failure(program: program, reason: String(cString: strerror(status))) }
    }
}
