import Foundation
import JSON
import Model
import Storage
import SyncClient
import SyncCore
import Testing
import TestSupport

/// End-to-end encryption with the real binaries: `brsync key
/// init` on one machine, `brsync key add` on another, and a server that
/// holds every rule and can read none.
@Suite(.serialized) struct EncryptionTests {
    /// Marks every readable thing this test writes; the server must hold none.
    static let marker = "qzx\(UInt32.random(in: 100_000...999_999))"

    /// Every file under `path` (a file or a folder) holding `needle`.
    static func files(under path: String, holding needle: String) -> [String] {
        let manager = FileManager.default
        var isFolder: ObjCBool = false
        guard manager.fileExists(atPath: path, isDirectory: &isFolder) else { return [] }
        let files = isFolder.boolValue ? (manager.enumerator(atPath: path)?.compactMap { $0 as? String }.map { "\(path)/\($0)" } ?? []) : [path]
        return files.filter { file in
            guard let data = manager.contents(atPath: file) else { return false }
            return data.range(of: Data(needle.utf8)) != nil
        }
    }

    static func recoveryCode(_ output: String) -> String? {
        output.split(separator: "\n").map(String.init).first { $0.count == 65 && $0.filter { $0 == "-" }.count == 10 }
    }

    @Test(arguments: StoreKind.allCases) func theServerMergesRulesItCannotRead(_ store: StoreKind) throws {
        // Written before the switch (readable on the server until then) and after it (never readable there).
        let before = "qzb\(UInt32.random(in: 100_000...999_999))"
        let marker = Self.marker
        let world = try CLIWorld(store)
        let laptop = try world.replica("laptop")
        let desktop = try world.replica("desktop")
        try world.mustRun(laptop, ["browsers", "add", "\(before)browser", "--exec", "true %u"])
        try world.mustRun(laptop, ["browsers", "add", "chrome", "--exec", "true %u"])
        try world.mustRun(laptop, ["rules", "add", "bank-\(before).example", "\(before)browser"])
        try world.mustRun(laptop, ["rules", "add", "github.com", "chrome"])
        try world.mustRun(laptop, ["browsers", "default", "\(before)browser"])
        // The account starts readable; both machines sync it.
        try world.mustRun(laptop, ["sync"])
        try world.mustRun(desktop, ["sync"])
        for browser in ["\(before)browser", "chrome"] { try world.mustRun(desktop, ["browsers", "add", browser, "--exec", "true %u"]) }
        // An edit the desktop has not pushed when the account is encrypted.
        try world.mustRun(desktop, ["rules", "add", "clinic-\(marker).example", "\(before)browser"])

        let initialised = try world.run(laptop, ["key", "init"])
        #expect(initialised.status == 0, "\(initialised)")
        let code = try #require(Self.recoveryCode(initialised.stdout), "no recovery code in \(initialised.stdout)")
        #expect(initialised.stderr.contains("Write it down") && initialised.stdout.contains("switched to end-to-end encryption"), "\(initialised)")
        let keyFile = laptop + "/account-key"
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: keyFile)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
        #expect(try world.run(laptop, ["key", "show"]).stdout.contains(code))
        let again = try world.run(laptop, ["key", "init"])
        #expect(again.status == 2 && again.stderr.contains("has an account key already"), "\(again)")

        // The desktop, without the key: told what to do, its edit kept.
        let refused = try world.run(desktop, ["sync"])
        #expect(refused.status == 5 && refused.stderr.contains("brsync key add"), "\(refused)")
        #expect(try world.run(desktop, ["status", "--json"]).stdout.contains(#""unpushed":1"#))
        let status = try world.run(desktop, ["status"]).stdout
        #expect(status.contains("encrypted: the account is, and this machine has no key"), "\(status)")
        // A code is never taken from argv; a mistyped one and another account's are refused; nothing is saved.
        let onArgv = try world.run(desktop, ["key", "add", code])
        #expect(onArgv.status == 2 && onArgv.stderr.contains("never taken from the command line"), "\(onArgv)")
        var typo = Array(code)
        typo[7] = typo[7] == "A" ? "B" : "A"
        let mistyped = try ProcessRunner.run(world.brsync, ["key", "add"], environment: ["BRSYNC_HOME": desktop], stdin: String(typo) + "\n")
        #expect(mistyped.status == 2 && mistyped.stderr.contains("checksum"), "\(mistyped)")
        let wrongFile = world.directory.file("wrong-code")
        try (AccountKey.generate().recoveryCode + "\n").write(toFile: wrongFile, atomically: true, encoding: .utf8)
        let wrong = try world.run(desktop, ["key", "add", "--file", wrongFile])
        #expect(wrong.status == 2 && wrong.stderr.contains("does not open"), "\(wrong)")
        #expect(!FileManager.default.fileExists(atPath: desktop + "/account-key"))

        // With the code (on standard input), the desktop syncs: its edit goes up sealed, the laptop's come down.
        let added = try ProcessRunner.run(world.brsync, ["key", "add"], environment: ["BRSYNC_HOME": desktop], stdin: code + "\n")
        #expect(added.status == 0 && added.stderr.contains("account key added"), "\(added)")
        try world.mustRun(laptop, ["browsers", "add", "\(marker)browser", "--exec", "true %u"])
        try world.mustRun(laptop, ["rules", "add", "oncology-\(marker).example", "\(marker)browser"])
        try world.mustRun(laptop, ["sync"])
        try world.mustRun(desktop, ["sync"])
        try world.mustRun(desktop, ["browsers", "add", "\(marker)browser", "--exec", "true %u"])
        for home in [laptop, desktop] {
            for (url, browser) in [("https://clinic-\(marker).example/x", "\(before)browser"), ("https://github.com/x", "chrome"),
                                   ("https://bank-\(before).example/", "\(before)browser"), ("https://oncology-\(marker).example/", "\(marker)browser")] {
                let resolved = try world.run(home, ["resolve", "--json", url])
                #expect(resolved.stdout.contains(#""browser":"\#(browser)""#) && !resolved.stdout.contains(#""rule":null"#), "\(home) \(url): \(resolved)")
            }
        }
        // A deletion and concurrent edits travel too; the loser is kept readable.
        try world.mustRun(laptop, ["rules", "rm", "bank-\(before).example"])
        try world.mustRun(laptop, ["rules", "add", "github.com", "\(marker)browser"])
        usleep(20_000)
        try world.mustRun(desktop, ["rules", "add", "github.com", "\(before)browser"])
        for home in [laptop, desktop, laptop] { try world.mustRun(home, ["sync"]) }
        for home in [laptop, desktop] {
            let gone = try world.run(home, ["resolve", "--json", "https://bank-\(before).example/"])
            #expect(gone.stdout.contains(#""rule":null"#), "\(home): \(gone)")
            let won = try world.run(home, ["resolve", "--json", "https://github.com/x"])
            #expect(won.stdout.contains(#""browser":"\#(before)browser""#), "\(home): \(won)")
        }
        let conflicts = try world.run(desktop, ["log", "--conflicts"])
        #expect(conflicts.stdout.contains(#"rules/github.com browser: "\#(marker)browser""#), "\(conflicts)")

        // What the server holds: no pattern, no browser name, no setting value, in its files or its log.
        // (Its log is read after it stopped: everything it wrote, which stop() would otherwise drop.)
        let server = try #require(world.server)
        world.stop()
        let serverLog = server.process.text
        #expect(serverLog.contains("listening on") && !serverLog.contains(marker) && !serverLog.contains(before), "\(serverLog)")
        switch store {
        case .sqlite:
            // What was readable before the switch is gone too (the freed pages are zeroed).
            for file in [world.db, world.db + "-wal", world.db + "-shm"] {
                for needle in [marker, before, "github.com", "chrome"] {
                    #expect(Self.files(under: file, holding: needle).isEmpty, "\(file) holds \(needle)")
                }
            }
        case .postgres:
            // PostgreSQL keeps old row versions and log segments until they are reused
            // (Deploy/SECURITY.md): only what was written after the switch is checked.
            let found = Self.files(under: try PostgresCluster.shared().dataDirectory, holding: marker)
            #expect(found.isEmpty, "the cluster holds a readable rule in \(found)")
        }
    }
}

extension EncryptionTests {
    /// A server that changes what it stores: a flipped byte, two records'
    /// values swapped, an old value replayed under a newer stamp. A machine
    /// pulling them refuses each, naming the record, and syncs the rest.
    @Test func aServerThatTampersWithRecordsIsCaughtRecordByRecord() throws {
        let world = try CLIWorld()
        let laptop = try world.replica("laptop")
        // With --json, standard output is one JSON document, the code in it
        // (and on standard error as soon as it is made).
        let initialised = try world.run(laptop, ["key", "init", "--json"])
        #expect(initialised.status == 0 && initialised.stdout.split(separator: "\n").count == 1, "\(initialised)")
        let summary = try JSONValue.parse(initialised.stdout)
        guard case .object(let members) = summary, let code = members["recoveryCode"]?.stringValue else {
            Issue.record("no recovery code in \(initialised.stdout)")
            return
        }
        #expect(members["encryptionStarted"] == .bool(true) && initialised.stderr.contains(code), "\(initialised)")
        let cipher = RecordCipher(try AccountKey(recoveryCode: code))
        for browser in ["one", "two"] { try world.mustRun(laptop, ["browsers", "add", browser, "--exec", "true %u"]) }
        for (pattern, browser) in [("flipped.example", "one"), ("swap-a.example", "one"), ("swap-b.example", "two"),
                                   ("replayed.example", "one"), ("untouched.example", "two")] {
            try world.mustRun(laptop, ["rules", "add", pattern, browser])
        }
        try world.mustRun(laptop, ["sync"])
        let hidden = { (pattern: String) in cipher.hiddenKey(collection: "rules", key: pattern) }
        func fields(_ database: Database, _ pattern: String) throws -> [String: JSONValue] {
            let text = try #require(try database.scalar("SELECT fields FROM records WHERE key = ?", [.text(hidden(pattern))])?.stringValue,
                                    "the server has no record for \(pattern)")
            guard case .object(let object) = try JSONValue.parse(text) else {
                Issue.record("the stored fields of \(pattern) are not an object: \(text)")
                return [:]
            }
            return object
        }
        // The value "replayed" had before its edit.
        let oldBrowser = try fields(try Database(path: world.db, mode: .readOnly), "replayed.example")["browser"]
        usleep(5_000)
        try world.mustRun(laptop, ["rules", "add", "replayed.example", "two"])
        try world.mustRun(laptop, ["sync"])

        let port = world.port
        world.stop()
        do {
            let database = try Database(path: world.db)
            func store(_ pattern: String, _ object: [String: JSONValue]) throws {
                try database.run("UPDATE records SET fields = ? WHERE key = ?", [.text(JSONValue.object(object).jsonText), .text(hidden(pattern))])
            }
            // One character of the sealed value changed.
            var flipped = try fields(database, "flipped.example")
            guard case .object(var register)? = flipped["browser"], case .string(let sealed)? = register["v"] else {
                Issue.record("unexpected stored form: \(flipped)")
                return
            }
            var characters = Array(sealed)
            characters[20] = characters[20] == "A" ? "B" : "A"
            register["v"] = .string(String(characters))
            flipped["browser"] = .object(register)
            try store("flipped.example", flipped)
            // Two records' values swapped.
            var a = try fields(database, "swap-a.example")
            var b = try fields(database, "swap-b.example")
            (a["browser"], b["browser"]) = (b["browser"], a["browser"])
            try store("swap-a.example", a)
            try store("swap-b.example", b)
            // The old value under the new stamp.
            var replayed = try fields(database, "replayed.example")
            guard case .object(var newer)? = replayed["browser"], case .object(let older)? = oldBrowser else {
                Issue.record("unexpected stored form: \(replayed)")
                return
            }
            #expect(newer["s"] != older["s"])
            newer["v"] = older["v"]
            replayed["browser"] = .object(newer)
            try store("replayed.example", replayed)
            // The server's next change numbers, so every client pulls them again.
            try database.run("UPDATE records SET seq = seq + 1000 WHERE key IN (?, ?, ?, ?)",
                             ["flipped.example", "swap-a.example", "swap-b.example", "replayed.example"].map { .text(hidden($0)) })
            try database.run("UPDATE accounts SET next_seq = next_seq + 1000")
        }
        try world.start(port: port)

        // A new machine with the key: each tampered record is refused by name, the rest arrive.
        let desktop = try world.replica("desktop")
        let joined = try ProcessRunner.run(world.brsync, ["key", "add"], environment: ["BRSYNC_HOME": desktop], stdin: code + "\n")
        #expect(joined.status == 0, "\(joined)")
        for pattern in ["flipped.example", "swap-a.example", "swap-b.example", "replayed.example"] {
            #expect(joined.stderr.contains("warning: set aside record") && joined.stderr.contains("rules '\(pattern)'"), "\(pattern): \(joined.stderr)")
        }
        let rules = try world.run(desktop, ["rules", "list"])
        #expect(rules.stdout.contains("untouched.example"), "\(rules)")
        for pattern in ["flipped.example", "swap-a.example", "swap-b.example", "replayed.example"] {
            #expect(!rules.stdout.contains(pattern), "\(pattern) was applied: \(rules)")
        }
        // The laptop keeps syncing, and its own records stay as it made them.
        let synced = try world.run(laptop, ["sync"])
        #expect(synced.status == 0, "\(synced)")
        let resolved = try world.run(laptop, ["resolve", "--json", "https://replayed.example/"])
        #expect(resolved.stdout.contains(#""browser":"two""#), "\(resolved)")
        // New edits still travel.
        try world.mustRun(laptop, ["rules", "add", "later.example", "two"])
        try world.mustRun(laptop, ["sync"])
        try world.mustRun(desktop, ["sync"])
        #expect(try world.run(desktop, ["rules", "list"]).stdout.contains("later.example"))
    }
}

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
        try world.mustRun(laptop, ["browsers", "add", "firefox", "--exec", "true %u"])
        try world.mustRun(laptop, ["rules", "add", "joined.example", "firefox"])
        let code = try #require(Self.recoveryCode(try world.run(laptop, ["key", "init"]).stdout))

        // The code: the last line, the URL, a token and the CA's fingerprint (as openssl computes it).
        let output = try world.joinOutput("phone", qr: true)
        let join = try #require(output.split(separator: "\n").last.map(String.init))
        #expect(join.hasPrefix("brsync://join?server=\(world.url)&token=brj_"), "\(output)")
        #expect(output.contains("it works once, within 1 day(s)") && !output.contains("brs_"), "no device token is shown: \(output)")
        let openssl = try ProcessRunner.run("/usr/bin/openssl", ["x509", "-in", world.directory.file("ca.pem"), "-noout", "-fingerprint", "-sha256"])
        let fingerprint = openssl.stdout.split(separator: "=").last.map { $0.replacingOccurrences(of: ":", with: "").lowercased() }?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(join.hasSuffix("&ca=\(try #require(fingerprint))"), "\(join) vs \(openssl.stdout)")
        // The QR code a phone scans holds exactly that line.
        let decoded = try Self.decode(Self.modules(ofTerminalQR: output), in: world.directory)
        #expect(decoded == join, "zbarimg read \(decoded)")

        // A code whose fingerprint is not the server's CA: a man in the middle. Nothing is saved.
        let impostor = world.directory.file("impostor")
        let wrongCA = String(join.dropLast(64)) + String(repeating: "0", count: 64)
        let refused = try ProcessRunner.run(world.brsync, ["join"], environment: ["BRSYNC_HOME": impostor], stdin: wrongCA + "\n" + code + "\n")
        #expect(refused.status == 4 && refused.stderr.contains("man in the middle"), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: impostor), "the folder the failed join made is gone")

        // A recovery code of another account: refused, nothing saved.
        let wrongKey = world.directory.file("wrong-key")
        let wrong = try ProcessRunner.run(world.brsync, ["join"], environment: ["BRSYNC_HOME": wrongKey],
                                          stdin: join + "\n" + AccountKey.generate().recoveryCode + "\n")
        #expect(wrong.status == 2 && wrong.stderr.contains("does not open"), "\(wrong)")
        #expect(!FileManager.default.fileExists(atPath: wrongKey + "/token") && !FileManager.default.fileExists(atPath: wrongKey + "/ca.pem"))

        // Both codes on standard input: the phone joins, pinned, keyed and synced.
        let phone = world.directory.file("phone")
        let joined = try ProcessRunner.run(world.brsync, ["join"], environment: ["BRSYNC_HOME": phone], stdin: join + "\n" + code + "\n")
        #expect(joined.status == 0 && joined.stderr.contains("end-to-end encrypted"), "\(joined)")
        #expect(!joined.stderr.contains("warning"), "a code on standard input is not warned about: \(joined)")
        #expect(FileManager.default.fileExists(atPath: phone + "/ca.pem") && FileManager.default.fileExists(atPath: phone + "/account-key"))
        #expect(try world.run(phone, ["rules", "list"]).stdout.contains("joined.example"))
        #expect(try world.run(phone, ["remote", "show"]).stdout.contains(phone + "/ca.pem"))
        // Joining again is refused: it already syncs.
        let again = try ProcessRunner.run(world.brsync, ["join"], environment: ["BRSYNC_HOME": phone], stdin: join + "\n")
        #expect(again.status == 2 && again.stderr.contains("syncs with"), "\(again)")
        // The code worked once: another machine with it is refused, and nothing is saved there.
        let thief = world.directory.file("thief")
        let reused = try ProcessRunner.run(world.brsync, ["join"], environment: ["BRSYNC_HOME": thief], stdin: join + "\n" + code + "\n")
        #expect(reused.status == 5 && reused.stderr.contains("join code was used already"), "\(reused)")
        #expect(!FileManager.default.fileExists(atPath: thief))
        #expect(!FileManager.default.fileExists(atPath: phone + "/.join-token"), "the joining token is put away once saved")
        // Its edits travel back sealed.
        try world.mustRun(phone, ["rules", "add", "from-phone.example", "firefox"])
        try world.mustRun(phone, ["sync"])
        try world.mustRun(laptop, ["sync"])
        #expect(try world.run(laptop, ["rules", "list"]).stdout.contains("from-phone.example"))
    }

    @Test func joinCodesAndTheirOptionsAreChecked() throws {
        let world = try CLIWorld()
        // A readable account needs no recovery code; the code may be an argument.
        let desktop = try world.replica("desktop")
        try world.mustRun(desktop, ["browsers", "add", "chrome", "--exec", "true %u"])
        try world.mustRun(desktop, ["rules", "add", "plain.example", "chrome"])
        try world.mustRun(desktop, ["sync"])
        let join = try #require(try world.joinOutput("tablet").split(separator: "\n").last.map(String.init))
        // A recovery code given for an account the server says is readable
        // (a lying or set-back server): refused, nothing saved or sent.
        let keyFile = world.directory.file("recovery.txt")
        try (AccountKey.generate().recoveryCode + "\n").write(toFile: keyFile, atomically: false, encoding: .utf8)
        let doubting = world.directory.file("doubting")
        let refused = try ProcessRunner.run(world.brsync, ["join", "--recovery-file", keyFile], environment: ["BRSYNC_HOME": doubting], stdin: join + "\n")
        #expect(refused.status == 5 && refused.stderr.contains("says this account is not end-to-end encrypted"), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: doubting + "/token") && !FileManager.default.fileExists(atPath: doubting + "/replica.sqlite"))
        #expect(try world.run(desktop, ["sync", "--json"]).stdout.contains("\"pulled\":0"), "the server got nothing from it")
        let tablet = world.directory.file("tablet")
        let joined = try world.run(tablet, ["join", join])
        #expect(joined.status == 0 && !joined.stderr.contains("encrypted"), "\(joined)")
        #expect(joined.stderr.contains("warning: the join code was given on the command line"), "\(joined)")
        #expect(try world.run(tablet, ["rules", "list"]).stdout.contains("plain.example"))
        // Bad codes: clear errors, nothing made.
        for (text, message) in [("https://example.org", "not a join code"), ("brsync://join?server=https://a&token=x", "needs server, token and ca"),
                                ("brsync://join?server=https://a&token=x&ca=12", "64 hex digits"),
                                ("brsync://join?server=http://a&token=x&ca=" + String(repeating: "a", count: 64), "https://"),
                                ("brsync://join?server=https://a&token=x&token=y&ca=" + String(repeating: "a", count: 64), "twice")] {
            let home = world.directory.file("bad-\(abs(text.hashValue))")
            let result = try ProcessRunner.run(world.brsync, ["join"], environment: ["BRSYNC_HOME": home], stdin: text + "\n")
            #expect(result.status == 2 && result.stderr.contains(message), "\(text): \(result)")
            #expect(!FileManager.default.fileExists(atPath: home + "/replica.sqlite"), "\(text)")
        }
        // brsyncd refuses half a join code before adding the device.
        for arguments in [["--qr"], ["--url", world.url], ["--url", "http://x", "--ca", world.directory.file("ca.pem")],
                          ["--url", world.url, "--ca", world.directory.file("missing.pem")]] {
            let result = try ProcessRunner.run(world.brsyncd, ["device", "add", "alice", "half"] + arguments + world.storeArguments,
                                               environment: world.storeEnvironment)
            #expect(result.status != 0 && (result.stderr.contains("--url") || result.stderr.contains("--ca") || result.stderr.contains("join code")),
                    "\(arguments): \(result)")
        }
        let listed = try ProcessRunner.run(world.brsyncd, ["device", "list", "alice"] + world.storeArguments, environment: world.storeEnvironment)
        #expect(!listed.stdout.contains("half"), "\(listed)")
        // --expires: a duration of a minute to 30 days, for a join code only.
        for (arguments, message) in [(["--expires", "10x"], "not a duration"), (["--expires", "30s"], "at least a minute"),
                                     (["--expires", "31d"], "at most 30 days"), (["--expires=-5m"], "not a duration")] {
            let result = try ProcessRunner.run(world.brsyncd, ["device", "add", "alice", "timed", "--url", world.url, "--ca", world.directory.file("ca.pem")]
                                               + arguments + world.storeArguments, environment: world.storeEnvironment)
            #expect(result.status == 2 && result.stderr.contains(message), "\(arguments): \(result)")
        }
        let noCode = try ProcessRunner.run(world.brsyncd, ["device", "add", "alice", "timed", "--expires", "1h"] + world.storeArguments,
                                           environment: world.storeEnvironment)
        #expect(noCode.status == 2 && noCode.stderr.contains("join code needs"), "\(noCode)")
        let timed = try ProcessRunner.run(world.brsyncd, ["device", "add", "alice", "timed", "--url", world.url, "--ca", world.directory.file("ca.pem"),
                                                          "--expires", "2h"] + world.storeArguments, environment: world.storeEnvironment)
        #expect(timed.status == 0 && timed.stdout.contains("within 2 hour(s)"), "\(timed)")
        let relisted = try ProcessRunner.run(world.brsyncd, ["device", "list", "alice"] + world.storeArguments, environment: world.storeEnvironment)
        #expect(!relisted.stdout.contains("half") && relisted.stdout.contains("timed"), "\(relisted)")
        // A new code for the tablet: its machine's token stops working, the new code joins a new home.
        let renewed = try ProcessRunner.run(world.brsyncd, ["device", "token", "alice", "tablet", "--url", world.url, "--ca", world.directory.file("ca.pem")]
                                            + world.storeArguments, environment: world.storeEnvironment)
        #expect(renewed.status == 0 && renewed.stdout.contains("its old token no longer works"), "\(renewed)")
        let stale = try world.run(tablet, ["sync"])
        #expect(stale.status == 5, "\(stale)")
        let newCode = try #require(renewed.stdout.split(separator: "\n").last.map(String.init))
        let tablet2 = world.directory.file("tablet2")
        let rejoined = try ProcessRunner.run(world.brsync, ["join"], environment: ["BRSYNC_HOME": tablet2], stdin: newCode + "\n")
        #expect(rejoined.status == 0, "\(rejoined)")
        #expect(try world.run(tablet2, ["rules", "list"]).stdout.contains("plain.example"))
    }
}

/// `brsync key rotate`.
extension EncryptionTests {
    @Test func aRotatedKeyLocksOutTheOldOneAndEveryMachineGoesOnWithTheNewCode() throws {
        let world = try CLIWorld()
        let laptop = try world.replica("laptop")
        let desktop = try world.replica("desktop")
        try world.mustRun(laptop, ["browsers", "add", "firefox", "--exec", "true %u"])
        try world.mustRun(laptop, ["rules", "add", "before.example", "firefox"])
        let oldCode = try #require(Self.recoveryCode(try world.run(laptop, ["key", "init"]).stdout))
        #expect(try ProcessRunner.run(world.brsync, ["key", "add"], environment: ["BRSYNC_HOME": desktop], stdin: oldCode + "\n").status == 0)
        // The desktop has an edit it has not pushed when the key is rotated.
        try world.mustRun(desktop, ["rules", "add", "offline.example", "firefox"])

        let rotated = try world.run(laptop, ["key", "rotate"])
        #expect(rotated.status == 0 && rotated.stderr.contains("rotated"), "\(rotated)")
        let newCode = try #require(Self.recoveryCode(rotated.stdout))
        let shown = try world.run(laptop, ["key", "show"]).stdout
        #expect(newCode != oldCode && shown.contains(newCode))
        #expect(!FileManager.default.fileExists(atPath: laptop + "/account-key.next"))

        // What the server holds now opens with the new key only: a machine that has
        // only the old code (a revoked one, a thief of it) reads nothing written since.
        let oldCipher = RecordCipher(try AccountKey(recoveryCode: oldCode))
        let newCipher = RecordCipher(try AccountKey(recoveryCode: newCode))
        let stored = try Database(path: world.db, mode: .readOnly).query("SELECT collection, key, fields, versions FROM records") { row in
            try Wire.read(#"{"seq":1,"collection":"\#(row.string(0) ?? "")","key":"\#(row.string(1) ?? "")","fields":\#(row.string(2) ?? "{}"),"versions":\#(row.string(3) ?? "{}")}"#, ChangeRecord.init(reading:))
        }.filter { !$0.state.fields.isEmpty }
        #expect(!stored.isEmpty)
        #expect(stored.allSatisfy { (try? oldCipher.open($0)) == nil }, "a record written after the rotation opens with the old key")
        #expect(stored.allSatisfy { (try? newCipher.open($0)) != nil })

        // The desktop, with the old key: stopped, told why, its edit kept.
        let stopped = try world.run(desktop, ["sync"])
        #expect(stopped.status == 5 && stopped.stderr.contains("rotated") && stopped.stderr.contains("brsync key add"), "\(stopped)")
        #expect(try world.run(desktop, ["status", "--json"]).stdout.contains(#""unpushed":1"#))
        // The old code is refused, here and for a machine joining with it.
        let stale = try ProcessRunner.run(world.brsync, ["key", "add"], environment: ["BRSYNC_HOME": desktop], stdin: oldCode + "\n")
        #expect(stale.status == 2 && stale.stderr.contains("this machine has this account key already"), "\(stale)")
        let join = try #require(try world.joinOutput("tablet").split(separator: "\n").last.map(String.init))
        let tablet = world.directory.file("tablet")
        let staleJoin = try ProcessRunner.run(world.brsync, ["join"], environment: ["BRSYNC_HOME": tablet], stdin: join + "\n" + oldCode + "\n")
        #expect(staleJoin.status == 2 && staleJoin.stderr.contains("rotated"), "\(staleJoin)")
        // With the new code, the desktop goes on: its edit goes up sealed with the new key.
        let replaced = try ProcessRunner.run(world.brsync, ["key", "add"], environment: ["BRSYNC_HOME": desktop], stdin: newCode + "\n")
        #expect(replaced.status == 0 && replaced.stderr.contains("replaced"), "\(replaced)")
        try world.mustRun(laptop, ["sync"])
        for home in [laptop, desktop] {
            let rules = try world.run(home, ["rules", "list"]).stdout
            #expect(rules.contains("before.example") && rules.contains("offline.example"), "\(home): \(rules)")
        }
        // A rotation stopped after the new key was put aside and before the server
        // agreed: the next sync forgets that key (the account does not use it).
        try AccountKeyFile.write(AccountKey.generate(), home: laptop, pending: true)
        try world.mustRun(laptop, ["sync"])
        #expect(!FileManager.default.fileExists(atPath: laptop + "/account-key.next"))
        #expect(try world.run(laptop, ["key", "show"]).stdout.contains(newCode))
        // The machine that did not rotate cannot rotate from a key the account no longer uses.
        try world.mustRun(desktop, ["sync"])
    }
}

/// What a key change says and leaves behind, as the user sees it.
extension EncryptionTests {
    @Test func aKeyChangeSaysWhatItKeptAndAPendingKeyIsShown() throws {
        let world = try CLIWorld()
        let laptop = try world.replica("laptop")
        let desktop = try world.replica("desktop")
        for home in [laptop, desktop] { try world.mustRun(home, ["browsers", "add", "firefox", "--exec", "true %u"]) }
        try world.mustRun(laptop, ["rules", "add", "laptop.example", "firefox"])
        try world.mustRun(laptop, ["sync"])
        try world.mustRun(desktop, ["rules", "add", "desktop.example", "firefox"])
        try world.mustRun(desktop, ["sync"]) // the laptop has not pulled it

        let initialised = try world.run(laptop, ["key", "init"])
        #expect(initialised.status == 0, "\(initialised)")
        let code = try #require(Self.recoveryCode(initialised.stdout))
        #expect(initialised.stderr.contains("First this machine synced (pulled ") && initialised.stderr.contains("kept every record and sent each one, sealed: "),
                "\(initialised)")
        #expect(try world.run(laptop, ["rules", "list"]).stdout.contains("desktop.example"))
        #expect(try ProcessRunner.run(world.brsync, ["key", "add"], environment: ["BRSYNC_HOME": desktop], stdin: code + "\n").status == 0)
        // The laptop's earlier device id is shown as the laptop, not as another device.
        let devices = try world.run(desktop, ["device"]).stdout
        #expect(devices.components(separatedBy: "laptop").count == 2 && devices.contains("earlier"), "\(devices)")

        // A machine without the key cannot encrypt the account again, and is told so before any code is made.
        let tablet = try world.replica("tablet")
        let refused = try world.run(tablet, ["key", "init"])
        #expect(refused.status == 5 && refused.stderr.contains("encrypted already") && Self.recoveryCode(refused.stdout) == nil, "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: tablet + "/account-key") && !FileManager.default.fileExists(atPath: tablet + "/account-key.next"))

        // A key change stopped after the server was asked: the pending code is shown, and said to be pending.
        let pending = AccountKey.generate()
        try AccountKeyFile.write(pending, home: laptop, pending: true)
        let shown = try world.run(laptop, ["key", "show"])
        #expect(shown.status == 0 && shown.stdout.contains(code) && shown.stderr.contains("pending: \(pending.recoveryCode)"), "\(shown)")
        // The server never took it: the next sync drops it, and the code stays the account's.
        try world.mustRun(laptop, ["sync"])
        let settled = try world.run(laptop, ["key", "show"])
        #expect(settled.stdout.contains(code) && !settled.stderr.contains("pending"), "\(settled)")
    }
}

/// The account key file is an input too: damaged, readable by
/// others, or a folder — each a clear error, nothing synced, nothing changed.
extension EncryptionTests {
    @Test func aKeyFileThatIsNotRightStopsSyncWithAClearError() throws {
        let world = try CLIWorld()
        let laptop = try world.replica("laptop")
        try world.mustRun(laptop, ["browsers", "add", "firefox", "--exec", "true %u"])
        try world.mustRun(laptop, ["rules", "add", "kept.example", "firefox"])
        let code = try #require(Self.recoveryCode(try world.run(laptop, ["key", "init"]).stdout))
        let keyFile = laptop + "/account-key"
        let good = try String(contentsOfFile: keyFile, encoding: .utf8)
        try world.mustRun(laptop, ["rules", "add", "pending.example", "firefox"])
        let cases: [(String, () throws -> Void, String)] = [
            ("a changed character", {
                try good.replacingOccurrences(of: String(code.prefix(5)), with: String(code.prefix(4)) + (code.dropFirst(4).first == "A" ? "B" : "A"))
                    .write(toFile: keyFile, atomically: false, encoding: .utf8)
            }, "damaged"),
            ("no code", { try "# nothing here\n".write(toFile: keyFile, atomically: false, encoding: .utf8) }, "holds no recovery code"),
            ("readable by others", {
                try good.write(toFile: keyFile, atomically: false, encoding: .utf8)
                chmod(keyFile, 0o644)
            }, "chmod 600"),
            ("a folder", {
                try FileManager.default.removeItem(atPath: keyFile)
                try FileManager.default.createDirectory(atPath: keyFile, withIntermediateDirectories: false)
            }, "not a regular file"),
        ]
        for (what, damage, message) in cases {
            try damage()
            let result = try world.run(laptop, ["sync"])
            #expect(result.status == 2 && result.stderr.contains(message), "\(what): \(result)")
            #expect(try world.run(laptop, ["status", "--json"]).stdout.contains(#""unpushed":1"#), "\(what): the edit waits")
        }
        // Put right, it syncs again.
        try FileManager.default.removeItem(atPath: keyFile)
        try good.write(toFile: keyFile, atomically: false, encoding: .utf8)
        chmod(keyFile, 0o600)
        try world.mustRun(laptop, ["sync"])
        #expect(try world.run(laptop, ["status", "--json"]).stdout.contains(#""unpushed":0"#))
        // More than a recovery code on standard input is refused, not read forever.
        let huge = try ProcessRunner.run(world.brsync, ["key", "add"], environment: ["BRSYNC_HOME": laptop],
                                         stdin: String(repeating: "A", count: 10_000))
        #expect(huge.status == 2 && huge.stderr.contains("4 KiB"), "\(huge)")
    }
}
