import Foundation
import JSON
import Model
import Storage
import SyncClient
import SyncCore
import TestSupport
import Testing

/// One-step pairing: `brsyncd device add --url --ca [--qr]` prints
/// a join code, `brsync join` takes it.
extension EncryptionTests {
    /// The modules a terminal QR code draws (light is false), read back from its half blocks.
    static func modules(ofTerminalQR text: String) -> [[Bool]] {
        let lines = text.split(separator: "\n").filter { $0.contains("\u{1B}[97;40m") }.map { line in
            line.replacingOccurrences(of: "\u{1B}[97;40m", with: "").replacingOccurrences(of: "\u{1B}[0m", with: "")
        }
        var rows: [[Bool]] = []
        for line in lines {
            rows.append(line.map { !"█▀".contains($0) })
            rows.append(line.map { !"█▄".contains($0) })
        }
        return rows
    }

    /// What zbarimg reads from the QR code (drawn as a PBM image, 6 pixels a module).
    static func decode(_ modules: [[Bool]], in directory: TemporaryDirectory) throws -> String {
        let scale = 6
        var image = "P1\n\(modules[0].count * scale) \(modules.count * scale)\n"
        for row in modules {
            let line = row.flatMap { Array(repeating: $0 ? "1" : "0", count: scale) }.joined(separator: " ") + "\n"
            image += String(repeating: line, count: scale)
        }
        let file = directory.file("qr.pbm")
        try image.write(toFile: file, atomically: true, encoding: .utf8)
        let result = try ProcessRunner.run("/usr/bin/zbarimg", ["-q", "--raw", file])
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func aMachineJoinsAnEncryptedAccountWithOneCode() throws {
        let world = try CLIWorld()
        let laptop = try world.replica("laptop")
        try world.firefoxRule(laptop, "joined.example")
        let code = try #require(Self.recoveryCode(try world.run(laptop, ["key", "init"]).stdout))

        // The code: the last line, the URL, a token and the CA's fingerprint (as openssl computes it).
        let output = try world.joinOutput("phone", qr: true)
        let join = try #require(output.split(separator: "\n").last.map(String.init))
        #expect(join.hasPrefix("brsync://join?server=\(world.url)&token=brj_"), "\(output)")
        #expect(
            output.contains("it works once, within 1 day(s)") && !output.contains("brs_"),
            "no device token is shown: \(output)")
        let openssl = try ProcessRunner.run(
            "/usr/bin/openssl", ["x509", "-in", world.directory.file("ca.pem"), "-noout", "-fingerprint", "-sha256"])
        let fingerprint = openssl.stdout.split(separator: "=").last.map {
            $0.replacingOccurrences(of: ":", with: "").lowercased()
        }?
        .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(join.hasSuffix("&ca=\(try #require(fingerprint))"), "\(join) vs \(openssl.stdout)")
        // The QR code a phone scans holds exactly that line.
        let decoded = try Self.decode(Self.modules(ofTerminalQR: output), in: world.directory)
        #expect(decoded == join, "zbarimg read \(decoded)")

        // A code whose fingerprint is not the server's CA: a man in the middle. Nothing is saved.
        let impostor = world.directory.file("impostor")
        let wrongCA = String(join.dropLast(64)) + String(repeating: "0", count: 64)
        let refused = try ProcessRunner.run(
            world.brsync, ["join"], environment: ["BRSYNC_HOME": impostor], stdin: wrongCA + "\n" + code + "\n")
        #expect(refused.status == 4 && refused.stderr.contains("man in the middle"), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: impostor), "the folder the failed join made is gone")

        // A recovery code of another account: refused, nothing saved.
        let wrongKey = world.directory.file("wrong-key")
        let wrong = try ProcessRunner.run(
            world.brsync, ["join"], environment: ["BRSYNC_HOME": wrongKey],
            stdin: join + "\n" + AccountKey.generate().recoveryCode + "\n")
        #expect(wrong.status == 2 && wrong.stderr.contains("does not open"), "\(wrong)")
        #expect(
            !FileManager.default.fileExists(atPath: wrongKey + "/token")
                && !FileManager.default.fileExists(atPath: wrongKey + "/ca.pem"))

        // Both codes on standard input: the phone joins, pinned, keyed and synced.
        let phone = world.directory.file("phone")
        let joined = try ProcessRunner.run(
            world.brsync, ["join"], environment: ["BRSYNC_HOME": phone], stdin: join + "\n" + code + "\n")
        #expect(joined.status == 0 && joined.stderr.contains("end-to-end encrypted"), "\(joined)")
        #expect(!joined.stderr.contains("warning"), "a code on standard input is not warned about: \(joined)")
        #expect(
            FileManager.default.fileExists(atPath: phone + "/ca.pem")
                && FileManager.default.fileExists(atPath: phone + "/account-key"))
        #expect(try world.run(phone, ["rules", "list"]).stdout.contains("joined.example"))
        #expect(try world.run(phone, ["remote", "show"]).stdout.contains(phone + "/ca.pem"))
        // Joining again is refused: it already syncs.
        let again = try ProcessRunner.run(
            world.brsync, ["join"], environment: ["BRSYNC_HOME": phone], stdin: join + "\n")
        #expect(again.status == 2 && again.stderr.contains("syncs with"), "\(again)")
        // The code worked once: another machine with it is refused, and nothing is saved there.
        let thief = world.directory.file("thief")
        let reused = try ProcessRunner.run(
            world.brsync, ["join"], environment: ["BRSYNC_HOME": thief], stdin: join + "\n" + code + "\n")
        #expect(reused.status == 5 && reused.stderr.contains("join code was used already"), "\(reused)")
        // What to do with a join code, not with a replaced token (this machine has none).
        #expect(
            reused.stderr.contains("operator for a new one") && !reused.stderr.contains("mistyped")
                && !reused.stderr.contains("--replace"), "\(reused)")
        #expect(!FileManager.default.fileExists(atPath: thief))
        // A mistyped code (another secret of the right form): the same advice, nothing saved.
        let mistyped = try #require(
            join.firstRange(of: "brj_").map {
                join[..<$0.lowerBound] + "brj_" + String(repeating: "A", count: 43)
                    + join[join.index($0.lowerBound, offsetBy: 47)...]
            })
        let typo = world.directory.file("typo")
        let refusedTypo = try ProcessRunner.run(
            world.brsync, ["join"], environment: ["BRSYNC_HOME": typo], stdin: String(mistyped) + "\n")
        #expect(
            refusedTypo.status == 5 && refusedTypo.stderr.contains("the server refused this join code")
                && !refusedTypo.stderr.contains("--replace"), "\(refusedTypo)")
        #expect(!FileManager.default.fileExists(atPath: typo))
        #expect(
            !FileManager.default.fileExists(atPath: phone + "/.join-token"), "the joining token is put away once saved")
        // Its edits travel back sealed.
        try world.mustRun(phone, ["rules", "add", "from-phone.example", "firefox"])
        try world.mustRun(phone, ["sync"])
        try world.mustRun(laptop, ["sync"])
        #expect(try world.run(laptop, ["rules", "list"]).stdout.contains("from-phone.example"))
    }

    /// A machine named before it joins keeps its name: `brsync device` says
    /// what the server calls it, and `brsyncd device list` shows the replica
    /// id `brsync device` prints, so the two lists match.
    @Test func theServersNameForAMachineIsShownOnBothSides() throws {
        let world = try CLIWorld()
        let desk = world.directory.file("desk")
        let made = try ProcessRunner.run(
            world.brsync, ["init", "--device-name", "desk"], environment: ["BRSYNC_HOME": desk])
        #expect(made.status == 0, "\(made)")
        let join = try #require(try world.joinOutput("office").split(separator: "\n").last.map(String.init))
        let joined = try ProcessRunner.run(
            world.brsync, ["join"], environment: ["BRSYNC_HOME": desk], stdin: join + "\n")
        #expect(joined.status == 0, "\(joined)")
        let shown = try world.run(desk, ["device"]).stdout
        guard case .object(let json) = try JSONValue.parse(try world.run(desk, ["device", "--json"]).stdout) else {
            Issue.record("brsync device --json is not an object")
            return
        }
        let id = try #require(json["device"]?.stringValue)
        #expect(json["serverName"] == .string("office") && json["name"] == .string("desk"), "\(json)")
        #expect(shown.contains("this device: desk (\(id)") && shown.contains("the server calls it office"), "\(shown)")
        try world.mustRun(desk, ["sync"])
        let listed = try ProcessRunner.run(
            world.brsyncd, ["device", "list", "alice"] + world.storeArguments, environment: world.storeEnvironment)
        #expect(listed.stdout.contains("office\tactive\treplica \(id)\t"), "\(listed)")
        // Renamed here: still matched by the id; the server's name is the token's.
        try world.mustRun(desk, ["device", "name", "work laptop"])
        #expect(try world.run(desk, ["device"]).stdout.contains("the server calls it office"))
    }

    @Test func joinCodesAndTheirOptionsAreChecked() throws {
        let world = try CLIWorld()
        // A readable account needs no recovery code; the code may be an argument.
        let desktop = try world.replica("desktop")
        try world.mustRun(desktop, ["browsers", "add", "chrome", "--exec", "true %u"])
        try world.mustRun(desktop, ["rules", "add", "plain.example", "chrome"])
        try world.mustRun(desktop, ["sync"])
        let join = try #require(try world.joinOutput("tablet").split(separator: "\n").last.map(String.init))
        #expect(join.contains("&e2e=0&"), "the code says the account is readable: \(join)")
        // A recovery code given for an account the server says is readable
        // (a lying or set-back server): refused, nothing saved or sent.
        let keyFile = world.directory.file("recovery.txt")
        try (AccountKey.generate().recoveryCode + "\n").write(toFile: keyFile, atomically: false, encoding: .utf8)
        let doubting = world.directory.file("doubting")
        let refused = try ProcessRunner.run(
            world.brsync, ["join", "--recovery-file", keyFile], environment: ["BRSYNC_HOME": doubting],
            stdin: join + "\n")
        #expect(
            refused.status == 5 && refused.stderr.contains("says this account is not end-to-end encrypted"),
            "\(refused)")
        #expect(
            !FileManager.default.fileExists(atPath: doubting + "/token")
                && !FileManager.default.fileExists(atPath: doubting + "/replica.sqlite"))
        #expect(
            try world.run(desktop, ["sync", "--json"]).stdout.contains("\"pulled\":0"), "the server got nothing from it"
        )
        let tablet = world.directory.file("tablet")
        let joined = try world.run(tablet, ["join", join])
        #expect(joined.status == 0 && !joined.stderr.contains("encrypted"), "\(joined)")
        #expect(joined.stderr.contains("warning: the join code was given on the command line"), "\(joined)")
        #expect(try world.run(tablet, ["rules", "list"]).stdout.contains("plain.example"))
        // Bad codes: clear errors, nothing made.
        for (text, message) in [
            ("https://example.org", "not a join code"),
            ("brsync://join?server=https://a&token=x", "needs server, token and ca"),
            ("brsync://join?server=https://a&token=x&ca=12", "64 hex digits"),
            ("brsync://join?server=http://a&token=x&ca=" + String(repeating: "a", count: 64), "https://"),
            ("brsync://join?server=https://a&token=x&token=y&ca=" + String(repeating: "a", count: 64), "twice"),
            (
                "brsync://join?server=https://a&token=x&e2e=yes&ca=" + String(repeating: "a", count: 64),
                "e2e of a join code"
            ),
        ] {
            let home = world.directory.file("bad-\(abs(text.hashValue))")
            let result = try ProcessRunner.run(
                world.brsync, ["join"], environment: ["BRSYNC_HOME": home], stdin: text + "\n")
            #expect(result.status == 2 && result.stderr.contains(message), "\(text): \(result)")
            #expect(!FileManager.default.fileExists(atPath: home + "/replica.sqlite"), "\(text)")
        }
        // brsyncd refuses half a join code before adding the device.
        for arguments in [
            ["--qr"], ["--url", world.url], ["--url", "http://x", "--ca", world.directory.file("ca.pem")],
            ["--url", world.url, "--ca", world.directory.file("missing.pem")],
        ] {
            let result = try ProcessRunner.run(
                world.brsyncd, ["device", "add", "alice", "half"] + arguments + world.storeArguments,
                environment: world.storeEnvironment)
            #expect(
                result.status != 0
                    && (result.stderr.contains("--url") || result.stderr.contains("--ca")
                        || result.stderr.contains("join code")),
                "\(arguments): \(result)")
        }
        let listed = try ProcessRunner.run(
            world.brsyncd, ["device", "list", "alice"] + world.storeArguments, environment: world.storeEnvironment)
        #expect(!listed.stdout.contains("half"), "\(listed)")
        // --expires: a duration of a minute to 30 days, for a join code only.
        for (arguments, message) in [
            (["--expires", "10x"], "not a duration"), (["--expires", "30s"], "at least a minute"),
            (["--expires", "31d"], "at most 30 days"), (["--expires=-5m"], "not a duration"),
        ] {
            let result = try ProcessRunner.run(
                world.brsyncd,
                ["device", "add", "alice", "timed", "--url", world.url, "--ca", world.directory.file("ca.pem")]
                    + arguments + world.storeArguments, environment: world.storeEnvironment)
            #expect(result.status == 2 && result.stderr.contains(message), "\(arguments): \(result)")
        }
        let noCode = try ProcessRunner.run(
            world.brsyncd, ["device", "add", "alice", "timed", "--expires", "1h"] + world.storeArguments,
            environment: world.storeEnvironment)
        #expect(noCode.status == 2 && noCode.stderr.contains("join code needs"), "\(noCode)")
        let timed = try ProcessRunner.run(
            world.brsyncd,
            [
                "device", "add", "alice", "timed", "--url", world.url, "--ca", world.directory.file("ca.pem"),
                "--expires", "2h",
            ] + world.storeArguments, environment: world.storeEnvironment)
        #expect(timed.status == 0 && timed.stdout.contains("within 2 hour(s)"), "\(timed)")
        let relisted = try ProcessRunner.run(
            world.brsyncd, ["device", "list", "alice"] + world.storeArguments, environment: world.storeEnvironment)
        #expect(!relisted.stdout.contains("half") && relisted.stdout.contains("timed"), "\(relisted)")
        // A code not used yet is said so, and so is one that expired unused (nothing can sync as that device).
        func line(_ listing: ProcessResult, _ name: String) -> String {
            String(listing.stdout.split(separator: "\n").first { $0.hasPrefix(name + "\t") } ?? "")
        }
        #expect(line(relisted, "timed").contains("\twaiting to join (its code works until "), "\(relisted)")
        #expect(line(relisted, "tablet").contains("\tactive\t"), "\(relisted)")
        if world.db.hasSuffix(".sqlite"), FileManager.default.fileExists(atPath: world.db) {
            let database = try Database(path: world.db)
            try database.run(
                "UPDATE enrollments SET expires_at = 1000 WHERE device_id = (SELECT id FROM devices WHERE name = 'timed')"
            )
            let expired = try ProcessRunner.run(
                world.brsyncd, ["device", "list", "alice"] + world.storeArguments, environment: world.storeEnvironment)
            #expect(
                line(expired, "timed").contains("\tnever joined (its code expired 1970-01-01T00:00:01"), "\(expired)")
        }
        // A new code for the tablet: its machine's token stops working, the new code joins a new home.
        let renewed = try ProcessRunner.run(
            world.brsyncd,
            ["device", "token", "alice", "tablet", "--url", world.url, "--ca", world.directory.file("ca.pem")]
                + world.storeArguments, environment: world.storeEnvironment)
        #expect(renewed.status == 0 && renewed.stdout.contains("its old token no longer works"), "\(renewed)")
        // The stale machine is told what to do, and keeps an edit made meanwhile.
        try world.mustRun(tablet, ["rules", "add", "made-offline.example", "chrome"])
        let stale = try world.run(tablet, ["sync"])
        #expect(stale.status == 5 && stale.stderr.contains("brsync join --replace"), "\(stale)")
        let newCode = try #require(renewed.stdout.split(separator: "\n").last.map(String.init))
        // Joining where a remote is set is refused unless asked to replace it.
        let notReplaced = try ProcessRunner.run(
            world.brsync, ["join"], environment: ["BRSYNC_HOME": tablet], stdin: newCode + "\n")
        #expect(notReplaced.status == 2 && notReplaced.stderr.contains("--replace"), "\(notReplaced)")
        let rejoined = try ProcessRunner.run(
            world.brsync, ["join", "--replace"], environment: ["BRSYNC_HOME": tablet], stdin: newCode + "\n")
        #expect(rejoined.status == 0, "\(rejoined)")
        #expect(
            rejoined.stderr.contains("still holds a token there") && rejoined.stderr.contains("brsyncd device revoke"),
            "\(rejoined)")
        let tablet2 = world.directory.file("tablet2")
        let other = try world.token("tablet2")
        try world.mustRun(tablet2, ["init"])
        try world.mustRun(
            tablet2, ["remote", "set", world.url, "--token", other, "--ca", world.directory.file("ca.pem")])
        try world.mustRun(tablet2, ["sync"])
        let rules = try world.run(tablet2, ["rules", "list"]).stdout
        #expect(
            rules.contains("plain.example") && rules.contains("made-offline.example"),
            "the offline edit went up: \(rules)")
        // A new token for the same server keeps the pinned CA.
        let kept = try world.run(tablet2, ["remote", "set", world.url, "--token", try world.token("tablet3")])
        #expect(kept.status == 0 && kept.stdout.contains("the CA pinned before"), "\(kept)")
        try world.mustRun(tablet2, ["sync"])
    }
}
