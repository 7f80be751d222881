import Foundation
import Model
import Storage
import SyncClient
import Testing
import TestSupport

/// End-to-end encryption with the real binaries (issue 13): `brsync key
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

    @Test(arguments: WorldStore.allCases) func theServerMergesRulesItCannotRead(_ store: WorldStore) throws {
        // Written before the switch (readable on the server until then) and after it (never readable there).
        let before = "qzb\(UInt32.random(in: 100_000...999_999))"
        let marker = Self.marker
        let world = try SyncWorld(store)
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
        world.stop()
        let serverLog = world.server?.text ?? ""
        #expect(!serverLog.contains(marker) && !serverLog.contains(before))
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
        let world = try SyncWorld()
        let laptop = try world.replica("laptop")
        let initialised = try world.run(laptop, ["key", "init"])
        let code = try #require(Self.recoveryCode(initialised.stdout), "\(initialised)")
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
