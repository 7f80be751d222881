import Foundation
import TestSupport
import Testing

/// The bash completion script `brsync --generate-completion-script bash`
/// prints (what `scripts/install` installs), run by a real bash as it runs
/// it on <Tab>: browser ids, rule patterns, conflict numbers and tracking
/// parameters come from the replica.
@Suite struct CompletionTests {
    /// What bash offers for the last of `words` (the word being typed).
    static func complete(_ cli: CLIHarness, _ words: [String], environment: [String: String] = [:]) throws -> [String] {
        let script = cli.directory.file("brsync.bash")
        if !FileManager.default.fileExists(atPath: script) {
            let generated = try cli.run("--generate-completion-script", "bash")
            #expect(
                generated.status == 0
                    && generated.stdout.hasSuffix("complete -o filenames -F _brsync_home_first brsync\n"))
            try generated.stdout.write(toFile: script, atomically: true, encoding: .utf8)
        }
        // Set as bash sets them on <Tab>, then the completion function is called
        // with the command, the current word and the one before it.
        let driver = """
            source "$1"; shift
            COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
            # The function `complete` names for brsync, as bash would call it.
            function=$(complete -p brsync | sed 's/.*-F \\([^ ]*\\).*/\\1/')
            "$function" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        let folder = URL(fileURLWithPath: cli.binary).deletingLastPathComponent().path
        var env = environment
        env["PATH"] = folder + ":/usr/bin:/bin"
        let result = try cli.run(
            ["-c", driver, "complete", script] + ["brsync"] + words, environment: env, program: "/bin/bash")
        #expect(result.status == 0 && result.stderr.isEmpty, "\(words): \(result)")
        return result.stdout.split(separator: "\n").map(String.init)
    }

    @Test func completesFromTheReplica() throws {
        let cli = try CLIHarness()
        try cli.standardSetup()
        try cli.mustSucceed("rules", "add", "*.gitlab.com", "firefox")
        try cli.mustSucceed("browsers", "add", "work", "--from", "firefox", "--args", "-P work")

        #expect(try Self.complete(cli, ["ru"]) == ["rules"])
        #expect(try Self.complete(cli, ["rules", "rm", ""]).sorted() == ["*.gitlab.com", "github.com"])
        #expect(try Self.complete(cli, ["rules", "rm", "gi"]) == ["github.com"])
        #expect(try Self.complete(cli, ["rules", "test", "git"]) == ["github.com"])
        #expect(try Self.complete(cli, ["rules", "add", "example.org", ""]).sorted() == ["chrome", "firefox", "work"])
        #expect(try Self.complete(cli, ["browsers", "default", "w"]) == ["work"])
        #expect(try Self.complete(cli, ["browsers", "add", "work", "--from", "f"]) == ["firefox"])
        // browsers add: what is here first, then the catalog.
        let add = try Self.complete(cli, ["browsers", "add", "chrom"])
        #expect(add.first == "chrome" && add.contains("chromium"), "\(add)")
        #expect(try Self.complete(cli, ["cleanup", "params", "--remove", "fbc"]) == ["fbclid"])
    }

    @Test func completesFromTheHomeTypedOnTheLine() throws {
        let cli = try CLIHarness()
        try cli.standardSetup()
        let elsewhere = ["BRSYNC_HOME": cli.directory.file("nothing-here")]
        #expect(
            try Self.complete(cli, ["rules", "rm", "--home", cli.home, ""], environment: elsewhere) == ["github.com"])
        #expect(
            try Self.complete(cli, ["rules", "rm", "--home=\(cli.home)", ""], environment: elsewhere) == ["github.com"])
        // Before the command too, as brsync takes it.
        #expect(
            try Self.complete(cli, ["--home", cli.home, "rules", "rm", ""], environment: elsewhere) == ["github.com"])
        #expect(
            try Self.complete(cli, ["--home", cli.home, "rules", "rm", "git"], environment: elsewhere) == ["github.com"]
        )
        #expect(try Self.complete(cli, ["--home", cli.home, "ru"], environment: elsewhere) == ["rules"])
        #expect(
            try Self.complete(cli, ["--home=\(cli.home)", "browsers", "default", "f"], environment: elsewhere) == [
                "firefox"
            ])
    }

    /// No replica, or one that is not a replica: nothing is offered and
    /// nothing is printed into the command line.
    @Test func completesNothingWithoutAReplica() throws {
        let cli = try CLIHarness()
        #expect(try Self.complete(cli, ["rules", "rm", ""]).isEmpty)
        try FileManager.default.createDirectory(atPath: cli.home, withIntermediateDirectories: true)
        try "not a database".write(toFile: cli.replicaFile, atomically: true, encoding: .utf8)
        #expect(try Self.complete(cli, ["browsers", "default", ""]).isEmpty)
        #expect(try String(contentsOfFile: cli.replicaFile, encoding: .utf8) == "not a database")
    }

    @Test func everyShellGetsAScript() throws {
        let cli = try CLIHarness()
        for (shell, marker) in [("bash", "_brsync"), ("zsh", "#compdef brsync"), ("fish", "complete -c 'brsync'")] {
            let script = try cli.run("--generate-completion-script", shell)
            #expect(
                script.status == 0 && script.stdout.contains(marker) && script.stdout.contains("---completion"),
                "\(shell)")
        }
    }
}
