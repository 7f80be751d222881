import ArgumentParser
import BrsyncCommands
import Glibc
import SyncClient
import SyncCommands
import SyncCore
import SystemServices

/// `brsync join CODE`: one-step pairing.
struct JoinCommand: ParsableCommand {
    static let configuration = JoinConfiguration.configuration
    @OptionGroup var global: GlobalOptions
    @OptionGroup var options: TransferOptions
    @Option(help: JoinConfiguration.recoveryFileHelp) var recoveryFile: String?
    @Flag(
        help:
            "Replace the server this machine syncs with (a server set up anew, a token issued again); its rules and unpushed edits stay and go up."
    )
    var replace = false
    @Argument(help: JoinConfiguration.codeHelp) var code: String?

    /// A join code holds a device token: on the command line, other users of
    /// the machine can read it (`ps`) and the shell's history keeps it.
    static func warnAboutTheCommandLine() {
        writeToStandardError(
            """
            brsync: warning: the join code was given on the command line, where other users of this machine can read it \
            ('ps') and where your shell's history keeps it. Give it on standard input, or type it when asked, next time; \
            if others may have seen it, ask the server's operator for a new token ('brsyncd device token').

            """)
    }

    func run() throws {
        var input = StandardInputLines()
        let text: String
        if code == nil, let given = ProcessEnvironment.take(JoinConfiguration.environmentVariable) {
            text = given // `brsync join CODE` handed it over: it was on the command line
            Self.warnAboutTheCommandLine()
        } else if let code, code != "-" {
            text = code
            Self.warnAboutTheCommandLine()
        } else {
            text = try input.next(prompt: "Join code: ", what: "join code")
        }
        let join: JoinCode
        do { join = try JoinCode(parsing: text) } catch { throw CLIFailure(message: "\(error)") }
        let outcome = try Joining.join(
            home: global.resolvedHome, code: join, replace: replace,
            recoveryGiven: {
                // With the code on the command line, a recovery code may wait on
                // standard input (`cat code.txt | brsync join CODE`): looked for too.
                input.loadIfWaiting()
                return recoveryFile != nil || input.hasMoreLines
            },
            recoveryCode: {
                if let recoveryFile { return try readRecoveryCode(file: recoveryFile) }
                let line = try input.next(
                    prompt: "This account is end-to-end encrypted. Recovery code: ",
                    what:
                        "recovery code (this account is end-to-end encrypted: give its recovery code on the line after the join code, or with --recovery-file FILE; nothing was saved)"
                )
                do { return try AccountKey(recoveryCode: line) } catch {
                    throw CLIFailure(message: "not a recovery code: \(error)")
                }
            })
        let (remote, caFile, key, previousRemote) = (
            outcome.remote, outcome.caFile, outcome.key, outcome.previousRemote
        )
        writeToStandardError(
            "joined \(remote) (its CA pinned in \(caFile))\(key != nil ? ", end-to-end encrypted" : "")\n")
        if let previousRemote {
            // The server still counts the device this machine was: deletions
            // are kept for it until it pulls them, which it never will.
            writeToStandardError(
                "the device this machine was on \(previousRemote) still holds a token there: unless the server was set up "
                    + "anew, ask its operator to revoke it ('brsyncd device list ACCOUNT', then 'brsyncd device revoke ACCOUNT NAME')\n"
            )
        }
        try transfer(global, options, "sync", accountKey: key) { try $0.sync() }
    }
}

/// Lines of standard input, read once (at most 4 KiB) when not a terminal;
/// on a terminal each is asked for without echo.
struct StandardInputLines {
    private var lines: [String]?

    /// Reads standard input now when it is not a terminal and something is
    /// waiting on it (data or its end) within a tenth of a second: a pipe
    /// nobody writes to is not waited for.
    mutating func loadIfWaiting() {
        guard lines == nil, isatty(0) == 0 else { return }
        var ready = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
        guard poll(&ready, 1, 100) == 1, ready.revents & Int16(POLLIN | POLLHUP) != 0 else { return }
        lines = (try? AccountKeyFile.readSmall(0, what: "standard input")).map(AccountKeyFile.codeLines) ?? []
    }

    /// Whether standard input, read already (not a terminal), holds more
    /// lines: a recovery code after the join code. Standard input that was
    /// not read is not read for this (it may never end).
    var hasMoreLines: Bool { !(lines?.isEmpty ?? true) }

    mutating func next(prompt: String, what: String) throws -> String {
        if isatty(0) == 1 {
            let line = try readRecoveryLine(prompt: prompt)
            guard !line.allSatisfy(\.isWhitespace) else { throw CLIFailure(message: "no \(what) was given") }
            return line
        }
        if lines == nil {
            lines = AccountKeyFile.codeLines(try AccountKeyFile.readSmall(0, what: "standard input"))
        }
        guard let line = lines?.first else { throw CLIFailure(message: "no \(what) on standard input") }
        lines?.removeFirst()
        return line
    }
}
