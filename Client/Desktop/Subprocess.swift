import Glibc
import Plumbing

/// Runs a helper program (a menu, a notifier) to completion: text on its
/// standard input, its output and errors captured, killed when it overruns its
/// time. No shell unless the arguments name one.
public enum Subprocess {
    public struct Result: Sendable, Equatable {
        /// The exit status, or nil when it was killed by a signal (or by the timeout).
        public let status: Int32?
        public let output: String
        public let errors: String
        public let timedOut: Bool
    }

    /// Runs `arguments` (found on `PATH` when the program has no `/`).
    /// `input` is made once the program has started, so its start-up
    /// overlaps with making it.
    /// - Returns: nil when the program could not be started.
    public static func run(_ arguments: [String], input: @autoclosure () -> String = "", timeoutMilliseconds: Int = 120_000,
                           environment extra: [String: String] = [:]) -> Result? {
        guard !arguments.isEmpty else { return nil }
        var toChild: [Int32] = [0, 0]
        var fromChild: [Int32] = [0, 0]
        var errorsFromChild: [Int32] = [0, 0]
        guard makePipe(&toChild) else { return nil }
        guard makePipe(&fromChild) else { close(toChild[0]); close(toChild[1]); return nil }
        guard makePipe(&errorsFromChild) else {
            (toChild + fromChild).forEach { close($0) }
            return nil
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errorsFromChild[1], 2)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let environment = Self.environment(adding: extra)
        defer { environment.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawnp(&pid, arguments[0], &actions, nil, argv, environment + [nil])
        close(toChild[0])
        close(fromChild[1])
        close(errorsFromChild[1])
        defer {
            close(fromChild[0])
            close(errorsFromChild[0])
        }
        guard status == 0 else { close(toChild[1]); return nil }
        // The input is small (a few menu lines): written before reading, a
        // child that does not read it gets EPIPE, not a hang (SIGPIPE is ignored).
        let bytes = Array(input().utf8)
        if !bytes.isEmpty { _ = bytes.withUnsafeBytes { write(toChild[1], $0.baseAddress, $0.count) } }
        close(toChild[1])
        var output: [UInt8] = []
        var errors: [UInt8] = []
        var open = [fromChild[0], errorsFromChild[0]]
        let deadline = monotonicMilliseconds() + timeoutMilliseconds
        var timedOut = false
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !open.isEmpty {
            let left = deadline - monotonicMilliseconds()
            if left <= 0 { timedOut = true; break }
            var descriptors = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&descriptors, nfds_t(descriptors.count), Int32(min(left, 1_000)))
            if ready < 0 && errno != EINTR { break }
            for descriptor in descriptors where descriptor.revents != 0 {
                let count = read(descriptor.fd, &buffer, buffer.count)
                if count <= 0 {
                    open.removeAll { $0 == descriptor.fd }
                } else if descriptor.fd == fromChild[0] {
                    if output.count < 1 << 20 { output += buffer[0..<count] }
                } else if errors.count < 1 << 16 {
                    errors += buffer[0..<count]
                }
            }
        }
        if timedOut { kill(pid, SIGKILL) }
        var exitStatus: Int32 = 0
        while waitpid(pid, &exitStatus, 0) < 0 && errno == EINTR {}
        let exited = exitStatus & 0x7F == 0
        return Result(status: exited && !timedOut ? (exitStatus >> 8) & 0xFF : nil,
                      output: String(decoding: output, as: UTF8.self), errors: String(decoding: errors, as: UTF8.self),
                      timedOut: timedOut)
    }

    /// This process's environment with `extra` set (a copy, for the child).
    static func environment(adding extra: [String: String]) -> [UnsafeMutablePointer<CChar>?] {
        var result: [UnsafeMutablePointer<CChar>?] = []
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            let name = text.split(separator: "=", maxSplits: 1).first.map(String.init) ?? text
            if extra[name] == nil { result.append(strdup(entry)) }
            pointer += 1
        }
        for (name, value) in extra.sorted(by: { $0.key < $1.key }) { result.append(strdup("\(name)=\(value)")) }
        return result
    }

    /// A pipe whose ends are not inherited by other children (close-on-exec;
    /// the child gets its end through dup2, which clears the flag).
    static func makePipe(_ ends: inout [Int32]) -> Bool {
        guard pipe(&ends) == 0 else { return false }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return true
    }

    static func monotonicMilliseconds() -> Int { Int(Clock.monotonicMillis()) }
}
