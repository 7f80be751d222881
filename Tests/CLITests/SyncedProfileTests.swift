import Foundation
import Glibc
import TestSupport
import Testing

/// Synced data never chooses what runs: a profile made on one machine with
/// arguments beyond what a profile needs waits for approval on every other
/// machine (a click passes it over, and says why), goes through only once
/// approved there, and a readable account's server refuses it. Ordinary
/// profiles work everywhere, their arguments placed after the browser's own
/// program however it is launched (a Flatpak here).
@Suite(.serialized) struct SyncedProfileTests {
    /// Programs that record how they were started, one line per start:
    /// the program's name and each argument in brackets.
    final class Programs: @unchecked Sendable {
        // Written in init, then only read.
        let bin: String
        let log: String

        init(_ world: CLIWorld) throws {
            bin = world.directory.file("bin")
            log = world.directory.file("launched")
            try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
            let recorder =
                "#!/bin/sh\nline=\"$(basename \"$0\")\"\nfor a in \"$@\"; do line=\"$line [$a]\"; done\nprintf '%s\\n' \"$line\" >> '\(log)'\n"
            for program in ["fakechromium", "fakefox", "flatpak", "notify-send"] {
                try writeScript("\(bin)/\(program)", recorder)
            }
        }

        var lines: [String] {
            (try? String(contentsOfFile: log, encoding: .utf8))?.split(separator: "\n").map(String.init) ?? []
        }

        /// Waits (bounded) for `count` starts in all; the lines.
        func wait(for count: Int) -> [String] {
            for _ in 0..<300 where lines.count < count { usleep(10_000) }
            return lines
        }
    }

    /// `brsync ARGUMENTS` in `home`, with the fake programs first on the PATH (no terminal: notifications).
    static func run(
        _ world: CLIWorld, _ programs: Programs, _ home: String, _ arguments: [String], stdin: String? = nil
    ) throws -> ProcessResult {
        try ProcessRunner.run(
            world.brsync, arguments, environment: ["BRSYNC_HOME": home, "PATH": "\(programs.bin):/usr/bin:/bin"],
            stdin: stdin)
    }

    /// The starts of browsers among the lines (not the notifications, which may quote a flag).
    static func browserStarts(_ lines: [String]) -> [String] { lines.filter { !$0.hasPrefix("notify-send") } }

    @Test func aProfileWithOtherArgumentsWaitsForApprovalOnEveryOtherMachine() throws {
        let world = try CLIWorld(.sqlite)
        let programs = try Programs(world)
        let (laptop, desktop) = (try world.replica("laptop"), try world.replica("desktop"))
        // The account is encrypted: its server cannot look at profiles, so every machine checks them.
        try world.encryptAccount(on: laptop, sharingWith: [desktop])
        // The laptop runs Chromium itself; the desktop runs it as a Flatpak.
        try world.mustRun(laptop, ["browsers", "add", "chromium", "--exec", "\(programs.bin)/fakechromium %u"])
        try world.mustRun(
            desktop, ["browsers", "add", "chromium", "--exec", "\(programs.bin)/flatpak run org.chromium.Chromium %u"])
        for home in [laptop, desktop] {
            try world.mustRun(home, ["browsers", "add", "firefox", "--exec", "\(programs.bin)/fakefox %u"])
            try world.mustRun(home, ["browsers", "default", "firefox"])
        }
        let made = try world.run(
            laptop,
            ["browsers", "add", "work", "--from", "chromium", "--args", "--renderer-cmd-prefix=touch /tmp/pwned"])
        #expect(made.status == 0 && made.stderr.contains("these arguments run on this machine only"), "\(made)")
        try world.mustRun(
            laptop, ["browsers", "add", "home", "--from", "chromium", "--args", "--profile-directory=Home"])
        try world.mustRun(laptop, ["browsers", "add", "fx", "--from", "firefox", "--args", "-P work"])
        for (pattern, browser) in [("work.example", "work"), ("home.example", "home"), ("fx.example", "fx")] {
            try world.mustRun(laptop, ["rules", "add", pattern, browser])
        }
        try world.mustRun(laptop, ["sync"])
        let pulled = try world.run(desktop, ["sync"])
        #expect(
            pulled.status == 0 && pulled.stdout.contains("profile 'work' waits for your approval here")
                && !pulled.stdout.contains("profile 'home'"), "\(pulled)")

        // The desktop names it everywhere, and never runs it.
        let list = try world.run(desktop, ["browsers", "list"]).stdout
        #expect(list.contains("waits for approval ('brsync browsers approve work')"), "\(list)")
        let explained = try world.run(desktop, ["explain", "https://work.example/x"]).stdout
        #expect(
            explained.contains("wait for your approval on this machine") && explained.contains("--renderer-cmd-prefix"),
            "\(explained)")
        let doctor = try Self.run(world, programs, desktop, ["doctor"])
        #expect(
            doctor.stdout.contains("browser work") && doctor.stdout.contains("brsync browsers approve work"),
            "\(doctor)")
        let click = try Self.run(world, programs, desktop, ["open", "https://work.example/x"])
        #expect(click.status == 0 && click.stderr.contains("wait for your approval"), "\(click)")
        var lines = programs.wait(for: 2)
        #expect(lines.contains("fakefox [https://work.example/x]"), "the default browser opened it: \(lines)")
        #expect(lines.contains { $0.hasPrefix("notify-send") && $0.contains("wait for your approval") }, "\(lines)")
        #expect(
            !Self.browserStarts(lines).contains { $0.contains("renderer-cmd-prefix") }, "the flag was passed: \(lines)")

        // Ordinary profiles run everywhere, their arguments given to the browser, not to flatpak.
        #expect(try Self.run(world, programs, desktop, ["open", "https://home.example/"]).status == 0)
        #expect(try Self.run(world, programs, desktop, ["open", "https://fx.example/"]).status == 0)
        lines = programs.wait(for: 4)
        #expect(
            lines.contains("flatpak [run] [org.chromium.Chromium] [--profile-directory=Home] [https://home.example/]"),
            "\(lines)")
        #expect(lines.contains("fakefox [-P] [work] [https://fx.example/]"), "\(lines)")

        // Approval shows what would run; without --yes (and no terminal) nothing changes.
        let shown = try world.run(desktop, ["browsers", "approve", "work"])
        #expect(
            shown.status != 0
                && shown.stdout.contains("flatpak run org.chromium.Chromium --renderer-cmd-prefix=touch /tmp/pwned %u"),
            "\(shown)")
        #expect(try world.run(desktop, ["browsers", "list"]).stdout.contains("waits for approval"))
        let approved = try world.run(desktop, ["browsers", "approve", "work", "--yes"])
        #expect(approved.status == 0 && approved.stdout.contains("approved here"), "\(approved)")
        #expect(try Self.run(world, programs, desktop, ["open", "https://work.example/y"]).status == 0)
        lines = programs.wait(for: 5)
        #expect(
            lines.contains(
                "flatpak [run] [org.chromium.Chromium] [--renderer-cmd-prefix=touch] [/tmp/pwned] [https://work.example/y]"
            ),
            "approved, it runs as its maker made it: \(lines)")
        // On the machine that made it, it ran all along.
        #expect(try Self.run(world, programs, laptop, ["open", "https://work.example/z"]).status == 0)
        #expect(
            programs.wait(for: 6).contains(
                "fakechromium [--renderer-cmd-prefix=touch] [/tmp/pwned] [https://work.example/z]"))

        // A change of the arguments on the laptop waits again on the desktop.
        try world.mustRun(
            laptop, ["browsers", "add", "work", "--from", "chromium", "--args", "--gpu-launcher=/bin/sh"])
        try world.mustRun(laptop, ["sync"])
        let again = try world.run(desktop, ["sync"])
        #expect(again.stdout.contains("profile 'work' waits for your approval here"), "\(again)")
        #expect(try Self.run(world, programs, desktop, ["open", "https://work.example/w"]).status == 0)
        lines = programs.wait(for: 8)
        #expect(
            !Self.browserStarts(lines).contains { $0.contains("gpu-launcher") }
                && lines.contains("fakefox [https://work.example/w]"), "\(lines)")
    }

    /// In a readable account the server refuses such a profile, so machines
    /// that predate the check never get it; the maker keeps and runs it.
    @Test(arguments: StoreKind.allCases) func aReadableAccountsServerRefusesOtherArguments(_ store: StoreKind) throws {
        let world = try CLIWorld(store)
        let (laptop, desktop) = (try world.replica("laptop"), try world.replica("desktop"))
        for home in [laptop, desktop] { try world.mustRun(home, ["browsers", "add", "chromium", "--exec", "true %u"]) }
        try world.mustRun(
            laptop,
            ["browsers", "add", "work", "--from", "chromium", "--args", "--renderer-cmd-prefix=touch /tmp/pwned"])
        try world.mustRun(
            laptop, ["browsers", "add", "home", "--from", "chromium", "--args", "--profile-directory=Home"])
        let pushed = try world.run(laptop, ["sync"])
        #expect(
            pushed.status == 0 && pushed.stderr.contains("the server did not take browsers 'work'")
                && pushed.stderr.contains("--renderer-cmd-prefix"), "\(pushed)")
        // The maker's log keeps which edit the server refused, and why.
        let log = try world.run(laptop, ["log"]).stdout
        #expect(
            log.split(separator: "\n").filter { $0.contains("refused by the server, never applied") }.map {
                $0.contains("browsers/work: ") && $0.contains("--renderer-cmd-prefix")
            } == [true], "\(log)")
        let logJSON = try world.run(laptop, ["log", "--json"]).stdout
        #expect(logJSON.contains(#""refusedByServer":"#), "\(logJSON)")
        try world.mustRun(desktop, ["sync"])
        let list = try world.run(desktop, ["browsers", "list", "--json"]).stdout
        #expect(list.contains(#""id":"home""#) && !list.contains(#""id":"work""#), "\(list)")
        let own = try world.run(laptop, ["browsers", "list", "--json"]).stdout
        #expect(own.contains(#""exec":"true --renderer-cmd-prefix=touch /tmp/pwned %u""#), "\(own)")
    }
}
