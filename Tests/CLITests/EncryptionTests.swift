import Foundation
import JSON
import Model
import Storage
import SyncClient
import SyncCore
import TestSupport
import Testing

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
        let files =
            isFolder.boolValue
            ? (manager.enumerator(atPath: path)?.compactMap { $0 as? String }.map { "\(path)/\($0)" } ?? []) : [path]
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
        for browser in ["\(before)browser", "chrome"] {
            try world.mustRun(desktop, ["browsers", "add", browser, "--exec", "true %u"])
        }
        // An edit the desktop has not pushed when the account is encrypted.
        try world.mustRun(desktop, ["rules", "add", "clinic-\(marker).example", "\(before)browser"])

        let initialised = try world.run(laptop, ["key", "init"])
        #expect(initialised.status == 0, "\(initialised)")
        let code = try #require(Self.recoveryCode(initialised.stdout), "no recovery code in \(initialised.stdout)")
        #expect(
            initialised.stderr.contains("Write it down")
                && initialised.stdout.contains("syncing sealed with the account key from now on"), "\(initialised)")
        let keyFile = laptop + "/account-key"
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: keyFile)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
        #expect(try world.run(laptop, ["key", "show"]).stdout.contains(code))
        let again = try world.run(laptop, ["key", "init"])
        #expect(again.status == 2 && again.stderr.contains("with this machine's key already"), "\(again)")

        // The desktop, without the key: told what to do, its edit kept.
        let refused = try world.run(desktop, ["sync"])
        #expect(refused.status == 5 && refused.stderr.contains("brsync key add"), "\(refused)")
        #expect(try world.run(desktop, ["status", "--json"]).stdout.contains(#""unpushed":1"#))
        let status = try world.run(desktop, ["status"]).stdout
        #expect(
            status.contains("end-to-end encrypted and has no key: it sends nothing until 'brsync key add'"), "\(status)"
        )
        // A code is never taken from argv; a mistyped one and another account's are refused; nothing is saved.
        let onArgv = try world.run(desktop, ["key", "add", code])
        #expect(onArgv.status == 2 && onArgv.stderr.contains("never taken from the command line"), "\(onArgv)")
        var typo = Array(code)
        typo[7] = typo[7] == "A" ? "B" : "A"
        let mistyped = try ProcessRunner.run(
            world.brsync, ["key", "add"], environment: ["BRSYNC_HOME": desktop], stdin: String(typo) + "\n")
        #expect(mistyped.status == 2 && mistyped.stderr.contains("checksum"), "\(mistyped)")
        let wrongFile = world.directory.file("wrong-code")
        try (AccountKey.generate().recoveryCode + "\n").write(toFile: wrongFile, atomically: true, encoding: .utf8)
        let wrong = try world.run(desktop, ["key", "add", "--file", wrongFile])
        #expect(wrong.status == 2 && wrong.stderr.contains("does not open"), "\(wrong)")
        #expect(!FileManager.default.fileExists(atPath: desktop + "/account-key"))

        // With the code (on standard input), the desktop syncs: its edit goes up sealed, the laptop's come down.
        let added = try ProcessRunner.run(
            world.brsync, ["key", "add"], environment: ["BRSYNC_HOME": desktop], stdin: code + "\n")
        #expect(added.status == 0 && added.stderr.contains("account key added"), "\(added)")
        try world.mustRun(laptop, ["browsers", "add", "\(marker)browser", "--exec", "true %u"])
        try world.mustRun(laptop, ["rules", "add", "oncology-\(marker).example", "\(marker)browser"])
        try world.mustRun(laptop, ["sync"])
        try world.mustRun(desktop, ["sync"])
        // A later sync's ledger checks read only what changed (`--json` says what they read).
        try world.mustRun(laptop, ["rules", "add", "later-\(marker).example", "chrome"])
        try world.mustRun(laptop, ["sync"])
        let later = try JSONValue.parse(try world.run(desktop, ["sync", "--json"]).stdout)
        guard case .object(let summary) = later, case .object(let check)? = summary["ledgerCheck"] else {
            Issue.record("no ledgerCheck in \(later)")
            return
        }
        #expect(check["whole"] == .bool(false) && check["ledgers"] == .int(1), "\(check)")
        #expect(check["milliseconds"]?.intValue.map { $0 >= 0 } == true, "\(check)")
        try world.mustRun(desktop, ["browsers", "add", "\(marker)browser", "--exec", "true %u"])
        for home in [laptop, desktop] {
            for (url, browser) in [
                ("https://clinic-\(marker).example/x", "\(before)browser"), ("https://github.com/x", "chrome"),
                ("https://bank-\(before).example/", "\(before)browser"),
                ("https://oncology-\(marker).example/", "\(marker)browser"),
            ] {
                let resolved = try world.run(home, ["resolve", "--json", url])
                #expect(
                    resolved.stdout.contains(#""browser":"\#(browser)""#) && !resolved.stdout.contains(#""rule":null"#),
                    "\(home) \(url): \(resolved)")
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
        #expect(
            serverLog.contains("listening on") && !serverLog.contains(marker) && !serverLog.contains(before),
            "\(serverLog)")
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
        for (pattern, browser) in [
            ("flipped.example", "one"), ("swap-a.example", "one"), ("swap-b.example", "two"),
            ("replayed.example", "one"), ("untouched.example", "two"),
        ] {
            try world.mustRun(laptop, ["rules", "add", pattern, browser])
        }
        try world.mustRun(laptop, ["sync"])
        let hidden = { (pattern: String) in cipher.hiddenKey(collection: "rules", key: pattern) }
        func fields(_ database: Database, _ pattern: String) throws -> [String: JSONValue] {
            let text = try #require(
                try database.scalar("SELECT fields FROM records WHERE key = ?", [.text(hidden(pattern))])?.stringValue,
                "the server has no record for \(pattern)")
            guard case .object(let object) = try JSONValue.parse(text) else {
                Issue.record("the stored fields of \(pattern) are not an object: \(text)")
                return [:]
            }
            return object
        }
        // What "replayed" held before its edit.
        let oldFields = try fields(try Database(path: world.db, mode: .readOnly), "replayed.example")
        let oldBrowser = oldFields["browser"]
        usleep(5_000)
        try world.mustRun(laptop, ["rules", "add", "replayed.example", "two"])
        try world.mustRun(laptop, ["sync"])

        let port = world.port
        world.stop()
        var boxed = false
        do {
            let database = try Database(path: world.db)
            func store(_ pattern: String, _ object: [String: JSONValue]) throws {
                try database.run(
                    "UPDATE records SET fields = ? WHERE key = ?",
                    [.text(WireText.of(.object(object))), .text(hidden(pattern))])
            }
            // In sealed format 2 (what this brsync writes once the server
            // marks the account) the same tampering, with boxes.
            boxed = try fields(database, "flipped.example")[RecordState.boxesMember] != nil
            if boxed {
                try Self.tamperWithBoxes(read: { try fields(database, $0) }, store: store, before: oldFields)
            } else {
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
            }
            // The server's next change numbers, so every client pulls them again.
            try database.run(
                "UPDATE records SET seq = seq + 1000 WHERE key IN (?, ?, ?, ?)",
                ["flipped.example", "swap-a.example", "swap-b.example", "replayed.example"].map { .text(hidden($0)) })
            try database.run("UPDATE accounts SET next_seq = next_seq + 1000")
        }
        try world.start(port: port)

        // A new machine with the key: each tampered record is refused by name, the rest arrive.
        let desktop = try world.replica("desktop")
        let joined = try ProcessRunner.run(
            world.brsync, ["key", "add"], environment: ["BRSYNC_HOME": desktop], stdin: code + "\n")
        #expect(joined.status == 0, "\(joined)")
        for pattern in ["flipped.example", "swap-a.example", "swap-b.example", "replayed.example"] {
            // A box that does not open hides the rule's name too: a new
            // machine names the record by its hidden key.
            let named = boxed ? "rules/\(hidden(pattern)) box" : "rules '\(pattern)'"
            #expect(
                joined.stderr.contains("warning: set aside record") && joined.stderr.contains(named),
                "\(pattern): \(joined.stderr)")
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

extension EncryptionTests {
    /// The first test's tampering in sealed format 2, where a record's
    /// fields name its writes' boxes (`e2e.boxes`, each `{"s", "b"}`): a
    /// character of a box changed; two records' boxes swapped; the box of
    /// the write before the edit served under the edit's stamp.
    struct Unexpected: Error, CustomStringConvertible {
        let description: String
    }

    static func tamperWithBoxes(
        read: (String) throws -> [String: JSONValue], store: (String, [String: JSONValue]) throws -> Void,
        before: [String: JSONValue]
    ) throws {
        func boxes(_ fields: [String: JSONValue]) throws -> [JSONValue] {
            guard case .array(let list)? = fields[RecordState.boxesMember] else {
                throw Unexpected(description: "no boxes in \(fields)")
            }
            return list
        }
        func text(_ box: JSONValue) throws -> String {
            guard case .object(let entry) = box, case .string(let text)? = entry["b"] else {
                throw Unexpected(description: "not a box entry: \(box)")
            }
            return text
        }
        func with(_ box: JSONValue, text: String) -> JSONValue {
            guard case .object(var entry) = box else { return box }
            entry["b"] = .string(text)
            return .object(entry)
        }
        var flipped = try read("flipped.example")
        var list = try boxes(flipped)
        var characters = Array(try text(list[0]))
        characters[20] = characters[20] == "A" ? "B" : "A"
        list[0] = with(list[0], text: String(characters))
        flipped[RecordState.boxesMember] = .array(list)
        try store("flipped.example", flipped)
        var (a, b) = (try read("swap-a.example"), try read("swap-b.example"))
        (a[RecordState.boxesMember], b[RecordState.boxesMember]) = (
            b[RecordState.boxesMember], a[RecordState.boxesMember]
        )
        try store("swap-a.example", a)
        try store("swap-b.example", b)
        var replayed = try read("replayed.example")
        var newer = try boxes(replayed)
        let older = try boxes(before)
        #expect(newer.count > older.count, "the edit wrote a box of its own")
        newer[newer.count - 1] = with(newer[newer.count - 1], text: try text(older[older.count - 1]))
        replayed[RecordState.boxesMember] = .array(newer)
        try store("replayed.example", replayed)
    }
}

/// `brsync key rotate`.
extension EncryptionTests {
    @Test func aRotatedKeyLocksOutTheOldOneAndEveryMachineGoesOnWithTheNewCode() throws {
        let world = try CLIWorld()
        let laptop = try world.replica("laptop")
        let desktop = try world.replica("desktop")
        try world.firefoxRule(laptop, "before.example")
        let oldCode = try #require(Self.recoveryCode(try world.run(laptop, ["key", "init"]).stdout))
        #expect(
            try ProcessRunner.run(
                world.brsync, ["key", "add"], environment: ["BRSYNC_HOME": desktop], stdin: oldCode + "\n"
            ).status == 0)
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
        let stored = try Database(path: world.db, mode: .readOnly).query(
            "SELECT collection, key, fields, versions FROM records"
        ) { row in
            try Wire.read(
                #"{"seq":1,"collection":"\#(row.string(0) ?? "")","key":"\#(row.string(1) ?? "")","fields":\#(row.string(2) ?? "{}"),"versions":\#(row.string(3) ?? "{}")}"#,
                ChangeRecord.init(reading:))
        }.filter { !$0.state.fields.isEmpty }
        #expect(!stored.isEmpty)
        #expect(
            stored.allSatisfy { (try? oldCipher.open($0)) == nil },
            "a record written after the rotation opens with the old key")
        #expect(stored.allSatisfy { (try? newCipher.open($0)) != nil })

        // The desktop, with the old key: stopped, told why, its edit kept.
        let stopped = try world.run(desktop, ["sync"])
        #expect(
            stopped.status == 5 && stopped.stderr.contains("rotated") && stopped.stderr.contains("brsync key add"),
            "\(stopped)")
        #expect(try world.run(desktop, ["status", "--json"]).stdout.contains(#""unpushed":1"#))
        // Its old code is shown, and said to be old (exit 5).
        let oldShown = try world.run(desktop, ["key", "show"])
        #expect(
            oldShown.status == 5 && oldShown.stdout.contains(oldCode)
                && oldShown.stderr.contains("rotated to a newer key"), "\(oldShown)")
        // The old code is refused, here and for a machine joining with it.
        let stale = try ProcessRunner.run(
            world.brsync, ["key", "add"], environment: ["BRSYNC_HOME": desktop], stdin: oldCode + "\n")
        #expect(
            stale.status == 2 && stale.stderr.contains("which the account was rotated away from: add the new code"),
            "\(stale)")
        let join = try #require(try world.joinOutput("tablet").split(separator: "\n").last.map(String.init))
        let tablet = world.directory.file("tablet")
        let staleJoin = try ProcessRunner.run(
            world.brsync, ["join"], environment: ["BRSYNC_HOME": tablet], stdin: join + "\n" + oldCode + "\n")
        #expect(staleJoin.status == 2 && staleJoin.stderr.contains("rotated"), "\(staleJoin)")
        // With the new code, the desktop goes on: its edit goes up sealed with the new key.
        let replaced = try ProcessRunner.run(
            world.brsync, ["key", "add"], environment: ["BRSYNC_HOME": desktop], stdin: newCode + "\n")
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
        #expect(
            initialised.stderr.contains("First this machine synced, so every machine's synced edit is here"),
            "\(initialised)")
        // One summary of the whole change, on standard output: the desktop's rule pulled first, then every record sent sealed.
        let summaries = initialised.stdout.split(separator: "\n").filter {
            $0.contains("pushed") || $0.contains("pulled")
        }
        #expect(summaries.count == 1 && !initialised.stderr.contains("pulled"), "\(initialised)")
        #expect(
            summaries.first?.hasPrefix("key init: pushed ") == true
                && summaries.first?.contains(" changed here, ") == true
                && summaries.first?.contains("record(s) this machine held sent sealed") == true, "\(initialised)")
        #expect(try world.run(laptop, ["rules", "list"]).stdout.contains("desktop.example"))
        #expect(
            try ProcessRunner.run(
                world.brsync, ["key", "add"], environment: ["BRSYNC_HOME": desktop], stdin: code + "\n"
            ).status == 0)
        // The laptop's earlier device id is shown as the laptop, not as another device.
        let devices = try world.run(desktop, ["device"]).stdout
        #expect(devices.components(separatedBy: "laptop").count == 2 && devices.contains("earlier"), "\(devices)")

        // A machine without the key cannot encrypt the account again, and is told so before any code is made.
        let tablet = try world.replica("tablet")
        let refused = try world.run(tablet, ["key", "init"])
        #expect(
            refused.status == 5 && refused.stderr.contains("encrypted already")
                && Self.recoveryCode(refused.stdout) == nil, "\(refused)")
        #expect(
            !FileManager.default.fileExists(atPath: tablet + "/account-key")
                && !FileManager.default.fileExists(atPath: tablet + "/account-key.next"))

        // A key change stopped after the server was asked: the pending code is shown, and said to be pending.
        let pending = AccountKey.generate()
        try AccountKeyFile.write(pending, home: laptop, pending: true)
        let shown = try world.run(laptop, ["key", "show"])
        #expect(
            shown.status == 0 && shown.stdout.contains(code)
                && shown.stderr.contains("pending: \(pending.recoveryCode)"), "\(shown)")
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
        try world.firefoxRule(laptop, "kept.example")
        let code = try #require(Self.recoveryCode(try world.run(laptop, ["key", "init"]).stdout))
        let keyFile = laptop + "/account-key"
        let good = try String(contentsOfFile: keyFile, encoding: .utf8)
        try world.mustRun(laptop, ["rules", "add", "pending.example", "firefox"])
        let cases: [(String, () throws -> Void, String)] = [
            (
                "a changed character",
                {
                    try good.replacingOccurrences(
                        of: String(code.prefix(5)),
                        with: String(code.prefix(4)) + (code.dropFirst(4).first == "A" ? "B" : "A")
                    )
                    .write(toFile: keyFile, atomically: false, encoding: .utf8)
                }, "damaged"
            ),
            (
                "no code", { try "# nothing here\n".write(toFile: keyFile, atomically: false, encoding: .utf8) },
                "holds no recovery code"
            ),
            (
                "readable by others",
                {
                    try good.write(toFile: keyFile, atomically: false, encoding: .utf8)
                    chmod(keyFile, 0o644)
                }, "chmod 600"
            ),
            (
                "a folder",
                {
                    try FileManager.default.removeItem(atPath: keyFile)
                    try FileManager.default.createDirectory(atPath: keyFile, withIntermediateDirectories: false)
                }, "not a regular file"
            ),
        ]
        for (what, damage, message) in cases {
            try damage()
            let result = try world.run(laptop, ["sync"])
            #expect(result.status == 2 && result.stderr.contains(message), "\(what): \(result)")
            #expect(
                try world.run(laptop, ["status", "--json"]).stdout.contains(#""unpushed":1"#), "\(what): the edit waits"
            )
        }
        // Put right, it syncs again.
        try FileManager.default.removeItem(atPath: keyFile)
        try good.write(toFile: keyFile, atomically: false, encoding: .utf8)
        chmod(keyFile, 0o600)
        try world.mustRun(laptop, ["sync"])
        #expect(try world.run(laptop, ["status", "--json"]).stdout.contains(#""unpushed":0"#))
        // More than a recovery code on standard input is refused, not read forever.
        let huge = try ProcessRunner.run(
            world.brsync, ["key", "add"], environment: ["BRSYNC_HOME": laptop],
            stdin: String(repeating: "A", count: 10_000))
        #expect(huge.status == 2 && huge.stderr.contains("4 KiB"), "\(huge)")
    }
}
