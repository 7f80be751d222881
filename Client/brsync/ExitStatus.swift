import ArgumentParser
import Glibc
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Model
import Replica
import SyncClient

/// The one place that maps errors to exit codes and messages.
///
/// | code | meaning |
/// |---|---|
/// | 0 | done |
/// | 1 | `rules test`: no match |
/// | 2 | any error: bad input, unknown name, unusable replica (nothing changed) |
/// | 3 | `resolve`: nothing decided, a picker would have to ask |
/// | 4 | the server could not be reached or verified (replica unchanged) |
/// | 5 | the server refused (auth, revoked, device mismatch, clock) |
enum ExitStatus {
    static let noMatch: Int32 = 1
    static let error: Int32 = 2
    static let pickerNeeded: Int32 = 3
    static let unreachable: Int32 = 4
    static let refused: Int32 = 5

    static func report(_ error: any Error) -> Int32 {
        switch error {
        case let exit as ExitCode:
            return exit.rawValue
        case let failure as CLIFailure:
            printError(failure.message)
            return failure.code
        case let replica as ReplicaError:
            printError(replica.description)
        case let pattern as PatternProblem:
            printError(pattern.description)
        case let url as URLProblem:
            printError(url.description)
        case let psl as PublicSuffixListProblem:
            printError(psl.description)
        case let sync as SyncError:
            printError(sync.description)
            switch sync {
            case .usage: return Self.error
            case .unreachable, .badAnswer: return Self.unreachable
            case .refused: return Self.refused
            }
        default:
            let code = Brsync.exitCode(for: error)
            let message = Brsync.fullMessage(for: error)
            if code == .success {
                print(message)
                return 0
            }
            var text = message
            if text.hasPrefix("Error: ") { text.removeFirst("Error: ".count) }
            writeToStandardError("brsync: error: " + text + "\n")
        }
        return Self.error
    }

    static func printError(_ message: String) {
        writeToStandardError("brsync: error: \(message)\n")
    }

    static func warn(_ message: String) {
        writeToStandardError("brsync: warning: \(message)\n")
    }
}

/// A failure the CLI reports with its own message and code.
struct CLIFailure: Error {
    let message: String
    var code: Int32 = ExitStatus.error
}

/// Writes to file descriptor 2 directly (no shared `FILE*`, so no data race).
func writeToStandardError(_ text: String) {
    var remaining = Array(text.utf8)[...]
    while !remaining.isEmpty {
        let written = remaining.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        if written <= 0 { return }
        remaining = remaining.dropFirst(written)
    }
}
