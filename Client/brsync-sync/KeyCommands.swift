import ArgumentParser
import BrsyncCommands
import Glibc
import Model
import Replica
import SyncClient
import SyncCore

/// `brsync key …`: the account key of end-to-end encryption (issue 13;
/// Deploy/SECURITY.md). A recovery code is read from standard input or a
/// file, never from the command line (it would show in `ps` and in the
/// shell's history).
struct KeyCommand: ParsableCommand {
    static let configuration = KeyConfigurations.group([Init.self, Add.self, Show.self, Rotate.self])

    struct Init: ParsableCommand {
        static let configuration = KeyConfigurations.initialise
        @OptionGroup var global: GlobalOptions
        @OptionGroup var options: TransferOptions

        func run() throws {
            let replica = try global.openReplica()
            if try AccountKeyFile.read(home: replica.home) != nil {
                throw CLIFailure(message: "this machine has an account key already (\(AccountKeyFile.path(home: replica.home))); 'brsync key show' prints its recovery code")
            }
            let plain = try makeClient(replica, key: nil)
            let key = AccountKey.generate()
            // The key is kept before the server is asked: a machine stopped in
            // between has the key, and its next sync finishes the switch.
            try AccountKeyFile.write(key, home: replica.home)
            let changed: Bool
            do { changed = try plain.encryptAccount(keyID: key.id).key == key.id } catch {
                AccountKeyFile.remove(home: replica.home)
                throw error
            }
            guard changed else {
                AccountKeyFile.remove(home: replica.home)
                throw CLIFailure(message: "this account is end-to-end encrypted already: add its recovery code here with 'brsync key add' (nothing was changed)",
                                 code: ExitStatus.refused)
            }
            try announce(key, global, options, """
                This account is now end-to-end encrypted: the server keeps your rules sealed and cannot read them.
                The recovery code below is what every other machine needs ('brsync key add' or 'brsync join').
                Write it down and keep it apart from this machine. Without it, and without a machine
                holding the key, the synced rules cannot be read by anyone.
                """)
        }
    }

    struct Add: ParsableCommand {
        static let configuration = KeyConfigurations.add
        @OptionGroup var global: GlobalOptions
        @OptionGroup var options: TransferOptions
        @Option(help: KeyConfigurations.fileHelp) var file: String?
        @Argument(help: .hidden) var refused: [String] = []

        func run() throws {
            guard refused.isEmpty else {
                throw CLIFailure(message: "a recovery code is never taken from the command line (it would show in 'ps' and in the shell's history): type it when asked, pipe it in, or use --file")
            }
            let replica = try global.openReplica()
            let key = try readRecoveryCode(file: file)
            let existing = try AccountKeyFile.read(home: replica.home)
            if existing?.id == key.id { throw CLIFailure(message: "this machine has this account key already") }
            // The code must be the account's key now; an older key here was rotated away.
            try makeClient(replica, key: nil).checkKey(key)
            try AccountKeyFile.write(key, home: replica.home)
            writeToStandardError("account key \(existing == nil ? "added" : "replaced (the old one was rotated)") (\(AccountKeyFile.path(home: replica.home)), mode 600)\n")
            try transfer(global, options, "sync", accountKey: key) { try $0.sync() }
        }
    }

    struct Rotate: ParsableCommand {
        static let configuration = KeyConfigurations.rotate
        @OptionGroup var global: GlobalOptions
        @OptionGroup var options: TransferOptions

        func run() throws {
            let replica = try global.openReplica()
            guard let old = try AccountKeyFile.read(home: replica.home) else {
                throw CLIFailure(message: "this machine has no account key; 'brsync key init' encrypts the account")
            }
            let client = try makeClient(replica, key: nil)
            guard try client.accountKeyID() == old.id else {
                throw CLIFailure(message: "this machine's account key is not the account's (rotated on another machine?): add the current one with 'brsync key add' first",
                                 code: ExitStatus.refused)
            }
            let key = AccountKey.generate()
            // The new key is kept aside before the server is asked, and takes
            // the old one's place once the server agreed: a machine stopped in
            // between finds it at its next sync (AccountKeyFile.settle).
            try AccountKeyFile.write(key, home: replica.home, pending: true)
            do {
                _ = try client.encryptAccount(keyID: key.id, replacing: old.id)
            } catch {
                AccountKeyFile.remove(home: replica.home, pending: true)
                throw error
            }
            try AccountKeyFile.promotePending(home: replica.home)
            try announce(key, global, options, """
                The account key was rotated: what is synced from now on is sealed with a new key, which the old recovery code
                (and any machine that only has it, such as a revoked one) cannot open. The server's records were deleted;
                this machine sends everything again, sealed with the new key. Every other machine stops syncing until the new
                recovery code below is added there ('brsync key add'); their edits are kept and go up then.
                """)
        }
    }

    struct Show: ParsableCommand {
        static let configuration = KeyConfigurations.show
        @OptionGroup var global: GlobalOptions

        func run() throws {
            let home = global.resolvedHome
            guard let key = try AccountKeyFile.read(home: home) else {
                throw CLIFailure(message: "this machine has no account key; 'brsync key init' makes one, 'brsync key add' adds the account's")
            }
            print(key.recoveryCode)
        }
    }
}

/// Says what happened (standard error), prints the new key's recovery code
/// alone on standard output (shown once), and syncs with the key.
func announce(_ key: AccountKey, _ global: GlobalOptions, _ options: TransferOptions, _ explanation: String) throws {
    writeToStandardError(explanation + "\n\n")
    print(key.recoveryCode)
    writeToStandardError("\n")
    try transfer(global, options, "sync", accountKey: key) { try $0.sync() }
}

/// A sync client for the replica's remote, without encryption or with `key`.
func makeClient(_ replica: Replica, key: AccountKey?) throws -> SyncClient {
    let state = try replica.syncState()
    guard let url = state.remoteURL else { throw CLIFailure(message: "no remote; set one with 'brsync remote set https://HOST --token TOKEN'") }
    return try SyncClient(replica: replica, remote: try RemoteURL(parsing: url), token: try TokenFile.read(home: replica.home),
                          caFile: state.caFile, accountKey: key)
}

/// A recovery code from `file`, or from standard input (asked for, without
/// echo, on a terminal).
func readRecoveryCode(file: String?) throws -> AccountKey {
    let bytes: [UInt8]
    if let file {
        bytes = try AccountKeyFile.readSmallFile(file, what: "the recovery code")
    } else if isatty(0) == 1 {
        bytes = Array(try readRecoveryLine(prompt: "Recovery code: ").utf8)
    } else {
        bytes = try AccountKeyFile.readSmall(0, what: "the recovery code on standard input")
    }
    guard let code = AccountKeyFile.codeLines(bytes).first else { throw CLIFailure(message: "no recovery code was given") }
    do { return try AccountKey(recoveryCode: code) } catch {
        throw CLIFailure(message: "not a recovery code: \(error)")
    }
}

/// One line from the terminal, asked for with `prompt` on standard error and
/// read without echo (a code on the screen is a code seen).
func readRecoveryLine(prompt: String) throws -> String {
    writeToStandardError(prompt)
    var original = termios()
    tcgetattr(0, &original)
    var quiet = original
    quiet.c_lflag &= ~tcflag_t(ECHO)
    tcsetattr(0, TCSANOW, &quiet)
    defer {
        tcsetattr(0, TCSANOW, &original)
        writeToStandardError("\n")
    }
    var line: [UInt8] = []
    var byte: UInt8 = 0
    while line.count <= 4096, Glibc.read(0, &byte, 1) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
    return String(decoding: line, as: UTF8.self)
}
