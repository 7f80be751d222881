import Foundation
import Replica
import SyncClient
import SyncCore
import TestSupport
import Testing

/// The settings window's Sync page against a real brsyncd on loopback:
/// pairing a machine with a join code, syncing from the window, and what
/// a code that is none, one used already and one naming another CA say.
extension SettingsWindowTests {
    /// A machine with no replica yet joins from the window with a join code
    /// and syncs: a rule made on another machine decides its links; a rule
    /// made there later arrives with "Sync now". Bad codes are said in the
    /// window as `brsync join` says them, and change nothing.
    @Test func aMachineJoinsAndSyncsFromTheWindow() throws {
        guard Self.ready() else { return }
        let world = try CLIWorld(.sqlite)
        let laptop = try world.replica("laptop")
        try world.firefoxRule(laptop, "first.example")
        try world.mustRun(laptop, ["sync"])
        let code = try #require(try world.joinOutput("desk").split(separator: "\n").last.map(String.init))
        // The same code with another CA's fingerprint: a man in the middle.
        let impostor = String(code.dropLast(64)) + String(repeating: "0", count: 64)
        let desk = world.directory.file("desk")
        let run = try Self.drive(
            home: desk,
            [
                "key:ctrl+6", "find:label:This machine does not sync yet",
                "text:Join code=not a code", "press:Join", "find:label:Status: That is not a join code",
                "text:Join code=\(impostor)", "press:Join", "find:label:man in the middle",
                "text:Join code=\(code)", "press:Join", "find:label:Status: Joined \(world.url)",
                "find:label:This machine syncs with \(world.url)", "find:label:ca.pem). sync: pushed",
                "find:label:Its certificate authority is pinned",
                "run:\(world.brsync) --home '\(laptop)' rules add second.example firefox",
                "run:\(world.brsync) --home '\(laptop)' sync", "press:Sync now",
                "find:label:Status: sync: pushed 0 change(s), pulled 1 record(s), 1 changed here",
                "press:Check the server",
                "find:label:answered; its certificate and this machine's token were accepted",
            ])
        #expect(run.exitStatus == "0", "\(run.result)")
        let rules = try world.run(desk, ["rules", "list"]).stdout
        #expect(rules.contains("first.example") && rules.contains("second.example"), "\(rules)")
        // The code works once: a second machine given it is refused, in the window too.
        let other = world.directory.file("other")
        let again = try Self.drive(
            home: other,
            ["key:ctrl+6", "text:Join code=\(code)", "press:Join", "find:label:Status: the server refused"])
        #expect(again.exitStatus == "0", "\(again.result)")
        #expect(try world.run(other, ["remote", "show"]).stdout.contains("no remote"), "nothing was kept")
    }

    /// An end-to-end encrypted account: a join code alone, a recovery code
    /// with a typo (its checksum), and another account's code are each said
    /// as `brsync join` says them, nothing kept; the right one joins, sealed.
    @Test func joiningAnEncryptedAccountFromTheWindowNeedsItsRecoveryCode() throws {
        guard Self.ready() else { return }
        let world = try CLIWorld(.sqlite)
        let laptop = try world.replica("laptop")
        try world.firefoxRule(laptop, "sealed.example")
        let recovery = try #require(EncryptionTests.recoveryCode(try world.run(laptop, ["key", "init"]).stdout))
        let code = try #require(try world.joinOutput("desk").split(separator: "\n").last.map(String.init))
        // One character changed: the checksum says so before anything is asked of the server.
        let last = recovery.last == "a" ? "b" : "a"
        let typo = String(recovery.dropLast()) + last
        let desk = world.directory.file("desk")
        let run = try Self.drive(
            home: desk,
            [
                "key:ctrl+6", "text:Join code=\(code)", "press:Join",
                "find:label:this account is end-to-end encrypted: type its recovery code",
                "text:Recovery code=\(typo)", "press:Join", "find:label:Status: not a recovery code",
                "text:Recovery code=\(AccountKey.generate().recoveryCode)", "press:Join", "find:label:does not open",
                "text:Recovery code=\(recovery)", "press:Join", "find:label:, end-to-end encrypted. sync: pushed",
            ])
        #expect(run.exitStatus == "0", "\(run.result)")
        #expect(try world.run(desk, ["rules", "list"]).stdout.contains("sealed.example"))
        #expect(try world.run(desk, ["key", "show"]).status == 0, "the key was kept")
    }
}

extension SettingsWindowTests {
    /// The Devices list says what `brsync status` says of each device's
    /// checks: one not passing yet, and one that withdrew writes an
    /// earlier id of its own lost everywhere.
    @Test func theDevicesListSaysWhatTheChecksSay() throws {
        guard Self.ready() else { return }
        let world = try CLIWorld(.sqlite)
        let desk = try world.replica("desk")
        let replica = try Replica.open(home: desk)
        let now = replica.currentMillis
        let (laptop, phone) = ("0123456789abcdef", "0123aaaaaaaaaaaa")
        func stamp(_ device: String) -> HLCTimestamp { HLCTimestamp(wallMillis: now, counter: 0, device: device) }
        let pulled = [(laptop, "old laptop"), (phone, "phone")].enumerated().flatMap { index, device in
            [
                ChangeRecord(
                    sequence: Int64(2 * index + 1), collection: .ledger, key: "\(device.0)/head",
                    state: RecordState(
                        fields: [Wire.ledgerField: StampedValue(.string("AA"), stamp: stamp(device.0))],
                        versions: VersionVector([device.0: 1]))),
                ChangeRecord(
                    sequence: Int64(2 * index + 2), collection: .settings, key: "device_name/\(device.0)",
                    state: RecordState(
                        fields: ["value": StampedValue(.string(device.1), stamp: stamp(device.0))],
                        versions: VersionVector([device.0: 2]))),
            ]
        }
        _ = try replica.applyPulled(pulled, cursor: 4, epoch: "e1")
        try replica.keepOwnLedgerRecords([
            ChangeRecord(
                sequence: 0, collection: .ledger, key: "\(laptop)/withdrawn/0",
                state: RecordState(
                    fields: [Wire.ledgerField: StampedValue(.string("Vw"), stamp: stamp(laptop))],
                    versions: VersionVector([laptop: 3])))
        ])
        try replica.noteLedgerChecks([phone: "its deletion of rules 'two.example' is missing here"], now: now)
        let run = try Self.drive(
            home: desk,
            [
                "key:ctrl+6", "find:label:old laptop (\(laptop))",
                "find:label:It withdrew writes an earlier id of its own made that every holder lost",
                "find:label:phone (\(phone))", "find:label:Its ledger names writes not here yet",
            ])
        #expect(run.exitStatus == "0", "\(run.result)")
    }
}
