import Foundation
import Storage
import TestSupport
import Testing

/// Every error: exit 2, one clear line on stderr, nothing changed in the replica.
@Suite struct BadInputTests {
    static let badCommands: [([String], String)] = [
        (["rules", "add", "", "firefox"], "invalid pattern"),
        (["remote", "set", "https://127.0.0.1:9", "--token", "brs_abc"], "it is too short (7 characters"),
        (["remote", "set", "https://127.0.0.1:9", "--token", "abc0123456789abcdef0123"], "does not start with brs_"),
        (
            ["remote", "set", "https://127.0.0.1:9", "--token", "brj_0123456789abcdef0123456789"],
            "give it to 'brsync join'"
        ),
        (
            ["remote", "set", "https://127.0.0.1:9", "--token", "brsync://join?server=x&token=brj_1"],
            "a join code, not a token"
        ),
        (["rules", "add", "exa mple.com", "firefox"], "whitespace"),
        (["rules", "add", "ftp://x.com", "firefox"], "scheme 'ftp'"),
        (["rules", "add", "x.com:99999", "firefox"], "port"),
        (["rules", "add", "x.com", "frefox"], "did you mean 'firefox'"),
        (["rules", "add", "x.com", "opera"], "brsync browsers add opera"),
        (["rules", "add", "x.com"], "Missing expected argument"),
        (["rules", "add", "x.com", "firefox", "--priority", "high"], "priority"),
        (["rules", "rm", "nothere.com"], "no rule with the pattern"),
        (["rules", "rm", "githb.com"], "did you mean 'github.com'"),
        (["browsers", "add", "Bad Id"], "invalid browser id"),
        (["browsers", "add", "mine", "--format", "x://{nope}"], "unknown placeholder {nope}"),
        (["browsers", "add", "mine", "--exec", " "], "launch command must not be blank"),
        (["browsers", "rm", "nosuch"], "unknown browser 'nosuch'"),
        (["browsers", "default", "chrom"], "did you mean 'chrome'"),
        (["rule", "list"], "did you mean 'brsync rules list'?"),
        (["rules", "lst"], "did you mean 'brsync rules list'?"),
        (
            ["rules", "ad", "x.com", "firefox"],
            "'ad' is not a command of 'brsync rules': did you mean 'brsync rules add'?\nUsage: brsync rules add"
        ),
        (
            ["rule", "add", "x.com", "firefox"],
            "'rule' is not a command of 'brsync': did you mean 'brsync rules add'?\nUsage: brsync rules add"
        ),
        (["rules", "add", "x.com", "firefox", "--priority", "-5"], "a negative number is given as --priority=-5"),
        (["browsers", "enable", "zzz"], "unknown browser"),
        (["resolve", "not a url"], "not a web URL"),
        (["resolve", "javascript:alert(1)"], "scheme 'javascript'"),
        (["explain", ""], "blank"),
        (["suggest", "ftp://x"], "scheme 'ftp'"),
        (["log", "--limit", "0"], "--limit"),
        (["import", "/nonexistent.json"], "no such file"),
        (["frobnicate"], "Unexpected argument"),
        (["device", "forget", " "], "give the device's id (or its first 4 hex digits or more) or its name"),
        (["device", "forget", "0123"], "no device '0123' whose ledger is held here"),
    ]

    @Test("errors exit 2 with one line and change nothing", arguments: badCommands)
    func badCommand(_ row: ([String], String)) throws {
        let cli = try CLIHarness()
        try cli.standardSetup()
        let before = try cli.snapshot()
        let result = try cli.run(row.0)
        #expect(result.status == 2, "\(row.0): \(result)")
        #expect(result.stderr.contains(row.1), "\(row.0): \(result.stderr)")
        #expect(result.stderr.hasPrefix("brsync: error: "), "\(result.stderr)")
        #expect(try cli.snapshot() == before)
    }

    @Test func errorsAreOneLine() throws {
        let cli = try CLIHarness()
        try cli.standardSetup()
        for arguments in [["rules", "add", "x.com", "frefox"], ["resolve", "nope nope"], ["rules", "rm", "zzz.com"]] {
            let result = try cli.run(arguments)
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        }
    }

    static let badImports: [(String, String)] = [
        ("not json", "not a valid brsync export"),
        (#"{"rules": [{"pattern": "a.com"}]}"#, "missing \"browserScheme\""),
        (#"{"rules": [{"pattern": "bad pattern", "browser": "firefox"}]}"#, "invalid pattern"),
        (#"{"rules": [{"pattern": "a.com", "browser": "firefox", "createdAt": "soon"}]}"#, "createdAt"),
        (#"{"format": "something-else", "rules": []}"#, "format is 'something-else'"),
        (#"{"version": 99}"#, "version 99"),
        (#"{"browsers": [{"id": "x", "urlFormat": "none"}]}"#, "no placeholder"),
    ]

    @Test("bad imports change nothing", arguments: badImports)
    func badImport(_ row: (String, String)) throws {
        let cli = try CLIHarness()
        try cli.standardSetup()
        let before = try cli.snapshot()
        let result = try cli.run(["import", "-"], stdin: row.0)
        #expect(result.status == 2, "\(result)")
        #expect(result.stderr.contains(row.1), "\(result.stderr)")
        #expect(try cli.snapshot() == before)
    }

    @Test func aReplicaThatIsNotADatabaseIsLeftUntouched() throws {
        let cli = try CLIHarness()
        try FileManager.default.createDirectory(atPath: cli.home, withIntermediateDirectories: true)
        let garbage = Data(String(repeating: "definitely not sqlite\n", count: 300).utf8)
        try garbage.write(to: URL(fileURLWithPath: cli.replicaFile))
        for arguments in [
            ["rules", "list"], ["resolve", "https://a.com"], ["init"], ["rules", "add", "a.com", "firefox"],
        ] {
            let result = try cli.run(arguments)
            #expect(
                result.status == 2 && result.stderr.contains("is damaged (the file is not an SQLite database)"),
                "\(arguments): \(result)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: cli.replicaFile)) == garbage)
        #expect(!FileManager.default.fileExists(atPath: cli.replicaFile + "-wal"))
    }

    @Test func aReplicaFromANewerBrsyncIsLeftUntouched() throws {
        let cli = try CLIHarness()
        try cli.standardSetup()
        try Database(path: cli.replicaFile).execute("PRAGMA user_version = 42")
        let before = try Data(contentsOf: URL(fileURLWithPath: cli.replicaFile))
        let result = try cli.run("rules", "add", "a.com", "firefox")
        #expect(
            result.status == 2 && result.stderr.contains("schema version 42")
                && result.stderr.contains("upgrade brsync"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: cli.replicaFile)) == before)
    }

    /// The token is a secret: a token file others can read, or a link to
    /// one, is refused before anything is sent (and nothing changes).
    @Test func aTokenFileOthersCouldReadOrSwapIsRefused() throws {
        let cli = try CLIHarness()
        try cli.standardSetup()
        // Spaces around a pasted token are not part of it.
        try cli.mustSucceed(
            "remote", "set", "https://127.0.0.1:9", "--token", " brs_0123456789abcdef0123456789abcdef\n")
        let token = cli.home + "/token"
        #expect(
            try String(contentsOfFile: token, encoding: .utf8).trimmingCharacters(in: .newlines)
                == "brs_0123456789abcdef0123456789abcdef")
        chmod(token, 0o644)
        let readable = try cli.run("sync")
        #expect(
            readable.status == 2
                && readable.stderr.contains(
                    "the token at \(token) can be read by others (mode 644): run 'chmod 600 \(token)'"),
            "\(readable)")
        chmod(token, 0o600)
        try FileManager.default.moveItem(atPath: token, toPath: token + ".real")
        symlink(token + ".real", token)
        let linked = try cli.run("sync")
        #expect(linked.status == 2 && linked.stderr.contains("is not a regular file (a link)"), "\(linked)")
    }

    @Test func aMissingReplicaSaysToInit() throws {
        let cli = try CLIHarness()
        let result = try cli.run("rules", "list")
        #expect(result.status == 2 && result.stderr.contains("brsync init"))
    }

    @Test func aLockedReplicaWaitsForTheBusyTimeoutThenFails() throws {
        let cli = try CLIHarness()
        try cli.standardSetup()
        let holder = try Database(path: cli.replicaFile)
        try holder.execute("BEGIN EXCLUSIVE")
        let start = Date()
        let result = try cli.run(["rules", "add", "a.com", "firefox"], environment: ["BRSYNC_BUSY_TIMEOUT_MS": "300"])
        let waited = Date().timeIntervalSince(start)
        #expect(result.status == 2 && result.stderr.contains("locked by another process"), "\(result)")
        #expect(waited >= 0.25, "it waited for the busy timeout (\(waited) s)")
        // Resolving reads, and works while another process holds the write lock.
        #expect(try cli.run("resolve", "https://github.com").status == 0)
        try holder.execute("ROLLBACK")
        #expect(try cli.run("rules", "add", "a.com", "firefox").status == 0)
    }
}
