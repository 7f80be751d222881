import Foundation
import Replica
import SyncClient
import TestSupport
import Testing

/// The operator's reset of an account's end-to-end encryption, with the real
/// binaries: every machine holding the key stops with what to do, `key init`
/// encrypts the account again with a new key, `key forget` syncs readable,
/// and no rule is lost.
@Suite(.serialized) struct EncryptionResetTests {
    func brsyncd(_ world: CLIWorld, _ arguments: [String]) throws -> ProcessResult {
        try ProcessRunner.run(world.brsyncd, arguments + world.storeArguments, environment: world.storeEnvironment)
    }

    /// `brsync key rotate`, and `key init` after a reset, while this
    /// machine's check of another device's ledger fails: refused without a
    /// terminal (exit 2, saying why and `--yes`), nothing changed; with
    /// `--yes` the key changes, and the output names the check it ended.
    @Test func keyChangesWaitWhileACheckFails() throws {
        let world = try CLIWorld()
        let laptop = try world.replica("laptop")
        try world.firefoxRule(laptop, "laptop-site.example")
        let code = try #require(EncryptionTests.recoveryCode(try world.run(laptop, ["key", "init"]).stdout))
        let replica = try Replica.open(home: laptop)
        try replica.noteLedgerChecks(
            ["0123456789abcdef": "its deletion of rules 'two.example' is missing here"], now: replica.currentMillis)
        let refused = try world.run(laptop, ["key", "rotate"])
        #expect(
            refused.status == 2 && refused.stderr.contains("checks of 1 other device(s) are failing")
                && refused.stderr.contains("two.example") && refused.stderr.contains("--yes"), "\(refused)")
        #expect(try world.run(laptop, ["key", "show"]).stdout.contains(code), "nothing changed")
        let rotated = try world.run(laptop, ["key", "rotate", "--yes"])
        let newCode = try #require(EncryptionTests.recoveryCode(rotated.stdout), "\(rotated)")
        #expect(rotated.status == 0 && newCode != code, "\(rotated)")

        // `key init` after the operator's reset waits the same way (a server
        // could claim a reset to have the checks ended).
        try replica.noteLedgerChecks(
            ["0123456789abcdef": "its deletion of rules 'three.example' is missing here"], now: replica.currentMillis)
        #expect(try brsyncd(world, ["account", "reset-encryption", "alice"]).status == 0)
        let waits = try world.run(laptop, ["key", "init"])
        #expect(
            waits.status == 2 && waits.stderr.contains("checks of 1 other device(s) are failing")
                && waits.stderr.contains("three.example"), "\(waits)")
        let again = try world.run(laptop, ["key", "init", "--yes"])
        #expect(again.status == 0 && again.stderr.contains("encrypted again"), "\(again)")
        #expect(
            again.stderr.contains("the key change ended this machine's check of device 0123456789abcdef"), "\(again)")
    }

    @Test func aResetAccountIsEncryptedAgainOrForgottenWithoutLosingARule() throws {
        let world = try CLIWorld()
        let (laptop, desktop) = (try world.replica("laptop"), try world.replica("desktop"))
        for (home, site) in [(laptop, "laptop-site.example"), (desktop, "desktop-site.example")] {
            try world.firefoxRule(home, site)
        }
        let initialised = try world.run(laptop, ["key", "init"])
        let code = try #require(EncryptionTests.recoveryCode(initialised.stdout), "\(initialised)")
        let added = try ProcessRunner.run(
            world.brsync, ["key", "add"], environment: ["BRSYNC_HOME": desktop], stdin: code + "\n")
        #expect(added.status == 0, "\(added)")
        // Forgetting a key the server still uses is refused.
        let early = try world.run(desktop, ["key", "forget"])
        #expect(early.status == 5 && early.stderr.contains("--force"), "\(early)")

        let reset = try brsyncd(world, ["account", "reset-encryption", "alice"])
        #expect(reset.status == 0 && reset.stdout.contains("reset the encryption of account alice"), "\(reset)")
        // Each machine with the key stops, and stays stopped, saying what to do.
        for home in [laptop, desktop, laptop] {
            let stopped = try world.run(home, ["sync"])
            #expect(
                stopped.status == 5 && stopped.stderr.contains("reset this account's end-to-end encryption")
                    && stopped.stderr.contains("brsync key init"), "\(stopped)")
        }
        // `key init` on the laptop: a new key, its records sealed on the server.
        let again = try world.run(laptop, ["key", "init"])
        let newCode = try #require(EncryptionTests.recoveryCode(again.stdout), "\(again)")
        #expect(again.status == 0 && newCode != code && again.stderr.contains("encrypted again"), "\(again)")
        // The desktop needs the new code; with it, it sends what it holds.
        let rotated = try world.run(desktop, ["sync"])
        #expect(rotated.status == 5 && rotated.stderr.contains("brsync key add"), "\(rotated)")
        let readded = try ProcessRunner.run(
            world.brsync, ["key", "add"], environment: ["BRSYNC_HOME": desktop], stdin: newCode + "\n")
        #expect(readded.status == 0, "\(readded)")
        try world.mustRun(laptop, ["sync"])
        for home in [laptop, desktop] {
            let rules = try world.run(home, ["rules", "list"]).stdout
            #expect(
                rules.contains("laptop-site.example") && rules.contains("desktop-site.example"), "\(home): \(rules)")
        }

        // Reset again; the desktop forgets its key instead and syncs readable.
        #expect(try brsyncd(world, ["account", "reset-encryption", "alice"]).status == 0)
        let forgot = try world.run(desktop, ["key", "forget"])
        #expect(forgot.status == 0 && forgot.stderr.contains("account-key.forgotten"), "\(forgot)")
        #expect(FileManager.default.fileExists(atPath: desktop + "/account-key.forgotten"))
        #expect(!FileManager.default.fileExists(atPath: desktop + "/account-key"))
        let fresh = try world.replica("fresh")
        try world.mustRun(fresh, ["sync"])
        let rules = try world.run(fresh, ["rules", "list"]).stdout
        #expect(rules.contains("laptop-site.example") && rules.contains("desktop-site.example"), "\(rules)")
        // The laptop, still holding a key, is still stopped (it never syncs readable on the server's word).
        #expect(try world.run(laptop, ["sync"]).status == 5)

        // The operator's command on an account that is not encrypted, and on none.
        let plain = try brsyncd(world, ["account", "reset-encryption", "alice"])
        #expect(plain.status == 0 && plain.stdout.contains("not end-to-end encrypted; nothing was changed"), "\(plain)")
        let missing = try brsyncd(world, ["account", "reset-encryption", "nobody"])
        #expect(missing.status != 0 && missing.stderr.contains("no account named 'nobody'"), "\(missing)")
    }
}

extension EncryptionResetTests {
    /// The sync timer runs with nobody at a terminal: a stop that waits for
    /// the user is also a desktop notification, once per stop.
    @Test func aStopThatWaitsForTheUserIsNotifiedOnce() throws {
        let world = try CLIWorld()
        let laptop = try world.replica("laptop")
        try world.mustRun(laptop, ["browsers", "add", "firefox", "--exec", "true %u"])
        #expect(try world.run(laptop, ["key", "init"]).status == 0)
        #expect(try brsyncd(world, ["account", "reset-encryption", "alice"]).status == 0)
        // A notify-send that writes down what it was asked to show.
        let bin = world.directory.file("bin")
        let shown = world.directory.file("shown")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        try writeScript(bin + "/notify-send", "#!/bin/sh\nprintf '%s\\n' \"$@\" >> \(shown)\n")
        let environment = ["BRSYNC_HOME": laptop, "PATH": bin + ":/usr/bin:/bin"]
        for _ in 0..<3 {
            let stopped = try ProcessRunner.run(
                world.brsync, ["sync", "--quiet", "--notify"], environment: environment)
            #expect(stopped.status == 5, "\(stopped)")
        }
        let text = (try? String(contentsOfFile: shown, encoding: .utf8)) ?? ""
        #expect(text.components(separatedBy: "brsync stopped syncing").count - 1 == 1, "\(text)")
        #expect(text.contains("reset this account's end-to-end encryption"), "\(text)")
        // Without --notify (a person at a terminal): nothing shown.
        try? FileManager.default.removeItem(atPath: shown)
        #expect(try ProcessRunner.run(world.brsync, ["sync", "--quiet"], environment: environment).status == 5)
        #expect(!FileManager.default.fileExists(atPath: shown))
    }
}
