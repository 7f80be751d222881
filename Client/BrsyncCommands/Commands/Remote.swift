import ArgumentParser
import Glibc
import JSON
import Model
import Replica
import SyncCore
import SystemServices

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

public struct RemoteCommand: ParsableCommand {
    /// What a sync or key command says when this machine has no server yet.
    public static let noRemote =
        "no remote: join a server with 'brsync join' (a join code from its operator), or set one with 'brsync remote set https://HOST --token-file FILE'"

    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "remote", abstract: "Set, show or remove the sync server.",
        subcommands: [Set.self, Show.self, Remove.self], defaultSubcommand: Show.self)

    public struct Set: ParsableCommand {

        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Use a sync server: its URL, this device's token, and optionally a pinned CA file.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "https://HOST[:PORT]") var url: String
        @Option(help: "This device's token (from 'brsyncd device add').") var token: String?
        @Option(
            help: ArgumentHelp(
                "Read the token from a file (kept off the command line, where other users' 'ps' can see it).",
                valueName: "file"),
            completion: .file())
        var tokenFile: String?
        @Option(
            help: ArgumentHelp(
                "A PEM CA file to verify the server with, instead of the system CA store.", valueName: "file"),
            completion: .file())
        var ca: String?
        @Flag(
            help:
                "Verify the server with the system CA store, dropping a pinned CA (without --ca, the pinned CA stays for the same server)."
        )
        var systemCa = false

        public func validate() throws {
            if systemCa && ca != nil { throw ValidationError("give --ca FILE or --system-ca, not both") }
            if (token == nil) == (tokenFile == nil) {
                throw ValidationError("give the token with --token TOKEN or --token-file FILE (one of them)")
            }
        }

        public func run() throws {
            let remote = try RemoteURL(parsing: url)
            let token =
                try token?.trimmingASCIIWhitespace()
                ?? String(
                    decoding: FileInput.read(GlobalOptions.absolute(tokenFile ?? ""), what: "the token file").prefix(
                        4096),
                    as: UTF8.self
                ).trimmingASCIIWhitespace()
            guard token.hasPrefix(JoinRequest.tokenPrefix), token.count >= 20, !token.contains(where: \.isWhitespace)
            else {
                // Say which part is wrong: a token that starts right may be cut short.
                // A join code (or its secret) pasted here is for 'brsync join', which makes a token from it.
                if token.hasPrefix(JoinRequest.secretPrefix) || token.hasPrefix("brsync://join") {
                    throw CLIFailure(
                        message:
                            "that is a join code, not a token: give it to 'brsync join' (it pins the server's CA and makes this machine's token); nothing was changed"
                    )
                }
                let what =
                    !token.hasPrefix(JoinRequest.tokenPrefix)
                    ? "it does not start with \(JoinRequest.tokenPrefix)"
                    : token.contains(where: \.isWhitespace)
                        ? "it contains white space"
                        : "it is too short (\(token.count) characters; a token has at least 20)"
                throw CLIFailure(
                    message:
                        "the token is not one 'brsyncd device add' prints: \(what); copy the whole line (nothing was changed)"
                )
            }
            if self.token != nil {
                ExitStatus.warn(
                    "the token was given on the command line, where other users of this machine can read it ('ps') and "
                        + "your shell's history keeps it: use --token-file FILE next time")
            }
            // The CA is checked, then copied into the home: a file moved or
            // deleted later does not stop the sync.
            var caBytes: [UInt8]?
            if let ca {
                let absolute = GlobalOptions.absolute(ca)
                let bytes = [UInt8](try FileInput.read(absolute, what: "the CA file"))
                guard bytes.count <= 1 << 20,
                    String(decoding: bytes, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----")
                else {
                    throw CLIFailure(
                        message:
                            "the CA file \(absolute) holds no PEM certificate ('-----BEGIN CERTIFICATE-----'); nothing was changed"
                    )
                }
                caBytes = bytes
            }
            let replica = try global.openReplica()
            var caPath: String?
            if let caBytes {
                let pinned = "\(replica.home)/ca.pem"
                do { try SecretFile.write(caBytes, to: pinned, what: "the CA") } catch {
                    throw CLIFailure(message: "\(error)")
                }
                caPath = pinned
            } else if !systemCa {
                // A new token for the same server (a dev server restarted, a
                // token issued again) keeps the CA pinned for it.
                let state = try replica.syncState()
                if state.remoteURL == remote.text, let pinned = state.caFile, access(pinned, R_OK) == 0 {
                    caPath = pinned
                }
            }
            // The token it replaces for the same server is kept: `remote set`
            // cannot check a token offline, and a mistyped one must not cost
            // the one that worked.
            // Only a token that synced since it was set is kept (a second
            // mistyped one must not push out the one that worked).
            let state = try replica.syncState()
            let sameServer = state.remoteURL == remote.text
            let replaced =
                sameServer ? (try? TokenFile.read(home: replica.home)).flatMap { $0 == token ? nil : $0 } : nil
            let provenSince =
                TokenFile.modifiedMillis(home: replica.home).map { set in (state.lastSyncMillis ?? 0) > set } ?? false
            if let replaced, provenSince { try TokenFile.write(replaced, home: replica.home, previous: true) }
            let kept =
                replaced != nil
                && (provenSince || access(TokenFile.path(home: replica.home, previous: true), F_OK) == 0)
            try TokenFile.write(token, home: replica.home)
            try replica.setRemote(url: remote.text, caFile: caPath)
            let trust =
                caPath.map { ca != nil ? " (CA pinned, copied to \($0))" : " (the CA pinned before, \($0), kept)" }
                ?? " (system CA store)"
            print(
                "remote \(remote)\(trust); token saved in \(TokenFile.path(home: replica.home))"
                    + (kept
                        ? "; the last token that synced is kept in \(TokenFile.path(home: replica.home, previous: true))"
                        : ""))
        }
    }

    public struct Show: ParsableCommand {

        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "show", abstract: "Show the sync server (never the token).")
        @OptionGroup var global: GlobalOptions
        public func run() throws {
            let state = try global.openReplica().syncState()
            guard let url = state.remoteURL else {
                print(RemoteCommand.noRemote)
                return
            }
            print("remote \(url)")
            print("CA: \(state.caFile ?? "system CA store")")
        }
    }

    public struct Remove: ParsableCommand {

        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "rm", abstract: "Forget the sync server and the token; local data stays.")
        @OptionGroup var global: GlobalOptions
        public func run() throws {
            let replica = try global.openReplica()
            let had = try replica.syncState().remoteURL
            try replica.removeRemote()
            TokenFile.remove(home: replica.home)
            print(
                had == nil
                    ? "there was no remote; nothing changed" : "remote removed; the replica keeps working offline")
        }
    }
}

/// The token lives in a file only the user can read (``SecretFile``), never in the replica.
public enum TokenFile {
    /// - Parameter previous: the token the last `remote set` replaced (kept
    ///   in case the new one is refused).
    public static func path(home: String, previous: Bool = false) -> String {
        previous ? "\(home)/token.previous" : "\(home)/token"
    }

    public static func write(_ token: String, home: String, previous: Bool = false) throws {
        do throws(SecretFile.Failure) {
            try SecretFile.write(
                Array((token + "\n").utf8), to: path(home: home, previous: previous), what: "the token")
        } catch {
            throw CLIFailure(message: error.message)
        }
    }

    public static func read(home: String, previous: Bool = false) throws -> String {
        let file = path(home: home, previous: previous)
        let read: [UInt8]?
        do throws(SecretFile.Failure) {
            read = try SecretFile.read(file, what: "the token")
        } catch {
            throw CLIFailure(message: error.message)
        }
        guard let bytes = read else {
            throw CLIFailure(
                message: "cannot read the token (set it with 'brsync remote set') at \(file): no such file")
        }
        let token = String(decoding: bytes, as: UTF8.self).trimmingASCIIWhitespace()
        guard !token.isEmpty else {
            throw CLIFailure(message: "the token file is empty; run 'brsync remote set' again")
        }
        return token
    }

    /// When the token file was last written (ms since the epoch), or nil.
    public static func modifiedMillis(home: String) -> Int64? {
        var status = stat()
        guard stat(path(home: home), &status) == 0 else { return nil }
        return Int64(status.st_mtim.tv_sec) * 1000 + Int64(status.st_mtim.tv_nsec) / 1_000_000
    }

    public static func remove(home: String) {
        unlink(path(home: home))
        unlink(path(home: home, previous: true))
    }
}

extension String {
    func trimmingASCIIWhitespace() -> String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}

public struct Status: ParsableCommand {

    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Device, server, epoch, last sync, unpushed changes, cursor.")
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Print JSON.") var json = false

    public func run() throws {
        let replica = try global.openReplica()
        let state = try replica.syncState()
        let unpushed = try replica.unpushedCount()
        // Whether this machine syncs end to end encrypted: it holds the account key (brsync-sync reads it).
        let keyFile = "\(replica.home)/account-key"
        let encrypted = access(keyFile, F_OK) == 0
        let watch = WatchWake.status(home: replica.home)
        let watching = watch?.isAlive(nowMillis: WatchWake.bootMillis()) == true
        let heard = try replica.deviceWrites().filter { $0.device != replica.deviceID }
        let names = try replica.deviceNames()
        let asideCount = try replica.pulledAsideCount()
        let aside = try replica.pulledAside(limit: json ? Self.asideListed : 1)
        let ledgerFailures = try replica.ledgerFailures()
        let endedFailures = try replica.ledgerFailuresEnded()
        let forgotten = try replica.forgottenDevices().values.sorted { $0.device < $1.device }
        let withdrawers = try replica.withdrawingDevices()
        let ownLedger = try replica.ownLedgerNotTaken()
        if json {
            func text(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }
            Output.json(
                JSONValue.object([
                    "device": .string(replica.deviceID), "deviceName": .string(replica.deviceName),
                    "server": text(state.remoteURL),
                    "epoch": text(state.epoch), "lastSync": text(state.lastSyncMillis.map(Timestamp.iso8601(millis:))),
                    "unpushed": .int(Int64(unpushed)), "cursor": .int(state.pullCursor),
                    "pushedThrough": .int(state.pushedThrough),
                    "clockOffsetMilliseconds": .int(state.clockOffsetMilliseconds),
                    "problem": state.problem.isEmpty ? .null : .string(state.problem),
                    "problemAt": text(state.problemAtMillis.map(Timestamp.iso8601(millis:))),
                    "encrypted": .bool(encrypted), "watching": .bool(watching),
                    "heardFrom": .array(
                        heard.map {
                            .object([
                                "device": .string($0.device), "deviceName": text(names.name(of: $0.device)),
                                "newestWrite": .string(Timestamp.iso8601(millis: $0.newest.wallMillis)),
                                "newestStamp": .string($0.newest.description),
                                "pulledAt": .string(Timestamp.iso8601(millis: $0.seenAtMillis)),
                            ])
                        }),
                    "ledgerFailures": .array(
                        ledgerFailures.map {
                            .object([
                                "device": .string($0.device), "deviceName": text(names.name(of: $0.device)),
                                "what": .string($0.what), "alarm": .bool($0.alarming),
                                "since": .string(Timestamp.iso8601(millis: $0.firstAtMillis)),
                                "pulls": .int(Int64($0.pulls)),
                            ])
                        }),
                    "ledgerChecksEnded": .array(
                        endedFailures.map {
                            .object([
                                "device": .string($0.failure.device),
                                "deviceName": text(names.name(of: $0.failure.device)),
                                "what": .string($0.failure.what), "alarm": .bool($0.failure.alarming),
                                "since": .string(Timestamp.iso8601(millis: $0.failure.firstAtMillis)),
                                "ended": .string(Timestamp.iso8601(millis: $0.endedAtMillis)),
                            ])
                        }),
                    "forgottenDevices": .array(
                        forgotten.map {
                            .object([
                                "device": .string($0.device), "deviceName": text(names.name(of: $0.device)),
                                "what": .string($0.what), "since": .string(Timestamp.iso8601(millis: $0.atMillis)),
                            ])
                        }),
                    "withdrawnBy": .array(
                        withdrawers.map {
                            .object([
                                "device": .string($0.device), "deviceName": text(names.name(of: $0.device)),
                                "withdrawals": .int(Int64($0.count)),
                            ])
                        }),
                    "ownLedgerNotTaken": ownLedger.map {
                        .object([
                            "syncs": .int(Int64($0.syncs)),
                            "since": .string(Timestamp.iso8601(millis: $0.firstAtMillis)),
                            "why": .string($0.why), "warning": .bool($0.warns),
                        ])
                    } ?? .null,
                    "setAsideFromServer": .int(Int64(asideCount)),
                    "setAside": .array(
                        aside.map {
                            .object([
                                "collection": .string($0.collection), "key": text($0.shownKey),
                                "filedKey": .string($0.filedKey), "sequence": .int($0.sequence), "why": .string($0.why),
                                "firstSetAside": .string(Timestamp.iso8601(millis: $0.firstAtMillis)),
                                "lastSetAside": .string(Timestamp.iso8601(millis: $0.lastAtMillis)),
                            ])
                        }),
                ]))
            return
        }
        print("device:    \(replica.deviceName) (\(replica.deviceID)); rename with 'brsync device name NAME'")
        print("server:    \(state.remoteURL ?? "none")")
        print("epoch:     \(state.epoch ?? "-")")
        print("last sync: \(state.lastSyncMillis.map(Timestamp.iso8601(millis:)) ?? "never")")
        print("unpushed:  \(unpushed) change(s)")
        print("cursor:    \(state.pullCursor)")
        // Offline: without a key here, what the last sync learned tells whether the account is encrypted.
        let lockedOut =
            try state.problem.contains("this account is end-to-end encrypted") || replica.encryptionState().sawEncrypted
        print(
            "encrypted: \(encrypted ? "end to end (the account key is in \(keyFile))" : lockedOut ? "the account is, and this machine has no key: add its recovery code with 'brsync key add'" : "not on this machine, which has no account key ('brsync key init' encrypts the account, 'brsync key add' adds the code of an encrypted one)")"
        )
        let service = watch.map { WatchWake.runsAsService(pid: $0.pid) } ?? false
        let watchText =
            watching
            ? "running (pid \(watch?.pid ?? 0)): edits sync as they are made ('brsync watch'; its log: "
                + (service
                    ? "'journalctl --user -u brsync-watch')" : "where it was started, not as the brsync-watch service)")
            : watch != nil
                ? "stopped answering (pid \(watch?.pid ?? 0), no sign of life for over 3 minutes): the sync timer syncs meanwhile; "
                    + (service ? "'systemctl --user restart brsync-watch'" : "stop it and start 'brsync watch' again")
                : "not running: this machine syncs at 'brsync sync' and the sync timer ('brsync watch' syncs live)"
        print("watch:     \(watchText)")
        print(
            "clock:     \(Self.clockText(offsetMilliseconds: state.clockOffsetMilliseconds, contacted: state.clockKnown || state.epoch != nil))"
        )
        // When each other device was last heard from: its own status, on
        // that machine, shows its own newest edit; a gap is worth a look.
        for (index, device) in heard.prefix(Self.devicesShown).enumerated() {
            print(
                "\(index == 0 ? "heard:    " : "          ") \(DisplayText.printable(names.display(device.device))): newest edit "
                    + "\(Timestamp.iso8601(millis: device.newest.wallMillis)), pulled \(Timestamp.iso8601(millis: device.seenAtMillis))"
            )
        }
        if heard.count > Self.devicesShown {
            print(
                "           and \(heard.count - Self.devicesShown) more device(s) ('brsync status --json' lists them)")
        }
        // Another device's writes its ledger names and this machine lacks.
        for failure in ledgerFailures {
            let device = DisplayText.printable(names.display(failure.device))
            let what = DisplayText.printable(String(failure.what.prefix(300)))
            let since = Timestamp.iso8601(millis: failure.firstAtMillis)
            print(
                failure.alarming
                    ? "withheld:  the server may be withholding writes of \(device): \(what) (since \(since)). "
                        + "Run 'brsync sync' on that device; if this still stands, ask the server's operator or use "
                        + "another server. Everything here is kept. A device that will never sync again: "
                        + "'brsync device forget \(failure.device)'."
                    : "checking:  \(device)'s ledger names writes not here yet: \(what) (since \(since); its last push "
                        + "may have been cut short: an alarm if it still stands after 15 minutes and a second pull)")
        }
        // Devices forgotten here ('brsync device forget'): not checked until they write again.
        for device in forgotten {
            print(
                "unchecked: \(DisplayText.printable(names.display(device.device))) (forgotten "
                    + "\(Timestamp.iso8601(millis: device.atMillis)); its failure then: "
                    + "\(DisplayText.printable(String(device.what.prefix(300))))): checked again once it writes again")
        }
        // Writes an earlier id lost everywhere, withdrawn by the device that went by it.
        for withdrawer in withdrawers {
            print(
                "withdrawn: \(DisplayText.printable(names.display(withdrawer.device))) withdrew writes an earlier id of "
                    + "its own made that every holder lost (its home was restored from an older copy): checks here "
                    + "excuse those writes")
        }
        // Failures a key change ended (nothing checks them any more).
        for ended in endedFailures {
            let device = DisplayText.printable(names.display(ended.failure.device))
            let what = DisplayText.printable(String(ended.failure.what.prefix(300)))
            print(
                "ended:     a key change (\(Timestamp.iso8601(millis: ended.endedAtMillis))) ended the check of \(device), "
                    + "failing since \(Timestamp.iso8601(millis: ended.failure.firstAtMillis)): \(what). If that "
                    + "device's writes are still missing, it sends them again once it has the new code.")
        }
        // This machine's own ledger, when the server did not take it.
        if let own = ownLedger {
            let since = Timestamp.iso8601(millis: own.firstAtMillis)
            let why = DisplayText.printable(String(own.why.prefix(300)))
            print(
                own.warns
                    ? "ledger:    the server does not take this machine's ledger (\(own.syncs) syncs in a row since "
                        + "\(since)): your other machines cannot tell whether it withholds this machine's edits. Ask "
                        + "its operator (an older brsyncd does so), or use another server. Last: \(why)"
                    : "ledger:    the server did not take this machine's ledger at the last \(own.syncs) sync(s) "
                        + "(since \(since)): a warning if it still does not at the third, 15 minutes on. Last: \(why)")
        }
        if let newest = aside.first {
            print(
                "set aside: \(asideCount) record(s) the server sent were never applied here (they come in when a "
                    + "pull brings them whole; 'brsync status --json' lists them); newest: "
                    + "\(DisplayText.printable(newest.shown)): \(DisplayText.printable(String(newest.why.prefix(300)))) "
                    + "(\(Timestamp.iso8601(millis: newest.lastAtMillis)))")
        }
        if !state.problem.isEmpty {
            print(
                "problem:   \(DisplayText.printable(state.problem))\(state.problemAtMillis.map { " (\(Timestamp.iso8601(millis: $0)))" } ?? "")"
            )
        }
    }
}

extension Status {
    /// How many devices the text form lists as heard from (newest first).
    static let devicesShown = 8
    /// How many records set aside `--json` lists (newest first; `setAsideFromServer` counts them all).
    static let asideListed = 1_000

    /// How this machine's clock stands against the server's, in words.
    static func clockText(offsetMilliseconds: Int64, contacted: Bool) -> String {
        guard contacted else { return "not known yet (no contact with a server)" }
        let seconds = abs(offsetMilliseconds) / 1000
        guard seconds > 0 else { return "in step with the server (within 1 s)" }
        let amount =
            seconds < 120
            ? "\(seconds) s"
            : seconds < 7_200
                ? "\(seconds / 60) min" : seconds < 172_800 ? "\(seconds / 3_600) h" : "\(seconds / 86_400) days"
        return
            "this machine is \(amount) \(offsetMilliseconds > 0 ? "behind" : "ahead of") the server (edits are stamped in the server's time)"
    }
}

public struct Restore: ParsableCommand {

    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract:
            "Write a value that lost a conflict back, or a record a sync removed, as a new edit (see 'brsync log --conflicts' and '--removed')."
    )
    @OptionGroup var global: GlobalOptions
    @Flag(help: "ID is a removed record's number ('brsync log --removed'), not a conflict's.") var removed = false
    @Argument(
        help: "The conflict's number (or the removed record's, with --removed).", completion: Completions.conflictIDs)
    var id: Int64

    public func run() throws {
        let replica = try global.openReplica()
        if removed {
            let record = try replica.restore(removed: id)
            print("restored \(record.collection)/\(DisplayText.printable(record.key)) (it syncs at the next sync)")
            return
        }
        let conflict = try replica.restore(conflict: id)
        print("restored \(conflict.collection)/\(conflict.key) \(conflict.field) = \(conflict.lost.value.jsonText)")
    }
}
