import ArgumentParser
import Glibc
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Model
import Plumbing
import Replica

/// The one place that maps errors to exit codes and messages.
///
/// | code | meaning |
/// |---|---|
/// | 0 | done |
/// | 1 | `rules test`: no match |
/// | 2 | any error: bad input, unknown name, unusable replica (nothing changed) |
/// | 3 | `resolve`: nothing decided, a picker would have to ask |
/// | 4 | the server could not be reached or verified (replica unchanged) |
/// | 5 | the server refused (auth, revoked, a change it will not take); the pull still ran |
/// | 6 | the server's answer could not be used (not brsync's protocol) |
public enum ExitStatus {
    public static let noMatch: Int32 = 1
    public static let error: Int32 = 2
    public static let pickerNeeded: Int32 = 3
    public static let unreachable: Int32 = 4
    public static let refused: Int32 = 5
    public static let badAnswer: Int32 = 6

    /// The exit code for `error`, after printing its message; `root` is the
    /// command whose usage errors and help are being reported. When the run
    /// asked for JSON (``Output/wantsJSON``), the failure is also printed on
    /// standard output as `{"error": NAME, "exit": CODE, "message": TEXT}`,
    /// NAME being ``name(of:)`` of the code.
    public static func report(_ error: any Error, root: any ParsableCommand.Type) -> Int32 {
        let code: Int32
        let message: String
        switch error {
        case let exit as ExitCode:
            // The command said what it had to (resolve's "a picker would ask").
            return exit.rawValue
        case let failure as CLIFailure:
            (code, message) = (failure.code, failure.message)
        case is ReplicaError, is PatternProblem, is URLProblem, is PublicSuffixListProblem:
            (code, message) = (Self.error, Self.message(of: error))
        default:
            let text = root.fullMessage(for: error)
            if root.exitCode(for: error) == .success {
                // --help and --version.
                print(text)
                return 0
            }
            (code, message) = (Self.error, text.hasPrefix("Error: ") ? String(text.dropFirst("Error: ".count)) : text)
        }
        printError(message)
        if Output.wantsJSON {
            Output.json(.object(["error": .string(name(of: code)), "exit": .int(Int64(code)), "message": .string(message)]))
        }
        return code
    }

    /// What an exit code means, as a word for JSON.
    public static func name(of code: Int32) -> String {
        switch code {
        case noMatch: return "no_match"
        case pickerNeeded: return "picker_needed"
        case unreachable: return "unreachable"
        case refused: return "refused"
        case badAnswer: return "bad_answer"
        default: return "error"
        }
    }

    /// The message `report` would print for `error` (for a notification).
    static func message(of error: any Error) -> String {
        switch error {
        case let failure as CLIFailure: return failure.message
        case let replica as ReplicaError: return replica.description
        case let pattern as PatternProblem: return pattern.description
        case let url as URLProblem: return url.description
        case let psl as PublicSuffixListProblem: return psl.description
        default: return "\(error)"
        }
    }

    public static func printError(_ message: String) {
        writeToStandardError("brsync: error: \(DisplayText.printableLines(message))\n")
    }

    public static func warn(_ message: String) {
        writeToStandardError("brsync: warning: \(DisplayText.printableLines(message))\n")
    }
}

/// A failure the CLI reports with its own message and code.
public struct CLIFailure: Error, CustomStringConvertible {
    public let message: String
    public var code: Int32 = ExitStatus.error

    public init(message: String, code: Int32 = ExitStatus.error) {
        self.message = message
        self.code = code
    }

    public var description: String { message }
}
