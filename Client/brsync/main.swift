import BrsyncCommands
import Glibc
import ProgramExit
import SystemServices

// Entry point: parse, run, and map every failure to one exit code and message
// (see ExitStatus). SIGPIPE is ignored so `brsync rules list | head` ends quietly.
signal(SIGPIPE, SIG_IGN)
do {
    let arguments = try GlobalOptions.hoist(Array(CommandLine.arguments.dropFirst()))
    if arguments == ["--generate-completion-script", "bash"] || arguments == ["--generate-completion-script=bash"] {
        print(Brsync.completionScript(for: .bash) + BashCompletion.homeFirst)
    } else if let command = arguments.first, SyncHelper.commands.contains(command) {
        try runSyncHelper(arguments)
    } else if let fast = Resolve.fastPath(arguments) {
        try Resolve.execute(home: GlobalOptions.home(flag: fast.home), url: fast.url, json: fast.json)
    } else if let fast = Resolve.fastPath(arguments, command: "open"), !fast.json {
        try Open.execute(home: GlobalOptions.home(flag: fast.home), url: fast.url)
    } else {
        var command = try Brsync.parseAsRoot(arguments)
        try command.run()
    }
} catch {
    exit(
        ExitStatus.report(error, root: Brsync.self) {
            Failures.describe($0)
                ?? UsageHints.failure(for: $0, root: Brsync.self, arguments: Array(CommandLine.arguments.dropFirst()))
        })
}

/// Replaces this process with `brsync-sync` from the same folder.
func runSyncHelper(_ arguments: [String]) throws -> Never {
    let helper = ProcessEnvironment.beside(named: "brsync-sync")
    guard access(helper, X_OK) == 0 else {
        throw CLIFailure(message: "\(helper) is missing: it is installed beside brsync and runs push, pull and sync")
    }
    // A helper that is brsync itself (a link or a copy under its name) would run this again, forever.
    var helperStatus = stat(), ownStatus = stat()
    if stat(helper, &helperStatus) == 0, stat("/proc/self/exe", &ownStatus) == 0,
        helperStatus.st_dev == ownStatus.st_dev && helperStatus.st_ino == ownStatus.st_ino
    {
        throw CLIFailure(
            message:
                "\(helper) is brsync itself (a link to it?): install the brsync-sync binary beside brsync; it runs push, pull and sync"
        )
    }
    // And a copy of brsync under the helper's name: it would find this mark
    // (which the helper unsets). A literal: main.swift's globals are set in order.
    let helperMark = "BRSYNC_STARTED_HELPER"
    if getenv(helperMark) != nil {
        throw CLIFailure(
            message: "\(helper) started brsync again (a copy of brsync?): install the brsync-sync binary beside brsync")
    }
    setenv(helperMark, "1", 1)
    // A join code holds a token: it goes to the helper in its environment
    // (readable by this user only), not on its command line (readable by all).
    var arguments = arguments
    if arguments.first == "join", let index = arguments.firstIndex(where: { $0.hasPrefix("brsync://") }) {
        setenv(JoinConfiguration.environmentVariable, arguments[index], 1)
        arguments.remove(at: index)
    }
    let argv = ([helper] + arguments).map { strdup($0) } + [nil]
    execv(helper, argv)
    throw CLIFailure(message: "cannot run \(helper): \(SystemError.text())")
}
