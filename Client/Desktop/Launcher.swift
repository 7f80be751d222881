import Glibc
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
