import BrsyncCommands
import Glibc
import SyncClient

// The sync helper: `brsync push|pull|sync …` runs here (see Client/brsync/Brsync.swift).
signal(SIGPIPE, SIG_IGN)
do {
    var command = try BrsyncSync.parseAsRoot()
    try command.run()
} catch let error as SyncError {
    ExitStatus.printError(error.description)
    switch error {
    case .usage: exit(ExitStatus.error)
    // Only "unreachable" is 4, which the sync timer takes as "offline, try later".
    case .unreachable: exit(ExitStatus.unreachable)
    case .refused: exit(ExitStatus.refused)
    case .badAnswer: exit(ExitStatus.badAnswer)
    }
} catch {
    exit(ExitStatus.report(error, root: BrsyncSync.self))
}
