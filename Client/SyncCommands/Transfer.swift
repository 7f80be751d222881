import BrsyncCommands
import Desktop
import JSON
import Replica
import SyncClient
import SyncCore
import SystemServices

/// One push, pull or sync with this machine's client, and what it did in
/// words and as JSON: what `brsync push|pull|sync` print, and what a window
/// shows.
public enum Transfer {
    /// Runs `body` with this machine's client (its account key, or
    /// `accountKey`), reporting progress to `progress`; with `notifying`, a
    /// stop that waits for the user is shown on the desktop too
    /// (``notifyStop(_:previous:)``).
    /// - Throws: ``SyncError`` as the client throws it; a refused token
    ///   when a replaced one is kept aside says how to put it back.
    /// - Returns: what it did, and whether it was sealed.
    public static func run(
        _ replica: Replica, accountKey: AccountKey? = nil, options: SyncClient.Options = SyncClient.Options(),
        progress: SyncClient.Progress? = nil, notifying: Bool = false,
        _ body: (SyncClient) throws -> SyncClient.Summary
    ) throws -> (summary: SyncClient.Summary, encrypted: Bool) {
        let state = try replica.syncState()
        let (client, key) = try machineClient(
            replica, key: accountKey.map { .given($0) } ?? .keyFile, options: options, progress: progress)
        do {
            return (try body(client), key != nil)
        } catch let error as SyncError {
            if notifying { notifyStop(error, previous: state.problem) }
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
    }

    /// One sync of the replica in `home`, as a window runs it on a thread of
    /// its own (with its own connection to the replica): progress goes to
    /// `progress`, and it stops before its next request once `stop` says
    /// so (``SyncError/cancelled``), keeping what came before.
    /// - Returns: what it did, as `brsync sync` says it (in the window's words: where to act is a page, not a command), with its warnings.
    /// - Throws: what `brsync sync` says when it fails.
    public static func syncNow(
        home: String, progress: @escaping SyncClient.Progress, stop: @escaping @Sendable () -> Bool
    ) throws -> [String] {
        let replica = try Replica.open(home: home)
        var options = SyncClient.Options()
        options.stopRequested = stop
        let (summary, _) = try run(replica, options: options, progress: progress) { try $0.sync() }
        return [line(summary, "sync", wording: .window)] + warnings(summary)
    }

    /// A stop that waits for the user (the timer's sync runs with nobody at
    /// a terminal), shown as a desktop notification, once: not again while
    /// the same stop repeats at every run.
    /// - Parameter previous: the problem the replica recorded before this run.
    public static func notifyStop(_ error: SyncError, previous: String) {
        guard error.waitsForTheUser, error.description != previous else { return }
        let path = (ProcessEnvironment.value("PATH") ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
        Notifier.notify(
            summary: "brsync stopped syncing", body: "\(error.description). 'brsync status' shows it again.", path: path
        )
    }

    /// What a transfer did, as `--json` prints it.
    /// - Parameters:
    ///   - rotated: the transfer was the first with a rotated key (`keyRotated`;
    ///     `encryptionStarted` says a key began sealing, the first or a new one).
    ///   - recoveryCode: the new key's code, after a key change.
    public static func json(
        _ summary: SyncClient.Summary, encrypted: Bool, rotated: Bool = false, recoveryCode: String? = nil
    ) -> JSONValue {
        var object: [String: JSONValue] = [
            "pushed": .int(Int64(summary.pushed)), "pulled": .int(Int64(summary.pulled)),
            "applied": .int(Int64(summary.applied)),
            "requests": .int(Int64(summary.requests)), "bytesSent": .int(Int64(summary.bytesSent)),
            "bytesReceived": .int(Int64(summary.bytesReceived)), "fullResync": .bool(summary.fullResync),
            "accountChanged": .bool(summary.accountChanged),
            "applyMilliseconds": .int(summary.applyMilliseconds), "relayed": .int(Int64(summary.relayed)),
            "ledgerCheck": summary.ledgerCheck.map {
                .object([
                    "whole": .bool($0.whole), "ledgers": .int(Int64($0.ledgers)),
                    "registers": .int(Int64($0.registers)), "milliseconds": .int($0.milliseconds),
                ])
            } ?? .null,
            "restamped": .int(Int64(summary.restamped)), "encrypted": .bool(encrypted),
            "encryptionStarted": .bool(summary.encryptionStarted), "encryptionEnded": .bool(summary.encryptionEnded),
            "movedForward": .bool(summary.movedForward),
            "newDeviceID": summary.newDeviceID.map { .string($0) } ?? .null, "forked": .bool(summary.forked),
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
        if let elsewhere = summary.writtenElsewhere {
            object["writtenElsewhere"] = .object([
                "reason": .string(elsewhere.reason), "serverChain": .string(Self.word(elsewhere.standing)),
            ])
        }
        if let recoveryCode { object["recoveryCode"] = .string(recoveryCode) }
        object["keyRotated"] = .bool(rotated)
        return .object(object)
    }

    /// Where the server holds this machine's id's chain, in a word.
    static func word(_ standing: ChainEcho.Standing) -> String {
        switch standing {
        case .ours: "this machine's"
        case .behind: "behind this machine's"
        case .ahead: "ahead of what this machine was told"
        case .another: "another home's"
        case .otherAccount: "another account's"
        case .unknown: "unknown"
        }
    }

    /// Where the person acts on what a line reports: the commands in a
    /// terminal, or the settings window (its pages and buttons).
    public enum Wording: Sendable {
        case commands
        case window

        /// What to do about `what`, in this wording.
        func action(_ what: Action, id: String = "") -> String {
            switch (self, what) {
            case (.commands, .conflicts): "'brsync log --conflicts' shows them, 'brsync restore ID' writes one back"
            case (.window, .conflicts): "Needs you, on the Sync page, lists them with Restore this value"
            case (.commands, .removed):
                "'brsync log --removed' lists them, 'brsync restore --removed ID' brings one back"
            case (.window, .removed): "Needs you, on the Sync page, lists them with Restore"
            case (.commands, .approve): "'brsync browsers approve \(id)' shows what it would run"
            case (.window, .approve): "Approve…, under Needs you or on the Browsers page, shows what it would run"
            }
        }

        enum Action { case conflicts, removed, approve }
    }

    /// What a transfer named `name` (push, pull, sync, key rotate, …) did,
    /// in one line.
    /// - Parameters:
    ///   - rotated: the transfer was the first with a rotated key.
    ///   - wording: where the person acts on what it reports.
    public static func line(
        _ summary: SyncClient.Summary, _ name: String, rotated: Bool = false, wording: Wording = .commands
    ) -> String {
        var parts: [String] = []
        if name != "pull" { parts.append("pushed \(summary.pushed) change(s)") }
        if name != "push" { parts.append("pulled \(summary.pulled) record(s), \(summary.applied) changed here") }
        return "\(name): " + (parts + notes(summary, rotated: rotated, wording: wording)).joined(separator: ", ")
    }

    /// What ``line(_:_:rotated:wording:)`` says besides the counts: a key or
    /// an account this machine moved to, a re-sync, conflicts, records
    /// removed or set aside, re-stamps, a copy of this home, profiles
    /// awaiting approval, a new device id. None for a sync that only moved
    /// records (`brsync watch` logs a sync with any).
    public static func notes(
        _ summary: SyncClient.Summary, rotated: Bool = false, wording: Wording = .commands
    )
        -> [String]
    {
        var parts: [String] = []
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
        } else if summary.accountChanged {
            parts.append(
                "this machine's token is of another account than the one it synced with: it joined that account as a new machine"
                    + (summary.relayed > 0 ? " (\(summary.relayed) record(s) this machine held sent there)" : ""))
        } else if summary.fullResync {
            parts.append(
                "the server's timeline changed: re-synced fully"
                    + (summary.relayed > 0 ? " (\(summary.relayed) record(s) sent again)" : ""))
        }
        if summary.conflicts > 0 {
            parts.append(
                "\(summary.conflicts) value(s) lost to concurrent edits (\(wording.action(.conflicts)))"
            )
        }
        if !summary.removed.isEmpty {
            let names = summary.removed.prefix(5).map { "\($0.collection) '\($0.key)' (#\($0.id))" }.joined(
                separator: ", ")
            parts.append(
                "removed \(summary.removed.count) record(s) deleted on another machine (the server no longer has them): \(names)"
                    + (summary.removed.count > 5 ? ", …" : "")
                    + "; \(wording.action(.removed))")
        }
        if !summary.setAside.isEmpty {
            let numbers = summary.setAside.prefix(5).map { "#\($0.id)" }.joined(separator: ", ")
            parts.append(
                "set aside \(summary.setAside.count) record(s) written with the retired account key after the account moved on from it "
                    + "(by a machine offline across the rotation, or one that kept the old key), not applied: \(numbers)"
                    + (summary.setAside.count > 5 ? ", …" : "")
                    + "; \(wording.action(.removed))")
        }
        if summary.restamped > 0 {
            parts.append("\(summary.restamped) change(s) re-stamped (this machine's clock was ahead)")
        }
        if let elsewhere = summary.writtenElsewhere {
            parts.append(
                "another home writes under this machine's device id (\(elsewhere.reason); the server's chain of it: "
                    + "\(Self.word(elsewhere.standing))): a copy of this home syncs, or this home was put back from an "
                    + "older copy of itself; the one whose chain it is not takes an id of its own at its next edit, and "
                    + "nothing is lost")
        }
        for (id, reason) in summary.awaitingApproval.sorted(by: { $0.key < $1.key }) {
            parts.append(
                "profile '\(DisplayText.printable(id))' waits for your approval here, and opens nothing until then "
                    + "(\(reason)): \(wording.action(.approve, id: DisplayText.printable(id)))")
        }
        // A key's first sync gives a new device id too (said above); only a fork needs saying, a
        // copy's first sync that is a key's too included. Its cause is told as it is known: a copy
        // of this home, or a server whose answers claim so (one that lies forks a replica too).
        if let id = summary.newDeviceID, summary.forked {
            parts.append(
                "this replica is now device \(id): its file was copied, or the server holds other changes "
                    + "under its old id (another copy of this home, or a server that lies); if this is another "
                    + "machine now, name it: 'brsync device name NAME' (both copies go by the same name)")
        }
        return parts
    }

    /// The problems a transfer met but went past, as warnings.
    public static func warnings(_ summary: SyncClient.Summary) -> [String] {
        summary.problems.map { "brsync: warning: \(DisplayText.printable($0))" }
    }
}
