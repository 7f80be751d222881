import Foundation

// Entry point: parse, run, and map every failure to one exit code and message
// (see ExitStatus). SIGPIPE is ignored so `brsync rules list | head` ends quietly.
signal(SIGPIPE, SIG_IGN)
do {
    var command = try Brsync.parseAsRoot()
    try command.run()
} catch {
    exit(ExitStatus.report(error))
}
