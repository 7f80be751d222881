import Foundation
import JSON
import Replica
import SyncCore
import TestSupport
import Testing

/// Device names travel with sync, so the log and the conflicts say "laptop"
/// where stamps hold a hex id; the log shows what pulls brought.
@Suite struct DeviceNameTests {
    /// A laptop's rule, synced to a desktop.
    static func laptopRuleOnTheDesktop() throws -> (world: CLIWorld, laptop: String, desktop: String) {
        let world = try CLIWorld()
        let laptop = try world.replica("laptop")
        let desktop = try world.replica("desktop")
        try world.firefoxRule(laptop, "zoom.us", exec: "firefox %u")
        try world.mustRun(laptop, ["sync"])
        try world.mustRun(desktop, ["sync"])
        return (world, laptop, desktop)
    }

    @Test func theLogShowsPulledChangesByTheirDevicesName() throws {
        let (world, laptop, desktop) = try Self.laptopRuleOnTheDesktop()

        let log = try world.run(desktop, ["log"])
        #expect(log.status == 0)
        let pulled = log.stdout.split(separator: "\n").filter { $0.contains("[pulled]") }
        #expect(
            pulled.contains { $0.contains(" laptop [pulled] rules/zoom.us: ") && $0.contains(#"browser="firefox""#) },
            "\(log.stdout)")
        #expect(pulled.contains { $0.contains(" laptop [pulled] browsers/firefox: ") }, "\(log.stdout)")
        // Newest first: what the pull brought is above the name this device published before it.
        #expect(log.stdout.split(separator: "\n").first?.contains("[pulled]") == true, "\(log.stdout)")

        // A local edit after the pull is listed above it, whatever the clock says.
        try world.mustRun(desktop, ["browsers", "add", "chrome", "--exec", "chrome %u"])
        let after = try world.run(desktop, ["log", "--limit", "2"]).stdout.split(separator: "\n")
        #expect(
            after.count == 2 && after[0].contains("desktop (this device) [local] browsers/chrome")
                && after[1].contains("[pulled]"), "\(after)")
        let json = try world.run(desktop, ["log", "--json"]).stdout
        #expect(json.contains(#""deviceName":"laptop""#) && json.contains(#""kind":"pulled""#), "\(json)")

        // The laptop is renamed: the new name reaches the desktop at the next sync.
        let renamed = try world.run(laptop, ["device", "name", "work laptop"])
        #expect(renamed.status == 0 && renamed.stdout.contains("'work laptop' (was 'laptop')"), "\(renamed)")
        try world.mustRun(laptop, ["sync"])
        try world.mustRun(desktop, ["sync"])
        let devices = try world.run(desktop, ["device"])
        #expect(
            devices.stdout.contains("this device: desktop (") && devices.stdout.contains("other:       work laptop ("),
            "\(devices)")
        // `device list` is `device show`, as `rules list` and `browsers list` are lists.
        #expect(try world.run(desktop, ["device", "list"]).stdout == devices.stdout)
        #expect(try world.run(desktop, ["log", "--limit", "3"]).stdout.contains("work laptop [pulled]"))
        let status = try world.run(laptop, ["status"]).stdout
        #expect(status.contains("device:    work laptop ("), "\(status)")
    }

    /// `brsync status` says when each other device was last heard from: its
    /// newest edit a pull brought, by name; a later overwrite does not make
    /// it forget (the newest is only ever raised).
    @Test func statusSaysWhenEachDeviceWasLastHeardFrom() throws {
        let world = try CLIWorld()
        let laptop = try world.replica("laptop")
        let desktop = try world.replica("desktop")
        #expect(!(try world.run(desktop, ["status"]).stdout.contains("heard:")))
        try world.firefoxRule(laptop, "zoom.us", exec: "firefox %u")
        try world.mustRun(laptop, ["sync"])
        try world.mustRun(desktop, ["sync"])
        let status = try world.run(desktop, ["status"]).stdout
        let heard = status.split(separator: "\n").filter { $0.hasPrefix("heard:") }
        #expect(heard.count == 1 && heard[0].contains(" laptop: newest edit 20"), "\(status)")
        /// `status --json`'s `heardFrom`, each device's object.
        func heardFrom(_ home: String) throws -> [[String: JSONValue]] {
            let json = try JSONValue.parse(try world.run(home, ["status", "--json"]).stdout)
            guard case .object(let members) = json, case .array(let devices)? = members["heardFrom"] else {
                Issue.record("no heardFrom: \(json)")
                return []
            }
            return devices.compactMap { if case .object(let device) = $0 { device } else { nil } }
        }
        let devices = try heardFrom(desktop)
        #expect(devices.count == 1 && devices.first?["deviceName"] == .string("laptop"), "\(devices)")
        let newest = devices.first?["newestStamp"]?.stringValue
        // The desktop overwrites the laptop's rule: the laptop's newest write is kept.
        try world.mustRun(desktop, ["rules", "add", "zoom.us", "firefox", "--priority", "3"])
        try world.mustRun(desktop, ["sync"])
        let later = try heardFrom(desktop)
        #expect(later.count == 1 && newest != nil && later.first?["newestStamp"]?.stringValue == newest, "\(later)")
        // The laptop hears from the desktop in turn, and not from itself.
        try world.mustRun(laptop, ["sync"])
        let laptopView = try world.run(laptop, ["status"]).stdout
        #expect(laptopView.contains(" desktop: newest edit ") && !laptopView.contains("laptop (this device): newest"))
    }

    /// A machine that turns encryption on writes under a new id from then
    /// on (its old one is left behind): another machine's `status` still
    /// shows it once, by its newest edit.
    @Test func aMachineHeardUnderTwoIdsIsShownOnce() throws {
        let (world, laptop, desktop) = try Self.laptopRuleOnTheDesktop()
        let code = try #require(EncryptionTests.recoveryCode(try world.run(laptop, ["key", "init"]).stdout))
        let added = try ProcessRunner.run(
            world.brsync, ["key", "add"], environment: ["BRSYNC_HOME": desktop], stdin: code + "\n")
        #expect(added.status == 0, "\(added)")
        try world.mustRun(laptop, ["rules", "add", "later.example", "firefox"])
        try world.mustRun(laptop, ["sync"])
        try world.mustRun(desktop, ["sync"])
        let entries = try Self.statusList(world, desktop, "heardFrom")
        let status = try world.run(desktop, ["status"]).stdout
        let heard = status.split(separator: "\n").filter { $0.contains(": newest edit ") }
        #expect(heard.count == 1 && heard[0].contains(" laptop: newest edit "), "\(entries): \(status)")
        // `--json` lists the machine once too, under its current id, with both ids it was heard under.
        let laptopStatus = try JSONValue.parse(try world.run(laptop, ["status", "--json"]).stdout)
        guard case .object(let members) = laptopStatus, let laptopID = members["device"],
            entries.count == 1, case .array(let under)? = entries.first?["heardUnder"]
        else {
            Issue.record("\(entries), \(laptopStatus)")
            return
        }
        #expect(entries.first?["device"] == laptopID && under.count == 2 && under.contains(laptopID), "\(entries)")
    }

    /// A copy of a home whose first sync is `brsync key add` takes an id of
    /// its own (the key's new one), and is told how to name itself, as any
    /// copy is; the home it was copied from, adding the key, is not.
    @Test func aCopyWhoseFirstSyncAddsTheKeyIsToldToNameIt() throws {
        let (world, laptop, desktop) = try Self.laptopRuleOnTheDesktop()
        let copy = world.directory.file("copy")
        try FileManager.default.copyItem(atPath: desktop, toPath: copy)
        let code = try #require(EncryptionTests.recoveryCode(try world.run(laptop, ["key", "init"]).stdout))
        func addKey(_ home: String) throws -> ProcessResult {
            try ProcessRunner.run(world.brsync, ["key", "add"], environment: ["BRSYNC_HOME": home], stdin: code + "\n")
        }
        let copied = try addKey(copy)
        #expect(copied.status == 0 && copied.stdout.contains("name it: 'brsync device name NAME'"), "\(copied)")
        let original = try addKey(desktop)
        #expect(original.status == 0 && !original.stdout.contains("name it"), "\(original)")
        // `--json` says it too.
        let again = world.directory.file("again")
        try FileManager.default.copyItem(atPath: copy, toPath: again)
        for (home, forked) in [(again, true), (desktop, false)] {
            let json = try JSONValue.parse(try world.run(home, ["sync", "--json"]).stdout)
            guard case .object(let members) = json else {
                Issue.record("\(json)")
                continue
            }
            #expect(members["forked"] == .bool(forked) && (members["newDeviceID"] != .null) == forked, "\(json)")
        }
    }

    /// The objects of the list `name` in `brsync status --json` (recorded as an issue when it is not one).
    static func statusList(_ world: CLIWorld, _ home: String, _ name: String) throws -> [[String: JSONValue]] {
        let json = try JSONValue.parse(try world.run(home, ["status", "--json"]).stdout)
        guard case .object(let members) = json, case .array(let list)? = members[name] else {
            Issue.record("no \(name): \(json)")
            return []
        }
        return list.compactMap { if case .object(let item) = $0 { item } else { nil } }
    }

    /// `brsync status` shows another device's ledger that fails its checks
    /// (Deploy/SECURITY.md, "A device's own writes, counted"): held at first,
    /// with what it can mean; an alarm once it stands 15 minutes and two
    /// pulls, with what to do; gone once it passes.
    @Test func statusShowsADevicesLedgerThatFailsItsChecks() throws {
        let world = try CLIWorld()
        let desktop = try world.replica("desktop")
        let replica = try Replica.open(home: desktop)
        let now = replica.currentMillis
        let what = "its deletion of rules 'two.example' (2026-11-29T20:10:29.453Z) is missing here"
        // First seen by a pull 15 minutes ago.
        try replica.noteLedgerChecks(["0123456789abcdef": what], now: now - Replica.ledgerAlarmAfterMillis)
        let held = try world.run(desktop, ["status"]).stdout
        #expect(
            held.contains("checking:  device 0123456789abcdef's ledger names writes not here yet: \(what)")
                && held.contains("an alarm if it still stands after 15 minutes and a second pull")
                && !held.contains("withheld:"), "\(held)")
        func failures() throws -> [[String: JSONValue]] { try Self.statusList(world, desktop, "ledgerFailures") }
        let listed = try failures()
        #expect(listed.count == 1 && listed.first?["alarm"] == .bool(false) && listed.first?["what"] == .string(what))
        // A second pull, now, that still fails: an alarm.
        try replica.noteLedgerChecks(["0123456789abcdef": what], now: now)
        let alarm = try world.run(desktop, ["status"]).stdout
        #expect(
            alarm.contains("withheld:  the server may be withholding writes of device 0123456789abcdef: \(what)")
                && alarm.contains("Run 'brsync sync' on that device"), "\(alarm)")
        #expect(try failures().first?["alarm"] == .bool(true))
        // The first pull after which it passes: gone.
        try replica.noteLedgerChecks(["0123456789abcdef": nil], now: now)
        #expect(try failures().isEmpty)
        #expect(!(try world.run(desktop, ["status"]).stdout.contains("withheld:")))
    }

    /// A withdrawal held (a device withdrew writes its earlier id made that
    /// every holder lost) is named in `status`, text and JSON: it ends
    /// checks, so who wrote it is shown.
    @Test func statusNamesADeviceThatWithdrewWrites() throws {
        let world = try CLIWorld()
        let desktop = try world.replica("desktop")
        let replica = try Replica.open(home: desktop)
        #expect(!(try world.run(desktop, ["status"]).stdout.contains("withdrawn:")))
        let stamp = HLCTimestamp(wallMillis: replica.currentMillis, counter: 0, device: "0123456789abcdef")
        try replica.keepOwnLedgerRecords([
            ChangeRecord(
                sequence: 0, collection: .ledger, key: "0123456789abcdef/withdrawn/0",
                state: RecordState(
                    fields: [Wire.ledgerField: StampedValue(.string("Vw"), stamp: stamp)],
                    versions: VersionVector(["0123456789abcdef": 1])))
        ])
        let text = try world.run(desktop, ["status"]).stdout
        #expect(
            text.contains("withdrawn: device 0123456789abcdef withdrew writes an earlier id of its own made")
                && text.contains("every holder lost"), "\(text)")
        let listed = try Self.statusList(world, desktop, "withdrawnBy")
        #expect(listed.count == 1 && listed.first?["device"] == .string("0123456789abcdef"))
        #expect(listed.first?["withdrawals"] == .int(1))
    }

    /// `brsync device forget DEVICE` (an id, its start, or a name) stops
    /// checking a device whose check fails here (a lost laptop): its failure
    /// ends and `status` lists it as unchecked instead. A start of several
    /// devices' ids, a device whose check passes, this device's own id, or
    /// no device changes nothing.
    @Test func deviceForgetEndsADevicesFailure() throws {
        let world = try CLIWorld()
        let desktop = try world.replica("desktop")
        let replica = try Replica.open(home: desktop)
        let now = replica.currentMillis
        // Two devices' ledger heads and one's name, as a pull would have stored them.
        func stamp(_ device: String) -> HLCTimestamp { HLCTimestamp(wallMillis: now, counter: 0, device: device) }
        var pulled = ["0123456789abcdef", "0123aaaaaaaaaaaa"].enumerated().map { index, device in
            ChangeRecord(
                sequence: Int64(index + 1), collection: .ledger, key: "\(device)/head",
                state: RecordState(
                    fields: [Wire.ledgerField: StampedValue(.string("AA"), stamp: stamp(device))],
                    versions: VersionVector([device: 1])))
        }
        pulled.append(
            ChangeRecord(
                sequence: 3, collection: .settings, key: "device_name/0123456789abcdef",
                state: RecordState(
                    fields: ["value": StampedValue(.string("old laptop"), stamp: stamp("0123456789abcdef"))],
                    versions: VersionVector(["0123456789abcdef": 2]))))
        _ = try replica.applyPulled(pulled, cursor: 3, epoch: "e1")
        let what = "its deletion of rules 'two.example' is missing here"
        try replica.noteLedgerChecks(["0123456789abcdef": what], now: now - Replica.ledgerAlarmAfterMillis)
        try replica.noteLedgerChecks(["0123456789abcdef": what], now: now)
        #expect(try world.run(desktop, ["status"]).stdout.contains("withheld:"))

        for (arguments, message) in [
            (["0123"], "'0123' names 2 devices"),
            (["0123aaaa"], "the check of device 0123aaaaaaaaaaaa does not fail here: there is nothing to forget"),
            ([replica.deviceID], "is this device"),
            (["someone else"], "no device 'someone else' whose ledger is held here"),
        ] {
            let refused = try world.run(desktop, ["device", "forget"] + arguments)
            #expect(refused.status == 2 && refused.stderr.contains(message), "\(arguments): \(refused)")
        }
        #expect(try replica.ledgerFailures().count == 1, "nothing changed")

        let forgot = try world.run(desktop, ["device", "forget", "old laptop"])
        #expect(
            forgot.status == 0 && forgot.stdout.contains("no longer checking old laptop (0123456789abcdef)")
                && forgot.stdout.contains("its failure ended (\(what))")
                && forgot.stdout.contains("Checks start again as soon as a newer write or ledger record"), "\(forgot)")
        #expect(try replica.ledgerFailures().isEmpty)
        #expect(try replica.forgottenDevices().keys.sorted() == ["0123456789abcdef"])
        let status = try world.run(desktop, ["status"]).stdout
        #expect(
            !status.contains("withheld:") && status.contains("unchecked: old laptop (forgotten ")
                && status.contains("its failure then: \(what)"), "\(status)")
        let listed = try Self.statusList(world, desktop, "forgottenDevices")
        guard let first = listed.first else {
            Issue.record("no forgottenDevices")
            return
        }
        #expect(first["device"] == .string("0123456789abcdef") && first["what"] == .string(what))
    }

    /// A key change ends this machine's failing checks of other devices'
    /// ledgers (their ledgers go with the old key): `brsync status` keeps
    /// them, as `ended:` and `ledgerChecksEnded`.
    @Test func statusKeepsTheChecksAKeyChangeEnded() throws {
        let world = try CLIWorld()
        let desktop = try world.replica("desktop")
        let replica = try Replica.open(home: desktop)
        let what = "its deletion of rules 'two.example' is missing here"
        try replica.noteLedgerChecks(["0123456789abcdef": what], now: replica.currentMillis)
        try replica.beginEncryptedSync(keyID: "00112233445566ff")
        #expect(try replica.ledgerFailures().isEmpty)
        let status = try world.run(desktop, ["status"]).stdout
        #expect(
            status.contains("ended:     a key change (")
                && status.contains("ended the check of device 0123456789abcdef")
                && status.contains(what), "\(status)")
        let ended = try Self.statusList(world, desktop, "ledgerChecksEnded")
        guard let first = ended.first else {
            Issue.record("no ledgerChecksEnded")
            return
        }
        #expect(ended.count == 1 && first["device"] == .string("0123456789abcdef") && first["what"] == .string(what))
    }

    /// `brsync status` shows this machine's own ledger when the server did
    /// not take it: counted at first, a warning once it stands three syncs
    /// over 15 minutes, gone once a sync's ledger is taken.
    @Test func statusShowsThisMachinesLedgerTheServerDidNotTake() throws {
        let world = try CLIWorld()
        let desktop = try world.replica("desktop")
        let replica = try Replica.open(home: desktop)
        let now = replica.currentMillis
        try replica.noteOwnLedgerNotTaken("ledgers are not taken here", now: now - 20 * 60_000)
        let counted = try world.run(desktop, ["status"]).stdout
        #expect(
            counted.contains("ledger:    the server did not take this machine's ledger at the last 1 sync(s)")
                && counted.contains("Last: ledgers are not taken here"), "\(counted)")
        func ownJSON() throws -> JSONValue? {
            let json = try JSONValue.parse(try world.run(desktop, ["status", "--json"]).stdout)
            guard case .object(let members) = json else { return nil }
            return members["ownLedgerNotTaken"]
        }
        func own() throws -> [String: JSONValue]? {
            guard case .object(let members)? = try ownJSON() else { return nil }
            return members
        }
        #expect(try own()?["warning"] == .bool(false) && own()?["syncs"] == .int(1))
        for _ in 0..<2 { try replica.noteOwnLedgerNotTaken("ledgers are not taken here", now: now) }
        let warning = try world.run(desktop, ["status"]).stdout
        #expect(
            warning.contains("ledger:    the server does not take this machine's ledger (3 syncs in a row since")
                && warning.contains("use another server"), "\(warning)")
        #expect(try own()?["warning"] == .bool(true))
        try replica.noteOwnLedgerTaken()
        #expect(try ownJSON() == .null)
        #expect(!(try world.run(desktop, ["status"]).stdout.contains("ledger:")))
    }

    @Test func conflictsNameBothDevices() throws {
        let world = try CLIWorld()
        let laptop = try world.replica("laptop")
        let desktop = try world.replica("desktop")
        for home in [laptop, desktop] {
            try world.mustRun(home, ["browsers", "add", "firefox", "--exec", "firefox %u"])
        }
        try world.mustRun(laptop, ["browsers", "add", "chrome", "--exec", "chrome %u"])
        try world.mustRun(desktop, ["browsers", "add", "chrome", "--exec", "chrome %u"])
        try world.mustRun(laptop, ["rules", "add", "github.com", "firefox", "--priority", "1"])
        usleep(20_000)
        try world.mustRun(desktop, ["rules", "add", "github.com", "chrome", "--priority", "1"])
        for home in [laptop, desktop, laptop] { try world.mustRun(home, ["sync"]) }
        let conflicts = try world.run(desktop, ["log", "--conflicts"]).stdout
        #expect(
            conflicts.contains(#"browser: "firefox" (laptop, "#)
                && conflicts.contains(#"lost to "chrome" (desktop (this device), "#), "\(conflicts)")
        let json = try world.run(desktop, ["log", "--conflicts", "--json"]).stdout
        #expect(json.contains(#""deviceName":"laptop""#), "\(json)")
    }

    /// Two machines with one name are told apart by the start of their ids.
    @Test func aSharedNameIsToldApart() throws {
        let world = try CLIWorld()
        let first = try world.replica("one")
        let second = try world.replica("two")
        try world.mustRun(second, ["device", "name", "one"])
        for home in [first, second, first] { try world.mustRun(home, ["sync"]) }
        let devices = try world.run(first, ["device"]).stdout
        #expect(devices.contains(#/other:       one \[[0-9a-f]{8}\] \(/#), "\(devices)")
    }

    @Test func badNamesAreRefusedAndChangeNothing() throws {
        let world = try CLIWorld()
        let laptop = try world.replica("laptop")
        let before = try world.snapshot(laptop)
        for bad in ["", "   ", String(repeating: "x", count: 65), "evil\u{1B}[2Jname", "rtl\u{202E}name"] {
            let result = try world.run(laptop, ["device", "name", bad])
            #expect(result.status == 2 && result.stderr.contains("device name"), "\(bad.debugDescription): \(result)")
        }
        let badInit = try ProcessRunner.run(
            world.brsync, ["init", "--device-name", "a\u{7}b"],
            environment: ["BRSYNC_HOME": world.directory.file("other")])
        #expect(
            badInit.status == 2
                && !FileManager.default.fileExists(atPath: world.directory.file("other/replica.sqlite")), "\(badInit)")
        #expect(try world.snapshot(laptop) == before)
    }
}
