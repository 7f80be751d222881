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
    case .unreachable, .badAnswer: exit(ExitStatus.unreachable)
    case .refused: exit(ExitStatus.refused)
    }
} catch {
    exit(ExitStatus.report(error, root: BrsyncSync.self))
}
