import ArgumentParser
import BrsyncCommands
import Desktop
import Glibc
import JSON
import Model
import Plumbing
import Replica
import SyncClient
import SyncCommands
import SyncCore

struct BrsyncSync: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "brsync",
        abstract: "Sync this replica with its server (run through 'brsync push|pull|sync').",
        subcommands: [
            Push.self, Pull.self, SyncCommand.self, WatchCommand.self, KeyCommand.self, JoinCommand.self,
            DoctorCommand.self,
        ])
}

/// Runs one transfer and reports it.
/// The account key is this machine's (``AccountKeyFile``) unless given.
func transfer(
    _ global: GlobalOptions, _ options: TransferOptions, _ name: String, accountKey: AccountKey? = nil,
    _ body: (SyncClient) throws -> SyncClient.Summary
) throws {
    let replica = try global.openReplica()
    let state = try replica.syncState()
    let onTerminal = isatty(2) == 1 && !options.quiet && !options.json
    let started = Clock.monotonicMillis()
    let line = ProgressLine()
    let progress: SyncClient.Progress? =
        onTerminal
        ? { what, done, total in
            let seconds = max(0.001, Double(Clock.monotonicMillis() - started) / 1000)
            let rate = Int(Double(done) / seconds)
            line.draw("\(what) \(done)\(total.map { " of \($0)" } ?? "") (\(rate)/s)")
        } : nil
    let (client, key) = try machineClient(replica, key: accountKey.map { .given($0) } ?? .keyFile, progress: progress)
    let summary: SyncClient.Summary
    do {
        defer { line.clear() } // an error, too, is printed on a clean line
        summary = try body(client)
    } catch let error as SyncError {
        if options.notify { notifyStop(error, previous: state.problem) }
        if case .refused(let code, _) = error, code == .unauthorized, let url = state.remoteURL,
            let replaced = try? TokenFile.read(home: replica.home, previous: true),
            replaced != (try? TokenFile.read(home: replica.home))
        {
            let file = TokenFile.path(home: replica.home, previous: true)
            throw CLIFailure(
                message: "\(error.description). The last token that synced here is kept in \(file): "
                    + "put it back with: brsync remote set \(url) --token-file \(file)", code: ExitStatus.refused)
        }
        throw error
    }
    report(summary, name, options, encrypted: key != nil)
}

/// A stop that waits for the user (the timer's sync runs with nobody at a
/// terminal), shown as a desktop notification, once: not again while the
/// same stop repeats at every run.
/// - Parameter previous: the problem the replica recorded before this run.
func notifyStop(_ error: SyncError, previous: String) {
    guard error.waitsForTheUser, error.description != previous else { return }
    let path = (ProcessEnvironment.value("PATH") ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
    Notifier.notify(
        summary: "brsync stopped syncing", body: "\(error.description). 'brsync status' shows it again.", path: path)
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
        var object: [String: JSONValue] = [
            "pushed": .int(Int64(summary.pushed)), "pulled": .int(Int64(summary.pulled)),
            "applied": .int(Int64(summary.applied)),
            "requests": .int(Int64(summary.requests)), "bytesSent": .int(Int64(summary.bytesSent)),
            "bytesReceived": .int(Int64(summary.bytesReceived)), "fullResync": .bool(summary.fullResync),
            "applyMilliseconds": .int(summary.applyMilliseconds), "relayed": .int(Int64(summary.relayed)),
            "restamped": .int(Int64(summary.restamped)), "encrypted": .bool(encrypted),
            "encryptionStarted": .bool(summary.encryptionStarted), "encryptionEnded": .bool(summary.encryptionEnded),
            "movedForward": .bool(summary.movedForward),
            "newDeviceID": summary.newDeviceID.map { .string($0) } ?? .null,
            "problems": .array(summary.problems.map { .string($0) }),
            "conflicts": .int(Int64(summary.conflicts)),
            "awaitingApproval": .array(summary.awaitingApproval.keys.sorted().map { .string($0) }),
            "removed": .array(
                summary.removed.map {
                    .object(["id": .int($0.id), "collection": .string($0.collection), "key": .string($0.key)])
                }),
            "setAside": .array(
                summary.setAside.map {
                    .object([
                        "id": .int($0.id), "collection": .string($0.collection), "key": .string($0.key),
                        "why": .string($0.why ?? ""),
                    ])
                }),
        ]
        if let recoveryCode { object["recoveryCode"] = .string(recoveryCode) }
        Output.json(.object(object))
    } else if !options.quiet {
        var parts: [String] = []
        if name != "pull" { parts.append("pushed \(summary.pushed) change(s)") }
        if name != "push" { parts.append("pulled \(summary.pulled) record(s), \(summary.applied) changed here") }
        if summary.encryptionStarted {
            let sent = summary.relayed > 0 ? ": \(summary.relayed) record(s) this machine held sent sealed" : ""
            parts.append(
                "\(rotated ? "switched to the new account key" : "syncing sealed with the account key from now on")\(sent)"
            )
        } else if summary.encryptionEnded {
            parts.append(
                "syncing readable from now on (this machine has no account key any more): \(summary.relayed) record(s) sent"
            )
        } else if summary.movedForward {
            parts.append(
                "the server was restored from before a key rotation and now uses this machine's key again: \(summary.relayed) record(s) sent sealed"
            )
        } else if summary.fullResync {
            parts.append(
                "the server's timeline changed: re-synced fully"
                    + (summary.relayed > 0 ? " (\(summary.relayed) record(s) sent again)" : ""))
        }
        if summary.conflicts > 0 {
            parts.append(
                "\(summary.conflicts) value(s) lost to concurrent edits ('brsync log --conflicts' shows them, 'brsync restore ID' writes one back)"
            )
        }
        if !summary.removed.isEmpty {
            let names = summary.removed.prefix(5).map { "\($0.collection) '\($0.key)' (#\($0.id))" }.joined(
                separator: ", ")
            parts.append(
                "removed \(summary.removed.count) record(s) deleted on another machine (the server no longer has them): \(names)"
                    + (summary.removed.count > 5 ? ", …" : "")
                    + "; 'brsync log --removed' lists them, 'brsync restore --removed ID' brings one back")
        }
        if !summary.setAside.isEmpty {
            let numbers = summary.setAside.prefix(5).map { "#\($0.id)" }.joined(separator: ", ")
            parts.append(
                "set aside \(summary.setAside.count) record(s) written with the retired account key after the account moved on from it "
                    + "(by a machine offline across the rotation, or one that kept the old key), not applied: \(numbers)"
                    + (summary.setAside.count > 5 ? ", …" : "")
                    + "; 'brsync log --removed' shows them, 'brsync restore --removed ID' writes one back")
        }
        if summary.restamped > 0 {
            parts.append("\(summary.restamped) change(s) re-stamped (this machine's clock was ahead)")
        }
        for (id, reason) in summary.awaitingApproval.sorted(by: { $0.key < $1.key }) {
            parts.append(
                "profile '\(DisplayText.printable(id))' waits for your approval here, and opens nothing until then "
                    + "(\(reason)): 'brsync browsers approve \(DisplayText.printable(id))' shows what it would run")
        }
        if let id = summary.newDeviceID {
            // A key's first sync gives a new device id too (said above); only a copy needs saying.
            if !summary.encryptionStarted && !summary.encryptionEnded {
                parts.append("this replica was a copy of another and is now device \(id)")
            }
        }
        print("\(name): " + parts.joined(separator: ", "))
    }
    for problem in summary.problems { writeToStandardError("brsync: warning: \(DisplayText.printable(problem))\n") }
}

struct Push: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push", abstract: "Send this machine's unpushed changes to the server.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var options: TransferOptions
    func run() throws { try transfer(global, options, "push") { try $0.push() } }
}

struct Pull: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pull", abstract: "Fetch and apply every change from the server.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var options: TransferOptions
    func run() throws { try transfer(global, options, "pull") { try $0.pull() } }
}

struct SyncCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync", abstract: "Push, then pull until nothing is left.")
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
