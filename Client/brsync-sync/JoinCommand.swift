import ArgumentParser
import BrsyncCommands
import Glibc
import Model
import Net
import Plumbing
import Replica
import SyncClient
import SyncCore

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
        let home = global.resolvedHome
        let homeExisted = access(home, F_OK) == 0
        let (replica, created) = try Replica.initialize(home: home, deviceName: nil)
        var joined = false
        // A replica made for this join goes again if the join fails, and the
        // folder when the join made it (and nothing was kept in it): nothing changes.
        defer {
            if created && !joined {
                for suffix in ["", "-wal", "-shm"] { unlink("\(home)/\(Replica.fileName)\(suffix)") }
                if !homeExisted {
                    unlink("\(home)/sync.lock")
                    rmdir(home) // only when empty: a token kept aside for a retry stays
                }
            }
        }
        let previousRemote = try replica.syncState().remoteURL
        if let previousRemote, !replace {
            throw CLIFailure(
                message:
                    "this machine syncs with \(previousRemote) already; join with --replace to use this code instead "
                    + "(its rules and unpushed edits stay and go up; nothing was changed)")
        }
        let remote: RemoteURL
        do { remote = try RemoteURL(parsing: join.server) } catch {
            throw CLIFailure(message: "the join code's server: \(error)")
        }

        // The CA, pinned by the code's fingerprint, in a file of its own until everything checked out.
        let ca: [UInt8]
        do {
            ca = try CertificatePinning.fetchCA(
                address: SocketAddress(host: remote.host, port: remote.port), serverName: remote.host,
                fingerprint: join.caFingerprint)
        } catch .tls(let message) {
            throw SyncError.unreachable("\(remote) is not trusted: \(message)")
        } catch {
            throw SyncError.unreachable("\(remote): \(error)")
        }
        let caFile = "\(home)/ca.pem"
        let pending = "\(home)/.ca.pem.joining"
        do {
            try SecretFile.write(Array(CertificatePinning.pem(der: ca).utf8), to: pending, what: "the CA")
        } catch { throw CLIFailure(message: "\(error)") }
        var saved = false
        defer { if !saved { unlink(pending) } }

        // The token and, for an encrypted account, the recovery code are checked before anything is kept.
        let probe = try SyncClient(replica: replica, remote: remote, token: join.token, caFile: pending)
        var key: AccountKey?
        let encrypted = try joinCodeChecked { try probe.accountKeyID() } != nil
        // Whoever says the account is encrypted (the code itself, or the user
        // with a recovery code, however it came) is believed over a server
        // that says it is not: joining anyway would send every rule made
        // here readable.
        // With the code on the command line, a recovery code may wait on
        // standard input (`cat code.txt | brsync join CODE`): looked for too.
        input.loadIfWaiting()
        let claim =
            join.encrypted == true
            ? "the join code says the account was end-to-end encrypted when the code was made"
            : recoveryFile != nil || input.hasMoreLines ? "a recovery code was given" : nil
        if !encrypted, let claim {
            throw CLIFailure(
                message: "\(claim), but the server says this account is not end-to-end encrypted: "
                    + "nothing was saved, and nothing will be sent readable. If the account was encrypted, its operator may have "
                    + "reset its encryption, or the server is not the one it was, or was set back; ask its operator. If it never was, "
                    + "join with a new code and no recovery code, then encrypt it with 'brsync key init'",
                code: ExitStatus.refused)
        }
        if encrypted {
            let recovery: AccountKey
            if let recoveryFile {
                recovery = try readRecoveryCode(file: recoveryFile)
            } else {
                let line = try input.next(
                    prompt: "This account is end-to-end encrypted. Recovery code: ",
                    what:
                        "recovery code (this account is end-to-end encrypted: give its recovery code on the line after the join code, or with --recovery-file FILE; nothing was saved)"
                )
                do { recovery = try AccountKey(recoveryCode: line) } catch {
                    throw CLIFailure(message: "not a recovery code: \(error)")
                }
            }
            try probe.checkKey(recovery)
            key = recovery
        }
        // A join code's secret is exchanged, once, for a token made here; a
        // code of an older server holds the device's token itself.
        // The token is kept aside first: a join whose answer never came is
        // run again with the same token, which the server takes as done.
        var token = join.token
        let joiningToken = "\(home)/.join-token"
        if SyncClient.isJoinSecret(join.token) {
            do {
                token =
                    try SecretFile.read(joiningToken, what: "the token of an earlier join").map {
                        String(decoding: $0, as: UTF8.self)
                    }
                    .flatMap { JoinRequest.isWellFormed($0) ? $0 : nil } ?? SyncClient.makeDeviceToken()
                try SecretFile.write(Array(token.utf8), to: joiningToken, what: "the token of this join")
            } catch {
                throw CLIFailure(message: "\(error)")
            }
            let answer = try joinCodeChecked { try probe.exchangeJoinSecret(for: token) }
            // A home made for this join goes by the name the server gave its device
            // (`brsyncd device list` and `brsync device` then name it alike).
            if created, Replica.problem(withDeviceName: answer.device) == nil {
                try replica.renameDevice(answer.device)
            }
        }
        defer { if saved { unlink(joiningToken) } }
        joined = true
        guard rename(pending, caFile) == 0 else {
            throw CLIFailure(message: "cannot write \(caFile): \(SystemError.text())")
        }
        saved = true
        try TokenFile.write(token, home: home)
        // Replacing: the old server's cursors and acknowledgements go; every local edit is sent again (the server takes each once).
        if previousRemote != nil { try replica.removeRemote() }
        try replica.setRemote(url: remote.text, caFile: caFile)
        if let key { try AccountKeyFile.write(key, home: home) }
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

/// Runs a request made with the join code's token: a refusal of it says
/// what to do with a join code (this machine has no token of its own
/// yet, so the advice for a replaced token does not apply).
@discardableResult
private func joinCodeChecked<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch SyncError.refused(let code, let message) where code == .unauthorized {
        // The server says what happened to a code it knows (used, expired).
        if message.contains("join code") {
            throw CLIFailure(
                message: "the server refused this join code: \(message); nothing was saved", code: ExitStatus.refused)
        }
        throw CLIFailure(
            message: "the server refused this join code (\(message)): it was mistyped, or the server was set up anew. "
                + "Ask the server's operator for a new join code; nothing was saved", code: ExitStatus.refused)
    }
}
