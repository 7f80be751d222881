import Foundation
import JSON
import TestSupport
import Testing

/// The command-line contract scripts rely on (README, "Exit codes and output").
@Suite struct ContractTests {
    @Test func rulesTestExitCodes() throws {
        let cli = try CLIHarness()
        let match = try cli.run("rules", "test", "*.google.com", "https://mail.google.com/x")
        #expect(match.status == 0 && match.stdout == "match\n")
        let miss = try cli.run("rules", "test", "google.com", "https://google.com@evil.com/")
        #expect(miss.status == 1 && miss.stdout == "no match\n")
        let badPattern = try cli.run("rules", "test", "ftp://x.com", "https://x.com")
        #expect(badPattern.status == 2 && badPattern.stdout.isEmpty)
        #expect(badPattern.stderr.contains("invalid pattern 'ftp://x.com'"))
        let badURL = try cli.run("rules", "test", "x.com", "mailto:a@x.com")
        #expect(badURL.status == 2 && badURL.stderr.contains("not a web URL"))
    }

    /// Every `--json` prints one line of compact JSON, with what could
    /// disturb a terminal escaped; a failure, too, is one JSON object.
    @Test func everyJSONOutputIsOneLineAndFailuresAreJSONToo() throws {
        let cli = try CLIHarness()
        try cli.standardSetup()
        try cli.mustSucceed("browsers", "add", "tricky", "--name", "evil\u{202E}name", "--exec", "true %u")
        for arguments in [
            ["rules", "list", "--json"], ["browsers", "list", "--json"], ["status", "--json"], ["device", "--json"],
            ["log", "--json"],
            ["resolve", "--json", "https://github.com/x"],
        ] {
            let result = try cli.run(arguments)
            #expect(result.status == 0 && result.stdout.split(separator: "\n").count == 1, "\(arguments): \(result)")
            #expect(
                !result.stdout.unicodeScalars.contains { $0.isUnsafeToDisplay && $0 != "\n" },
                "\(arguments): \(result.stdout)")
            #expect((try? JSONValue.parse(result.stdout)) != nil, "\(arguments): \(result.stdout)")
        }
        #expect(try cli.run("browsers", "list", "--json").stdout.contains(#""name":"evil\u202ename""#))
        // Failures: a usage error, a bad URL, an unknown browser.
        for (arguments, message) in [
            (["rules", "list", "--json", "--bogus"], "Unknown option '--bogus'"),
            (["resolve", "--json", "mailto:a@x.com"], "not a web URL"),
            (["rules", "add", "x.example", "nosuch", "--json"], "Unknown option '--json'"),
        ] {
            let result = try cli.run(arguments)
            let failure = try JSONValue.parse(result.stdout)
            guard case .object(let members) = failure else {
                Issue.record("\(arguments): not an object: \(result.stdout)")
                continue
            }
            #expect(
                result.status == 2 && members["error"] == .string("error") && members["exit"] == .int(2),
                "\(arguments): \(result)")
            #expect(
                members["message"]?.stringValue?.contains(message) == true && result.stderr.contains(message),
                "\(arguments): \(result)")
        }
    }

    struct ResolveJSON: Decodable {
        let browser: String?
        let rule: String?
        let url: String
        let phone: String?
        let argv: [String]?
    }

    @Test func resolveJSONAndExitCodes() throws {
        let cli = try CLIHarness()
        try cli.standardSetup()
        let byRule = try cli.run("resolve", "--json", "HTTPS://Gist.GitHub.com/a?b=1")
        #expect(byRule.status == 0, "\(byRule)")
        let decided = try JSONDecoder().decode(ResolveJSON.self, from: Data(byRule.stdout.utf8))
        #expect(decided.browser == "chrome" && decided.rule == "github.com")
        #expect(decided.url == "https://gist.github.com/a?b=1")
        #expect(decided.phone == "googlechromes://gist.github.com/a?b=1")
        #expect(decided.argv == ["google-chrome", "https://gist.github.com/a?b=1"], "what this machine launches")

        let undecided = try cli.run("resolve", "--json", "https://example.com/")
        #expect(undecided.status == 3)
        let none = try JSONDecoder().decode(ResolveJSON.self, from: Data(undecided.stdout.utf8))
        #expect(
            none.browser == nil && none.rule == nil && none.phone == nil && none.argv == nil
                && none.url == "https://example.com/")
        #expect(undecided.stdout.contains("\"browser\":null"), "keys are present with null values")

        try cli.mustSucceed("browsers", "default", "firefox")
        let byDefault = try cli.run("resolve", "--json", "https://example.com/")
        #expect(byDefault.status == 0)
        let fallback = try JSONDecoder().decode(ResolveJSON.self, from: Data(byDefault.stdout.utf8))
        #expect(fallback.browser == "firefox" && fallback.rule == nil)
        #expect(fallback.phone == "firefox://open-url?url=https%3A%2F%2Fexample.com%2F")
        #expect(fallback.argv == ["firefox", "https://example.com/"])
        // The default can be cleared again (the picker then asks); a browser and --clear together are refused.
        #expect(try cli.run("browsers", "default", "firefox", "--clear").status == 2)
        #expect(try cli.run("browsers", "default").status == 2)
        try cli.mustSucceed("browsers", "default", "--clear")
        #expect(try cli.run("resolve", "--json", "https://example.com/").status == 3)
        try cli.mustSucceed("browsers", "default", "firefox")

        // A rule whose browser is disabled is skipped, not fatal.
        try cli.mustSucceed("browsers", "disable", "chrome")
        let skipped = try cli.run("resolve", "--json", "https://github.com/")
        #expect(skipped.status == 0)
        #expect(try JSONDecoder().decode(ResolveJSON.self, from: Data(skipped.stdout.utf8)).browser == "firefox")
    }

    /// A browser whose command is not installed here is not called usable.
    @Test func aBrowserWhoseCommandIsMissingIsSaidToBe() throws {
        let cli = try CLIHarness()
        try cli.mustSucceed("init")
        try cli.mustSucceed("browsers", "add", "firefox", "--exec", "no-such-program-xyz %u")
        try cli.mustSucceed("browsers", "add", "chromium", "--exec", "/bin/sh -c true %u")
        let listed = try cli.run("browsers", "list")
        #expect(listed.stdout.contains("not installed ('no-such-program-xyz' not found)"), "\(listed)")
        #expect(
            listed.stdout.split(separator: "\n").contains { $0.contains("chromium") && $0.contains("usable") },
            "\(listed)")
        let json = try cli.run("browsers", "list", "--json")
        #expect(
            json.stdout.contains(#""commandFound":false"#) && json.stdout.contains(#""commandFound":true"#), "\(json)")
        // Said when it is added; a directory or a file that cannot run is named as such.
        let added = try cli.run("browsers", "add", "edge", "--exec", "no-such-edge %u")
        #expect(
            added.status == 0 && added.stderr.contains("cannot start here yet: 'no-such-edge' not found"), "\(added)")
        let folder = cli.directory.file("a-folder")
        let plain = cli.directory.file("not-executable")
        mkdir(folder, 0o755)
        _ = FileManager.default.createFile(
            atPath: plain, contents: Data("#!/bin/sh\n".utf8), attributes: [.posixPermissions: 0o644])
        try cli.mustSucceed("browsers", "add", "dir", "--exec", folder + " %u")
        try cli.mustSucceed("browsers", "add", "file", "--exec", plain + " %u")
        let again = try cli.run("browsers", "list").stdout.split(separator: "\n")
        #expect(
            again.contains { $0.contains("dir") && $0.contains("cannot start ('\(folder)' is a directory)") },
            "\(again)")
        #expect(
            again.contains { $0.contains("file") && $0.contains("cannot start ('\(plain)' is not executable)") },
            "\(again)")
    }

    @Test func suggestPrintsThePatternAlone() throws {
        let cli = try CLIHarness()
        let result = try cli.run("suggest", "https://www.news.bbc.co.uk/x")
        #expect(result.status == 0 && result.stdout == "bbc.co.uk\n" && result.stderr.isEmpty)
        let local = try cli.run("suggest", "http://localhost:3000/")
        #expect(local.stdout == "localhost:3000\n")
    }

    @Test func suggestWithoutAUsablePublicSuffixList() throws {
        let cli = try CLIHarness()
        let missing = try cli.run(
            "suggest", "https://a.example.com", environment: ["BRSYNC_PUBLIC_SUFFIX_LIST": "/nonexistent/psl.dat"])
        #expect(missing.status == 2 && missing.stdout.isEmpty)
        #expect(missing.stderr.contains("Public Suffix List is missing") && missing.stderr.contains("publicsuffix"))

        let unreadable = cli.directory.file("psl-dir")
        try FileManager.default.createDirectory(atPath: unreadable, withIntermediateDirectories: true)
        let directory = try cli.run(
            "suggest", "https://a.example.com", environment: ["BRSYNC_PUBLIC_SUFFIX_LIST": unreadable])
        #expect(directory.status == 2 && directory.stderr.contains("cannot read the Public Suffix List"))

        let empty = cli.directory.file("empty.dat")
        try Data("// nothing\n".utf8).write(to: URL(fileURLWithPath: empty))
        let useless = try cli.run("suggest", "https://a.example.com", environment: ["BRSYNC_PUBLIC_SUFFIX_LIST": empty])
        #expect(useless.status == 2 && useless.stderr.contains("no public-suffix rule"))
    }

    @Test func initIsIdempotent() throws {
        let cli = try CLIHarness()
        let first = try cli.run("init", "--device-name", "laptop")
        #expect(first.status == 0 && first.stdout.contains("initialised"))
        let before = try cli.snapshot()
        let second = try cli.run("init", "--device-name", "desktop")
        #expect(second.status == 0 && second.stdout.contains("nothing changed") && second.stdout.contains("laptop"))
        #expect(try cli.snapshot() == before)
    }

    @Test func homeComesFromTheFlagTheEnvironmentOrXDG() throws {
        let cli = try CLIHarness()
        let flagHome = cli.directory.file("flag")
        #expect(try cli.run("init", "--home", flagHome).status == 0)
        #expect(FileManager.default.fileExists(atPath: flagHome + "/replica.sqlite"))
        let xdg = cli.directory.file("xdg")
        let viaXDG = try ProcessRunner.run(cli.binary, ["init"], environment: ["XDG_DATA_HOME": xdg])
        #expect(viaXDG.status == 0)
        #expect(FileManager.default.fileExists(atPath: xdg + "/brsync/replica.sqlite"))
    }
}

/// `resolve` is read by a fast path before the full parser; both must behave alike.
@Suite struct ResolveArgumentTests {
    @Test func everySpellingOfResolveWorks() throws {
        let cli = try CLIHarness()
        try cli.standardSetup()
        let other = cli.directory.path + "/other"
        try cli.mustSucceed("init", "--home", other)
        for (arguments, environmentHome) in [
            (["resolve", "--json", "https://github.com/x"], cli.home),
            (["resolve", "https://github.com/x", "--json"], cli.home),
            (["resolve", "--home", cli.home, "--json", "https://github.com/x"], other),
            (["resolve", "--home=\(cli.home)", "--json", "--", "https://github.com/x"], other),
        ] {
            let result = try cli.run(arguments, environment: ["BRSYNC_HOME": environmentHome])
            #expect(result.status == 0 && result.stdout.contains("\"browser\":\"chrome\""), "\(arguments): \(result)")
        }
        // BRSYNC_HOME applies when --home is not given.
        #expect(try cli.run(["resolve", "https://github.com/x"], environment: ["BRSYNC_HOME": other]).status == 3)
        // --home before, inside or after a command group and its subcommand.
        for arguments in [
            ["--home", cli.home, "rules", "list"], ["rules", "--home", cli.home, "list"],
            ["rules", "--home=\(cli.home)", "list"],
            ["rules", "list", "--home", cli.home],
        ] {
            let listed = try cli.run(arguments, environment: ["BRSYNC_HOME": other])
            #expect(listed.status == 0 && listed.stdout.contains("github.com"), "\(arguments): \(listed)")
        }
    }

    @Test func otherShapesGoThroughTheFullParser() throws {
        let cli = try CLIHarness()
        try cli.standardSetup()
        let help = try cli.run("resolve", "--help")
        #expect(help.status == 0 && help.stdout.contains("USAGE") || help.stdout.contains("Usage"))
        let missing = try cli.run("resolve")
        #expect(missing.status == 2 && missing.stderr.contains("Missing expected argument"))
        let twoURLs = try cli.run("resolve", "https://a.com", "https://b.com")
        #expect(twoURLs.status == 2 && twoURLs.stderr.contains("Unexpected argument"))
        let unknown = try cli.run("resolve", "--jsn", "https://a.com")
        #expect(unknown.status == 2 && unknown.stderr.contains("Unknown option"))
    }
}
