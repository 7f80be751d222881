import JSON
import Replica
import SyncCore
import SystemServices

/// `status`'s two forms: JSON (`--json`) and text for a person.
extension Status.Report {
    private func text(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }

    var json: JSONValue {
        .object(summaryJSON.merging(devicesJSON) { first, _ in first }.merging(asideJSON) { first, _ in first })
    }

    /// The device, the server, the sync's state.
    private var summaryJSON: [String: JSONValue] {
        [
            "device": .string(replica.deviceID), "deviceName": .string(replica.deviceName),
            "server": text(state.remoteURL),
            "epoch": text(state.epoch), "lastSync": text(state.lastSyncMillis.map(Timestamp.iso8601(millis:))),
            "unpushed": .int(Int64(unpushed)), "cursor": .int(state.pullCursor),
            "pushedThrough": .int(state.pushedThrough),
            "clockOffsetMilliseconds": .int(state.clockOffsetMilliseconds),
            "problem": state.problem.isEmpty ? .null : .string(state.problem),
            "problemAt": text(state.problemAtMillis.map(Timestamp.iso8601(millis:))),
            "problemIn": state.problem.isEmpty ? .null : .string(state.problemIn.rawValue),
            "problems": .array(
                state.problems.map {
                    .object([
                        "in": .string($0.part.rawValue), "problem": .string($0.message),
                        "at": text($0.atMillis.map(Timestamp.iso8601(millis:))), "code": text($0.code),
                    ])
                }),
            "encrypted": .bool(encrypted), "watching": .bool(watching),
        ]
    }

    /// Other devices: heard from, failing ledger checks, forgotten, withdrawing;
    /// and this machine's own ledger when the server did not take it.
    private var devicesJSON: [String: JSONValue] {
        [
            // One entry a machine, as the text lists them.
            "heardFrom": .array(
                machinesHeard.map { newest, ids in
                    .object([
                        "device": .string(names.current(newest.device)),
                        "deviceName": text(names.name(of: newest.device)),
                        "heardUnder": .array(ids.sorted().map { .string($0) }),
                        "newestWrite": .string(Timestamp.iso8601(millis: newest.newest.wallMillis)),
                        "newestStamp": .string(newest.newest.description),
                        "pulledAt": .string(Timestamp.iso8601(millis: newest.seenAtMillis)),
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
        ]
    }

    /// The records the server sent that were set aside.
    private var asideJSON: [String: JSONValue] {
        [
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
        ]
    }

    func printText() throws {
        try printSummary()
        printHeard()
        printLedgerNotes()
        printAsideAndProblem()
    }

    /// The device, the server, the sync's state, encryption, watch and clock.
    private func printSummary() throws {
        print("device:    \(replica.deviceName) (\(replica.deviceID)); rename with 'brsync device name NAME'")
        print("server:    \(state.remoteURL ?? "none")")
        print("epoch:     \(state.epoch ?? "-")")
        print("last sync: \(state.lastSyncMillis.map(Timestamp.iso8601(millis:)) ?? "never")")
        print("unpushed:  \(unpushed) change(s)")
        print("cursor:    \(state.pullCursor)")
        // Offline: without a key here, what the last sync learned tells whether the account is encrypted.
        let marks = try replica.encryptionState()
        let lockedOut = state.problem.contains("this account is end-to-end encrypted") || marks.sawEncrypted
        let seen = marks.sawEncryptedAccount.map { " (account \($0))" } ?? ""
        print(
            "encrypted: \(encrypted ? "end to end (the account key is in \(keyFile))" : lockedOut ? "this machine saw its account\(seen) end-to-end encrypted and has no key: it sends nothing until 'brsync key add' with that account's recovery code; if its account is readable now (the machine was moved to another, or the operator reset it), 'brsync key forget'" : "not on this machine, which has no account key ('brsync key init' encrypts the account, 'brsync key add' adds the code of an encrypted one)")"
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
            "clock:     \(Status.clockText(offsetMilliseconds: state.clockOffsetMilliseconds, contacted: state.clockKnown || state.epoch != nil))"
        )
    }

    /// When each other device was last heard from.
    private func printHeard() {
        // When each other device was last heard from: its own status, on
        // that machine, shows its own newest edit; a gap is worth a look.
        // One line a machine (``Report/machinesHeard``).
        let heard = machinesHeard.map(\.newest)
        for (index, device) in heard.prefix(Status.devicesShown).enumerated() {
            print(
                "\(index == 0 ? "heard:    " : "          ") \(DisplayText.printable(names.display(device.device))): newest edit "
                    + "\(Timestamp.iso8601(millis: device.newest.wallMillis)), pulled \(Timestamp.iso8601(millis: device.seenAtMillis))"
            )
        }
        if heard.count > Status.devicesShown {
            print(
                "           and \(heard.count - Status.devicesShown) more device(s) ('brsync status --json' lists them)"
            )
        }
    }

    /// What the ledger checks found: failures, forgotten devices,
    /// withdrawals, checks a key change ended, this machine's own ledger.
    private func printLedgerNotes() {
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
    }

    private func printAsideAndProblem() {
        if let newest = aside.first {
            print(
                "set aside: \(asideCount) record(s) the server sent were never applied here (they come in when a "
                    + "pull brings them whole; 'brsync status --json' lists them); newest: "
                    + "\(DisplayText.printable(newest.shown)): \(DisplayText.printable(String(newest.why.prefix(300)))) "
                    + "(\(Timestamp.iso8601(millis: newest.lastAtMillis)))")
        }
        for kept in state.problems {
            print(
                "problem (\(kept.part.rawValue)): \(DisplayText.printable(kept.message))\(kept.atMillis.map { " (\(Timestamp.iso8601(millis: $0)))" } ?? "")"
            )
        }
    }
}
