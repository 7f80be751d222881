import ArgumentParser
import BrsyncCommands
import Glibc
import Replica
import SyncClient
import SyncCommands
import SystemServices

/// `brsync key …`: the account key of end-to-end encryption
/// (Deploy/SECURITY.md). A recovery code is read from standard input or a
/// file, never from the command line (it would show in `ps` and in the
/// shell's history).
struct KeyCommand: ParsableCommand {
    static let configuration = KeyConfigurations.group([Init.self, Add.self, Show.self, Rotate.self, Forget.self])

    struct Init: ParsableCommand {
        static let configuration = KeyConfigurations.initialise
        @OptionGroup var global: GlobalOptions
        @OptionGroup var options: TransferOptions
        @Flag(help: KeyConfigurations.yesHelp) var yes = false

        func run() throws {
            let replica = try global.openReplica()
            switch try AccountKeys.startInit(replica) {
            case .encryptAgain(let client):
                try confirmDespiteHeldChecks(replica, yes: yes)
                try changeKey(
                    client, global, options, rotating: false, afterReset: true, despiteHeldChecks: true,
                    """
                    This account is being end-to-end encrypted again (its encryption was reset on the server), with a new key:
                    the old one is never taken again. The recovery code below is what every other machine needs ('brsync key add').
                    Write it down and keep it apart from this machine.
                    """,
                    done: """
                        This account is end-to-end encrypted again. Every other machine stops syncing until the new recovery code
                        is added there; its edits are kept and go up then.
                        """)
            case .encrypt(let client):
                try changeKey(
                    client, global, options, rotating: false,
                    """
                    This account is being end-to-end encrypted: the server will keep your rules sealed and cannot read them.
                    The recovery code below is what every other machine needs ('brsync key add' or 'brsync join').
                    Write it down and keep it apart from this machine. Without it, and without a machine
                    holding the key, the synced rules cannot be read by anyone.
                    """,
                    done: """
                        This account is now end-to-end encrypted. Every machine without the key stops syncing until the
                        recovery code is added there; its edits are kept and go up then.
                        """)
            }
        }
    }

    struct Forget: ParsableCommand {
        static let configuration = KeyConfigurations.forget
        @OptionGroup var global: GlobalOptions
        @OptionGroup var options: TransferOptions
        @Flag(help: KeyConfigurations.forceHelp) var force = false

        func run() throws {
            let replica = try global.openReplica()
            switch try AccountKeys.forget(replica, force: force) {
            case .markCleared(let seen, let now):
                writeToStandardError(AccountKeys.Forgotten.markClearedText(seen: seen, now: now) + "\n")
            case .keySetAside(let aside, stillEncrypted: true):
                writeToStandardError(
                    "account key forgotten (kept aside at \(aside), mode 600). The account is still end-to-end encrypted: "
                        + "this machine syncs again once its recovery code is added ('brsync key add'); its edits are kept\n"
                )
                return
            case .keySetAside(let aside, stillEncrypted: false):
                writeToStandardError(
                    "account key forgotten (kept aside at \(aside), mode 600): this machine syncs readable from now on and sends every record it holds\n"
                )
            }
            try transfer(global, options, "sync") { try $0.sync() }
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
                throw CLIFailure(
                    message:
                        "a recovery code is never taken from the command line (it would show in 'ps' and in the shell's history): type it when asked, pipe it in, or use --file"
                )
            }
            let replica = try global.openReplica()
            let key = try readRecoveryCode(file: file)
            let added = try AccountKeys.add(key, to: replica)
            writeToStandardError(
                "account key \(added.replaced ? "replaced (the previous one is kept after it, never used to seal)" : "added") (\(added.path), mode 600)\n"
            )
            try transfer(global, options, "sync", accountKey: key) { try $0.sync() }
        }
    }

    struct Rotate: ParsableCommand {
        static let configuration = KeyConfigurations.rotate
        @OptionGroup var global: GlobalOptions
        @OptionGroup var options: TransferOptions
        @Flag(help: KeyConfigurations.yesHelp) var yes = false

        func run() throws {
            let replica = try global.openReplica()
            try confirmDespiteHeldChecks(replica, yes: yes)
            let client = try AccountKeys.startRotate(replica)
            try changeKey(
                client, global, options, rotating: true, despiteHeldChecks: true,
                """
                The account key is being rotated: what is synced from now on is sealed with a new key, which the old
                recovery code (and any machine that only has it, such as a revoked one) cannot open.
                Write the new recovery code below down; the old one stops working.
                """,
                done: """
                    The account key was rotated. Every other machine stops syncing until the new recovery code
                    is added there ('brsync key add'); its edits are kept and go up then.
                    """)
        }

    }

    struct Show: ParsableCommand {
        static let configuration = KeyConfigurations.show
        @OptionGroup var global: GlobalOptions

        func run() throws {
            let (key, pending) = try AccountKeys.held(home: global.resolvedHome)
            if let pending {
                // A key change that stopped after the server may have taken it:
                // that code may be the account's now. The next sync settles it.
                writeToStandardError(
                    """
                    A key change is pending: the server may use the new key below already. The next 'brsync sync'
                    settles it (keeps the new key if the server has it, sets it aside if not).
                    pending: \(pending.recoveryCode)

                    """)
            }
            print(key.recoveryCode)
            // The last sync found the account on a newer key: this code opens nothing written since.
            if let replica = try? global.openReplica(), AccountKeys.rotatedAway(replica) {
                throw CLIFailure(
                    message:
                        "the account was rotated to a newer key at the last sync: this code opens only what was written "
                        + "before; add the current code with 'brsync key add'", code: ExitStatus.refused)
            }
        }
    }
}

/// Before a key change (`key rotate`, `key init` after a reset): the failing
/// checks of other devices' ledgers this machine holds, which the change
/// would end. None, or `yes`, goes on. On a terminal they are listed and the
/// person is asked; otherwise the change is refused, saying so (nothing changed).
func confirmDespiteHeldChecks(_ replica: Replica, yes: Bool) throws {
    let held = try replica.ledgerFailures()
    guard !held.isEmpty, !yes else { return }
    let message = SyncClient.heldChecksMessage(held, names: try replica.deviceNames())
    guard isatty(0) == 1, isatty(2) == 1 else { throw CLIFailure(message: message) }
    writeToStandardError("brsync: \(message).\nChange the key anyway? [y/N] ")
    var line: [UInt8] = []
    var byte: UInt8 = 0
    while line.count < 64, Glibc.read(0, &byte, 1) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
    guard ["y", "yes"].contains(String(decoding: line, as: UTF8.self).lowercased()) else {
        throw CLIFailure(message: "the key was not changed (nothing was changed)")
    }
}

/// Changes the account's key with `client` (see
/// ``SyncClient/changeAccountKey(to:announce:)``): says what is about to
/// happen and prints the new key's recovery code alone on standard output
/// before the server is asked (with `--json`, on standard error then, and
/// in the JSON at the end), then what was kept and sent.
func changeKey(
    _ client: SyncClient, _ global: GlobalOptions, _ options: TransferOptions, rotating: Bool, afterReset: Bool = false,
    despiteHeldChecks: Bool = false, _ explanation: String, done: String
) throws {
    let change: SyncClient.KeyChange
    let newKey: AccountKey
    do {
        (change, newKey) = try AccountKeys.change(
            client, afterReset: afterReset, despiteHeldChecks: despiteHeldChecks
        ) { key in
            writeToStandardError(explanation + "\n\n")
            if options.json {
                // Standard output holds one JSON document, written at the end
                // (with the code in it); the code is shown now all the same.
                writeToStandardError(key.recoveryCode + "\n")
            } else {
                print(key.recoveryCode)
                // Out before the server is asked, whatever standard output is (a pipe or a file buffers).
                fflush(nil) // every output stream: standard output among them
            }
            writeToStandardError("\n")
        }
    } catch {
        // The code is on the screen already: say whether it counts.
        if AccountKeys.mayHaveChanged(home: global.resolvedHome) {
            writeToStandardError(
                "brsync: the server may have taken the new key: the next 'brsync sync' settles it ('brsync key show' prints it meanwhile)\n"
            )
        } else {
            writeToStandardError("brsync: the key was not changed: the recovery code above is not used\n")
        }
        throw error
    }
    // One summary of the whole change: the syncs before it and the one with the new key.
    var whole = change.before
    whole.add(change.after)
    writeToStandardError(
        done + "\n" + """
            First this machine synced\(change.attempts > 1 ? " (\(change.attempts) times, as other machines wrote meanwhile)" : ""), so every \
            machine's synced edit is here. The server then deleted what it held \(rotating ? "under the old key" : "readable"); this machine \
            kept every record and sent each one sealed (counted \(options.json ? "in the JSON" : "below")).

            """)
    report(
        whole, rotating ? "key rotate" : "key init", options, encrypted: true, rotated: rotating,
        recoveryCode: newKey.recoveryCode)
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
    guard let code = AccountKeyFile.codeLines(bytes).first else {
        throw CLIFailure(message: "no recovery code was given")
    }
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
