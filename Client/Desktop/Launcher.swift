import Glibc
import Model
import Plumbing

/// Starts a browser: the expanded Exec arguments, without a shell, in a new
/// session (detached from the terminal, outliving brsync), with standard
/// streams on /dev/null. Returns as soon as the program has started.
public enum Launcher {
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public let program: String
        public let reason: String
        public var description: String { "cannot start \(program): \(reason)" }
    }

    /// The program of launch command `exec` when it is not installed here
    /// (not executable at its path, or on no directory of `PATH`); nil when
    /// it is, or when the command names none.
    public static func missingProgram(_ exec: String?, path: [String]) -> String? {
        guard let exec, let program = (try? ExecCommand(exec))?.arguments.first, !program.isEmpty else { return nil }
        if program.contains("/") { return access(program, X_OK) == 0 ? nil : program }
        return path.contains { access("\($0)/\(program)", X_OK) == 0 } ? nil : program
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
