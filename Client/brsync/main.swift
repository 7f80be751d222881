import Glibc

// Entry point: parse, run, and map every failure to one exit code and message
// (see ExitStatus). SIGPIPE is ignored so `brsync rules list | head` ends quietly.
signal(SIGPIPE, SIG_IGN)
do {
    let arguments = Array(CommandLine.arguments.dropFirst())
    if let fast = Resolve.fastPath(arguments) {
        try Resolve.execute(home: GlobalOptions.home(flag: fast.home), url: fast.url, json: fast.json)
    } else {
        var command = try Brsync.parseAsRoot(arguments)
        try command.run()
    }
} catch {
    exit(ExitStatus.report(error))
}
