import Glibc

/// A program started with `posix_spawn`: the one way every binary (and
/// every test) starts another. No shell unless the arguments name one; the
/// program is found on `PATH` when its name has no `/`. Pipes and files are
/// opened close-on-exec, so no other child inherits them.
///
/// One owner at a time: the value is not meant to be waited for from two
/// threads at once.
public final class ChildProcess: @unchecked Sendable {
    /// Where a standard stream of the child goes.
    public enum Stream: Sendable, Equatable {
        /// `/dev/null`.
        case null
        /// This process's own stream.
        case inherit
        /// A pipe whose other end is ``ChildProcess/input``, ``ChildProcess/output`` or ``ChildProcess/errors``.
        case pipe
        /// A file, created or truncated, owner-only (output streams only).
        case file(String)
        /// Where the child's standard output goes (standard error only).
        case sameAsOutput
    }

    /// The environment of the child: this process's, without the variables
    /// `unset` names (a name, or a prefix ending in `*`), with `set` added.
    public struct Environment: Sendable {
        public var set: [String: String]
        public var unset: [String]

        public init(set: [String: String] = [:], unset: [String] = []) {
            self.set = set
            self.unset = unset
        }

        /// This process's environment as it is.
        public static let inherited = Environment()

        /// The `NAME=value` entries, allocated with `strdup` (the caller frees them).
        func entries() -> [UnsafeMutablePointer<CChar>?] {
            var result: [UnsafeMutablePointer<CChar>?] = []
            var pointer = environ
            while let entry = pointer.pointee {
                pointer += 1
                let text = String(cString: entry)
                let name =
                    text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)
                    ?? text
                if set[name] != nil || removes(name) { continue }
                result.append(strdup(entry))
            }
            for (name, value) in set.sorted(by: { $0.key < $1.key }) { result.append(strdup("\(name)=\(value)")) }
            return result
        }

        private func removes(_ name: String) -> Bool {
            unset.contains { $0.hasSuffix("*") ? name.hasPrefix($0.dropLast()) : name == $0 }
        }
    }

    /// Why a program could not be started.
    public struct SpawnError: Error, Sendable, Equatable, CustomStringConvertible {
        public let program: String
        public let reason: String
        public var description: String { "cannot start \(program): \(reason)" }
    }

    /// How the child ended.
    public enum Termination: Sendable, Equatable {
        case exited(Int32)
        case signalled(Int32)

        /// The exit status, or 128 plus the signal (as a shell reports it).
        public var code: Int32 {
            switch self {
            case .exited(let status): status
            case .signalled(let signal): 128 + signal
            }
        }
    }

    public let pid: pid_t
    /// The write end of the child's standard input, when it is a pipe.
    public private(set) var input: Int32?
    /// The read end of the child's standard output, when it is a pipe.
    public private(set) var output: Int32?
    /// The read end of the child's standard error, when it is a pipe.
    public private(set) var errors: Int32?
    private var ended: Termination?

    /// glibc's POSIX_SPAWN_SETSID (spawn.h; only declared with _GNU_SOURCE).
    private static let spawnSetSID: Int16 = 0x80

    /// Starts `arguments`.
    /// - Parameters:
    ///   - newSession: the child leads a session of its own (closing the
    ///     terminal does not take it along; it outlives this process).
    /// - Throws: when a pipe or file cannot be made or the program cannot
    ///   be executed (glibc's posix_spawn waits for the exec and reports it).
    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later,
    /// see ``CFunction``): closes every descriptor from `first` on in the
    /// child. Without it (an older C library) nothing is added.
    private static func closeFrom(_ first: Int32, in actions: inout posix_spawn_file_actions_t) {
        _ = closeFromFunction?(&actions, first)
    }

    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let closeFromFunction = CFunction.named(
        "posix_spawn_file_actions_addclosefrom_np", as: CloseFrom.self)

    public init(
        _ arguments: [String], environment: Environment = .inherited, input: Stream = .null, output: Stream = .null,
        errors: Stream = .null, newSession: Bool = false
    ) throws(SpawnError) {
        guard let program = arguments.first, !program.isEmpty else {
            throw SpawnError(program: "", reason: "the command is empty")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // The parent's ends of the pipes, and the child's (closed here once it started).
        var ours: [Int32?] = [nil, nil, nil]
        var theirs: [Int32] = []
        func fail(_ reason: String) -> SpawnError {
            (ours.compactMap { $0 } + theirs).forEach { close($0) }
            return SpawnError(program: program, reason: reason)
        }
        for (descriptor, stream) in [(Int32(0), input), (1, output), (2, errors)] {
            switch stream {
            case .null:
                posix_spawn_file_actions_addopen(
                    &actions, descriptor, "/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY, 0)
            case .inherit:
                break
            case .pipe:
                var ends: [Int32] = [0, 0]
                guard pipe(&ends) == 0 else { throw fail("cannot make a pipe: \(SystemError.text())") }
                // Close-on-exec (pipe2 is not in the Glibc module): a child
                // started by another thread meanwhile may inherit them, as with
                // any pipe made before this flag; its own end stays open then.
                for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
                let (childEnd, parentEnd) = descriptor == 0 ? (ends[0], ends[1]) : (ends[1], ends[0])
                ours[Int(descriptor)] = parentEnd
                theirs.append(childEnd)
                posix_spawn_file_actions_adddup2(&actions, childEnd, descriptor) // dup2 clears close-on-exec
            case .file(let path):
                guard descriptor != 0 else { throw fail("standard input cannot be a file to write") }
                posix_spawn_file_actions_addopen(&actions, descriptor, path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            case .sameAsOutput:
                guard descriptor == 2 else { throw fail("only standard error can go where standard output goes") }
                posix_spawn_file_actions_adddup2(&actions, 1, 2)
            }
        }
        // Nothing else of this process goes along: an open file (a database,
        // a script another thread is writing, which could then not be run:
        // "text file busy") is never inherited by a program started here.
        Self.closeFrom(3, in: &actions)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Signals as a fresh program expects them: none blocked, every one
        // with its default action (this process ignores SIGPIPE, and a
        // thread that starts a program may block signals; both would be
        // inherited through exec).
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        var flags = Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
        if newSession { flags |= Self.spawnSetSID }
        posix_spawnattr_setflags(&attributes, flags)
        let argv = arguments.map { strdup($0) } + [nil]
        let environ = environment.entries()
        defer { (argv + environ).forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawnp(&pid, program, &actions, &attributes, argv, environ + [nil])
        guard status == 0 else { throw fail(SystemError.text(status)) }
        theirs.forEach { close($0) }
        self.pid = pid
        (self.input, self.output, self.errors) = (ours[0], ours[1], ours[2])
    }

    deinit {
        [input, output, errors].compactMap { $0 }.forEach { close($0) }
    }

    /// Closes the child's standard input (it reads end-of-file).
    public func closeInput() {
        if let input { close(input) }
        input = nil
    }

    /// Closes this end of the child's output pipes (done reading).
    public func closeOutputs() {
        [output, errors].compactMap { $0 }.forEach { close($0) }
        (output, errors) = (nil, nil)
    }

    /// Sends `signal` to the child, unless it was already waited for.
    public func signal(_ signal: Int32 = SIGTERM) {
        guard ended == nil else { return }
        kill(pid, signal)
    }

    /// Whether the child has not ended yet (waits for it when it has).
    public var isRunning: Bool { poll() == nil }

    /// How the child ended, without waiting; nil while it runs.
    public func poll() -> Termination? {
        if let ended { return ended }
        var status: Int32 = 0
        var reaped = waitpid(pid, &status, WNOHANG)
        while reaped < 0 && errno == EINTR { reaped = waitpid(pid, &status, WNOHANG) }
        guard reaped == pid else { return nil }
        return record(status)
    }

    /// Waits for the child to end.
    @discardableResult
    public func wait() -> Termination {
        if let ended { return ended }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return record(status)
    }

    /// Waits at most `timeoutMilliseconds` for the child to end; nil when it still runs.
    public func wait(timeoutMilliseconds: Int64) -> Termination? {
        let deadline = Clock.monotonicMillis() + timeoutMilliseconds
        while true {
            if let ended = poll() { return ended }
            if Clock.monotonicMillis() >= deadline { return nil }
            usleep(5_000)
        }
    }

    /// Sends `signal`, waits at most `timeoutMilliseconds`, then kills the
    /// child if it still runs.
    /// - Returns: how it ended, and whether it had to be killed.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM, timeoutMilliseconds: Int64 = 30_000) -> (Termination, killed: Bool) {
        if let ended = poll() { return (ended, false) }
        self.signal(signal)
        if let ended = wait(timeoutMilliseconds: timeoutMilliseconds) { return (ended, false) }
        self.signal(SIGKILL)
        return (wait(), true)
    }

    private func record(_ status: Int32) -> Termination {
        let termination: Termination = status & 0x7F == 0 ? .exited((status >> 8) & 0xFF) : .signalled(status & 0x7F)
        ended = termination
        return termination
    }
}
