import Glibc
import JSON
import Model
import SystemServices

/// Starts a browser: the expanded Exec arguments, without a shell, in a new
/// session (detached from the terminal, outliving brsync), with standard
/// streams on /dev/null. Returns as soon as the program has started.
public enum Launcher {
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public let program: String
        public let reason: String
        public var description: String { "cannot start \(program): \(reason)" }
    }

    /// Why the program of launch command `exec` cannot start here (`'x' not
    /// found`, `'x' is not executable`, `'x' is a directory`); nil when it
    /// can, or when the command names none.
    public static func programProblem(_ exec: String?, path: [String]) -> String? {
        guard let exec, let program = (try? ExecCommand(exec))?.arguments.first, !program.isEmpty else { return nil }
        let shown = "'\(DisplayText.printable(program))'"
        func problem(at file: String) -> String? {
            var status = stat()
            guard stat(file, &status) == 0 else { return "\(shown) not found" }
            if status.st_mode & S_IFMT == S_IFDIR { return "\(shown) is a directory" }
            return access(file, X_OK) == 0 ? nil : "\(shown) is not executable"
        }
        if program.contains("/") { return problem(at: program) }
        var found: String?
        for directory in path {
            guard let problem = problem(at: "\(directory)/\(program)") else { return nil }
            if found == nil, !problem.hasSuffix("not found") { found = problem }
        }
        return found ?? "\(shown) not found"
    }

    /// The program launch command `exec` runs (its first argument), or nil.
    public static func program(_ exec: String?) -> String? {
        exec.flatMap { (try? ExecCommand($0))?.arguments.first }
    }

    /// Starts `arguments`, with `environment` added to this process's.
    public static func launch(_ arguments: [String], environment extra: [String: String] = [:]) throws(Failure) {
        do {
            // Never waited for: brsync exits right after, and the browser
            // (in a session of its own) outlives it.
            _ = try ChildProcess(arguments, environment: ChildProcess.Environment(set: extra), newSession: true)
        } catch {
            throw Failure(program: error.program, reason: error.reason)
        }
    }
}
