import Model
import Plumbing
import Replica

/// What `brsync` and `brsync-sync` report of the errors of Model and the
/// replica; ``ExitStatus/report(_:root:describe:)`` is the funnel.
public enum Failures {
    /// The message and code of an error of Model or the replica, or nil.
    public static func describe(_ error: any Error) -> CLIFailure? {
        switch error {
        case let replica as ReplicaError: return CLIFailure(message: replica.description)
        case let pattern as PatternProblem: return CLIFailure(message: pattern.description)
        case let url as URLProblem: return CLIFailure(message: url.description)
        case let psl as PublicSuffixListProblem: return CLIFailure(message: psl.description)
        default: return nil
        }
    }

    /// The message ``ExitStatus/report(_:root:describe:)`` would print for
    /// `error` (for a notification).
    static func message(of error: any Error) -> String {
        if let failure = error as? CLIFailure { return failure.message }
        return describe(error)?.message ?? "\(error)"
    }
}
