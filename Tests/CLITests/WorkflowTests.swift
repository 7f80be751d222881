import Foundation
import Storage
import TestSupport
import Testing

/// Whole flows a person goes through, with the real binary.
@Suite struct WorkflowTests {
    @Test func newestRuleWinsAmongEquals() throws {
        let cli = try CLIHarness()
        try cli.standardSetup()
        try cli.mustSucceed("rules", "add", "*.github.com", "firefox")
        // Both match; the newer rule got the higher priority.
        let result = try cli.run("resolve", "--json", "https://api.github.com/")
        #expect(result.stdout.contains("\"browser\":\"firefox\""))
        let list = try cli.run("rules", "list")
        let lines = list.stdout.split(separator: "\n")
        #expect(lines.count == 3 && lines[1].contains("*.github.com") && lines[2].contains("github.com"))
    }

    /// `rules add` on a rule held says what it changed, or that nothing
    /// did (and writes nothing then: the change log gains one change for
    /// the priority, none for the same rule again).
    @Test func addingARuleAgainSaysWhatChanged() throws {
        let cli = try CLIHarness()
        try cli.standardSetup()
        let changes = { try cli.run("log", "--limit", "100").stdout.split(separator: "\n").count }
        let logged = try changes()
        let priority = try cli.run("rules", "add", "github.com", "chrome", "--priority", "7")
        #expect(priority.stdout.hasPrefix("updated rule github.com: priority "), "\(priority)")
        #expect(priority.stdout.contains(" -> 7\n") && !priority.stdout.contains("browser"), "\(priority)")
        let again = try cli.run("rules", "add", "github.com", "chrome", "--priority", "7")
        #expect(again.stdout == "rule github.com -> chrome (priority 7) unchanged\n", "\(again)")
        #expect(try changes() == logged + 1, "the priority only, then nothing")
        let both = try cli.run("rules", "add", "github.com", "firefox", "--keep-tracking")
        #expect(
            both.stdout == "updated rule github.com: browser chrome -> firefox, keeps tracking parameters now\n",
            "\(both)")
    }

    /// A rule that matches but whose browser cannot open here (a profile
    /// synced from another machine, no command yet): `resolve` names the
    /// rule, the reason and the fix instead of "no rule decides".
    @Test func resolveNamesTheRuleItCouldNotUse() throws {
        let cli = try CLIHarness()
        try cli.mustSucceed("init")
        try cli.mustSucceed("browsers", "add", "work", "--name", "Work")
        try cli.mustSucceed("rules", "add", "github.com", "work")
        let result = try cli.run("resolve", "https://github.com/acme/x")
        #expect(result.status == 3, "\(result)")
        #expect(
            result.stdout.contains(
                "the rule 'github.com' matches, but browser 'work' has no launch command on this machine")
                && result.stdout.contains("brsync browsers add work --exec COMMAND"), "\(result.stdout)")
        // Nothing matching: as before.
        #expect(try cli.run("resolve", "https://example.org/").stdout.contains("no rule or default browser decides"))
    }

    /// `--home` goes before the subcommand too, as the README writes it, for
    /// the sync helper as well; without a folder it is an error.
    @Test func homeGoesBeforeTheSubcommand() throws {
        let cli = try CLIHarness()
        let other = cli.directory.file("other")
        let environment = ["BRSYNC_HOME": cli.directory.file("unused")]
        #expect(try cli.run(["--home", other, "init"], environment: environment).status == 0)
        #expect(
            try cli.run(
                ["--home=" + other, "browsers", "add", "firefox", "--exec", "firefox %u"], environment: environment
            ).status == 0)
        let list = try cli.run(["--home", other, "browsers", "list"], environment: environment)
        #expect(list.status == 0 && list.stdout.contains("firefox"), "\(list.stderr)")
        let status = try cli.run(["--home", other, "status"], environment: environment)
        #expect(status.status == 0 && status.stdout.contains("server:    none"), "\(status.stdout)\(status.stderr)")
        #expect(status.stdout.contains("clock:     not known yet"), "\(status.stdout)")
        // After contact, the offset in words (here as a sync would have stored it).
        let replica = try Database(path: other + "/replica.sqlite", mode: .readWrite)
        try replica.run("INSERT OR REPLACE INTO meta (key, value) VALUES ('epoch', 'e1'), ('clock_offset', '-7500000')")
        let skewed = try cli.run(["--home", other, "status"], environment: environment)
        #expect(skewed.stdout.contains("clock:     this machine is 2 h ahead of the server"), "\(skewed.stdout)")
        #expect(!FileManager.default.fileExists(atPath: cli.directory.file("unused")))
        let missing = try cli.run(["--home"], environment: environment)
        #expect(missing.status == 2 && missing.stderr.contains("--home needs a folder"), "\(missing.stderr)")
    }

    @Test func explainListsEveryRule() throws {
        let cli = try CLIHarness()
        try cli.standardSetup()
        try cli.mustSucceed("rules", "add", "github.com/work", "firefox", "--priority=-1")
        try cli.mustSucceed("rules", "add", "zoom.us", "firefox")
        let result = try cli.run("explain", "https://github.com/work/x")
        #expect(result.status == 0)
        #expect(result.stdout.contains("zoom.us -> firefox: no match: the host differs"))
        #expect(result.stdout.contains("github.com -> chrome: WON"))
        #expect(result.stdout.contains("github.com/work -> firefox: lost to github.com: lower priority (-1 < 0)"))
        #expect(result.stdout.contains("decision: chrome by rule github.com"))
        let json = try cli.run("explain", "--json", "https://github.com/work/x")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["browser"] as? String == "chrome" && object["rule"] as? String == "github.com")
        let rules = try #require(object["rules"] as? [[String: Any]])
        #expect(rules.map { $0["outcome"] as? String } == ["noMatch", "won", "lost"], "in precedence order: \(rules)")
        #expect(rules.last?["reason"] as? String == "to github.com: lower priority (-1 < 0)")
    }

    @Test func exportImportBetweenMachines() throws {
        let laptop = try CLIHarness()
        try laptop.standardSetup()
        try laptop.mustSucceed("rules", "add", "meet.google.com", "chrome", "--priority", "9")
        try laptop.mustSucceed("browsers", "default", "firefox")
        let exported = try laptop.run("export")
        #expect(exported.status == 0)
        let file = laptop.directory.file("rules.json")
        try Data(exported.stdout.utf8).write(to: URL(fileURLWithPath: file))

        let desktop = try CLIHarness()
        try desktop.mustSucceed("init")
        let imported = try desktop.run("import", file)
        #expect(imported.status == 0, "\(imported)")
        #expect(try desktop.run("export").stdout == exported.stdout)
        // Launch commands are this machine's: the desktop sets its own.
        #expect(try desktop.run("resolve", "https://meet.google.com/x").status == 3)
        try desktop.mustSucceed("browsers", "add", "chrome", "--exec", "chromium %u")
        let resolved = try desktop.run("resolve", "--json", "https://meet.google.com/x")
        #expect(resolved.status == 0 && resolved.stdout.contains("\"rule\":\"meet.google.com\""))
    }

    @Test func browsersListShowsUsability() throws {
        let cli = try CLIHarness()
        try cli.standardSetup()
        try cli.mustSucceed("browsers", "add", "work", "--name", "Work Profile")
        try cli.mustSucceed("browsers", "default", "firefox")
        let json = try cli.run("browsers", "list", "--json")
        struct Entry: Decodable { let id: String; let usable: Bool; let `default`: Bool }
        let entries = try JSONDecoder().decode([Entry].self, from: Data(json.stdout.utf8))
        #expect(entries.map(\.id) == ["chrome", "firefox", "work"])
        #expect(entries.map(\.usable) == [true, true, false])
        #expect(entries.map(\.default) == [false, true, false])
    }

    @Test func logShowsChangesNewestFirst() throws {
        let cli = try CLIHarness()
        try cli.standardSetup()
        try cli.mustSucceed("rules", "rm", "github.com")
        let log = try cli.run("log", "--limit", "2")
        let lines = log.stdout.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines[0].contains("rules/github.com: deleted=true"))
        #expect(lines[1].contains("rules/github.com") && lines[1].contains("browser=\"chrome\""))
    }

    @Test func helpAndVersionExitZero() throws {
        let cli = try CLIHarness()
        let help = try cli.run("--help")
        #expect(help.status == 0 && help.stdout.contains("rules"))
        let version = try cli.run("--version")
        #expect(version.status == 0 && !version.stdout.isEmpty)
    }

    /// The pattern language is in the manual, where a rule is added, not
    /// only in the README; every example it gives is a valid pattern.
    @Test func rulesAddHelpTeachesThePatternLanguage() throws {
        let cli = try CLIHarness()
        let help = try cli.run("rules", "add", "--help")
        #expect(help.status == 0)
        for example in [
            "*.google.com", "github.com/user/*", "example.com:8443", "youtube.com/watch?v=*", "file:///home/me/docs/**",
            "--priority=-5", "brsync rules test PATTERN URL",
        ] {
            #expect(help.stdout.contains(example), "\(example)")
        }
        try cli.mustSucceed("init")
        try cli.mustSucceed("browsers", "add", "firefox")
        for pattern in [
            "github.com", "*.google.com", "github.com/user/*", "github.com/user", "example.com:8443",
            "youtube.com/watch?v=*",
            "https://example.com", "file:///home/me/docs/**",
        ] {
            try cli.mustSucceed("rules", "add", pattern, "firefox")
        }
        let test = try cli.run("rules", "test", "google.com", "https://google.com@evil.com")
        #expect(test.status == 1, "the help's example: no match")
    }
}
