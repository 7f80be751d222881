import BrsyncCommands
import Glibc
import ProgramExit
import SyncClient
import SystemServices

// The sync helper: `brsync push|pull|sync …` runs here (see Client/brsync/Brsync.swift).
signal(SIGPIPE, SIG_IGN)
Interruption.sayWhatIsKept()
// brsync marks the helper it starts (so a copy of brsync under this name stops); nothing started from here inherits it.
unsetenv("BRSYNC_STARTED_HELPER")
do {
    var command = try BrsyncSync.parseAsRoot()
    try command.run()
} catch {
    exit(
        ExitStatus.report(error, root: BrsyncSync.self) {
            ($0 as? SyncError)?.failure ?? Failures.describe($0)
                ?? UsageHints.failure(
                    for: $0, root: BrsyncSync.self, arguments: Array(CommandLine.arguments.dropFirst()))
        })
}

extension SyncError {
    /// The failure the CLI reports: only "unreachable", "busy" and a
    /// replica another sync holds are 4, which the sync timer takes as
    /// "offline, try later".
    var failure: CLIFailure {
        switch self {
        case .usage: return CLIFailure(message: description)
        case .unreachable, .busy, .replicaBusy: return CLIFailure(message: description, code: ExitStatus.unreachable)
        case .refused, .stopped: return CLIFailure(message: description, code: ExitStatus.refused)
        case .badAnswer: return CLIFailure(message: description, code: ExitStatus.badAnswer)
        case .cancelled: return CLIFailure(message: description, code: ExitStatus.cancelled)
        }
    }
}
