import ArgumentParser
import BrsyncCommands
import Glibc
import Replica
import SyncClient
import SyncCommands
import SystemServices

struct BrsyncSync: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "brsync",
        abstract: "Sync this replica with its server (run through 'brsync push|pull|sync').",
        subcommands: [
            Push.self, Pull.self, SyncCommand.self, WatchCommand.self, KeyCommand.self, JoinCommand.self,
            DoctorCommand.self,
        ])
}

/// Runs one transfer (``Transfer/run(_:accountKey:options:progress:notifying:_:)``) with a
/// progress line on a terminal, and reports it.
/// The account key is this machine's (``AccountKeyFile``) unless given.
func transfer(
    _ global: GlobalOptions, _ options: TransferOptions, _ name: String, accountKey: AccountKey? = nil,
    _ body: (SyncClient) throws -> SyncClient.Summary
) throws {
    let replica = try global.openReplica()
    let onTerminal = isatty(2) == 1 && !options.quiet && !options.json
    let started = Clock.monotonicMillis()
    let line = ProgressLine()
    let progress: SyncClient.Progress? =
        onTerminal
        ? { what, done, total in
            guard done >= 0 else { return line.draw(what) }
            let seconds = max(0.001, Double(Clock.monotonicMillis() - started) / 1000)
            let rate = Int(Double(done) / seconds)
            line.draw("\(what) \(done)\(total.map { " of \($0)" } ?? "") (\(rate)/s)")
        } : nil
    let result: (summary: SyncClient.Summary, encrypted: Bool)
    do {
        defer { line.clear() } // an error, too, is printed on a clean line
        result = try Transfer.run(replica, accountKey: accountKey, progress: progress, notifying: options.notify, body)
    }
    report(result.summary, name, options, encrypted: result.encrypted)
}

/// Prints what a transfer did: one line (or JSON) on standard output, each
/// problem as a warning on standard error.
/// - Parameters:
///   - rotated: the transfer was the first with a rotated key.
///   - recoveryCode: the new key's code, after a key change (in the JSON only;
///     the text form printed it before the change).
func report(
    _ summary: SyncClient.Summary, _ name: String, _ options: TransferOptions, encrypted: Bool, rotated: Bool = false,
    recoveryCode: String? = nil
) {
    if options.json {
        Output.json(Transfer.json(summary, encrypted: encrypted, rotated: rotated, recoveryCode: recoveryCode))
    } else if !options.quiet {
        print(Transfer.line(summary, name, rotated: rotated))
    }
    for warning in Transfer.warnings(summary) { writeToStandardError(warning + "\n") }
}

struct Push: ParsableCommand {
    static let configuration = TransferConfigurations.push
    @OptionGroup var global: GlobalOptions
    @OptionGroup var options: TransferOptions
    func run() throws { try transfer(global, options, "push") { try $0.push() } }
}

struct Pull: ParsableCommand {
    static let configuration = TransferConfigurations.pull
    @OptionGroup var global: GlobalOptions
    @OptionGroup var options: TransferOptions
    func run() throws { try transfer(global, options, "pull") { try $0.pull() } }
}

struct SyncCommand: ParsableCommand {
    static let configuration = TransferConfigurations.sync
    @OptionGroup var global: GlobalOptions
    @OptionGroup var options: TransferOptions
    @Flag(help: WatchConfiguration.unlessWatchingHelp) var unlessWatching = false

    func run() throws {
        if unlessWatching, WatchWake.isWatching(home: global.resolvedHome) {
            if !options.quiet && !options.json {
                print("sync: 'brsync watch' runs for this replica and syncs it live; nothing to do")
            }
            if options.json { Output.json(.object(["watching": .bool(true)])) }
            return
        }
        try transfer(global, options, "sync") { try $0.sync() }
    }
}
