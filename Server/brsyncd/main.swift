import Glibc
import ProgramExit
import SystemServices

// Entry point: parse, run, and map every failure to one exit code and message.
signal(SIGPIPE, SIG_IGN)
do {
    var command = try Brsyncd.parseAsRoot()
    try command.run()
} catch {
    exit(ExitStatus.report(error, root: Brsyncd.self, describe: Failure.describe))
}
