import Foundation
import Glibc
import Storage
import TestSupport
import Testing

/// `brsync doctor` on setups broken in each way it checks: each problem is
/// named with the command that fixes it, the exit status says whether all
/// is well, and nothing is changed.
@Suite struct DoctorTests {
    /// brsync made the default browser, then removed without `brsync
    /// uninstall` (a package removed, a copy deleted): the entry names the
    /// program in TryExec, so desktops that read it skip the entry, and
    /// doctor, run from a brsync still here, names the entry and the fix.
    @Test func aDefaultBrowserWhoseBrsyncIsGoneIsNamed() throws {
        let world = try CLIWorld(.sqlite)
        let laptop = try world.replica("laptop")
        let user = world.directory.file("user")
        let gone = world.directory.file("gone")
        try FileManager.default.createDirectory(atPath: gone, withIntermediateDirectories: true)
        for program in ["brsync", "brsync-sync"] {
            try FileManager.default.copyItem(
                atPath: ProcessRunner.binary(program), toPath: "\(gone)/\(program)")
        }
        let environment = ["BRSYNC_HOME": laptop, "HOME": user]
        let installed = try ProcessRunner.run("\(gone)/brsync", ["install", "--force"], environment: environment)
        try #require(installed.status == 0, "\(installed)")
        let entry = try String(
            contentsOfFile: "\(user)/.local/share/applications/brsync.desktop", encoding: .utf8)
        #expect(entry.contains("TryExec=\(gone)/brsync\n"), "\(entry)")
        try FileManager.default.removeItem(atPath: gone)
        let doctor = try ProcessRunner.run(world.brsync, ["doctor"], environment: environment)
        #expect(
            doctor.status == 1 && doctor.stdout.contains("runs a brsync that cannot start")
                && doctor.stdout.contains("fix: brsync install (from the brsync to use)"),
            "\(doctor.stdout)")
    }

    @Test func doctorNamesWhatIsWrongAndTheFix() throws {
        let world = try CLIWorld(.sqlite)
        let laptop = try world.replica("laptop")
        let user = world.directory.file("user")
        func run(_ arguments: [String], home: String? = nil) throws -> ProcessResult {
            try ProcessRunner.run(world.brsync, arguments, environment: ["BRSYNC_HOME": home ?? laptop, "HOME": user])
        }
        func mustRun(_ arguments: [String]) throws {
            let result = try run(arguments)
            #expect(result.status == 0, "\(arguments): \(result)")
        }

        // No replica: the first fix is init.
        let none = try run(["doctor"], home: world.directory.file("nothing"))
        #expect(
            none.status == 1 && none.stdout.contains("PROBLEM replica") && none.stdout.contains("fix: brsync init"),
            "\(none)")

        // A browser whose program is missing; brsync not the default browser.
        try mustRun(["browsers", "add", "firefox", "--exec", "/bin/true %u"])
        try mustRun(["browsers", "add", "ghost", "--exec", "no-such-ghost %u"])
        let before = try run(["rules", "list"]).stdout
        let broken = try run(["doctor"])
        #expect(broken.status == 1, "\(broken)")
        #expect(
            broken.stdout.contains("PROBLEM browser ghost: its command cannot start: 'no-such-ghost' not found"),
            "\(broken.stdout)")
        #expect(
            broken.stdout.contains("PROBLEM default browser") && broken.stdout.contains("fix: brsync install"),
            "\(broken.stdout)")
        #expect(broken.stdout.contains("ok      server: \(world.url) answered"), "\(broken.stdout)")
        // No display in a test: a note, not a problem.
        #expect(broken.stdout.contains("note    picker"), "\(broken.stdout)")

        // Fixed as it says: all is well.
        try mustRun(["browsers", "rm", "ghost"])
        try mustRun(["install"])
        let healthy = try run(["doctor"])
        #expect(
            healthy.status == 0 && healthy.stdout.contains("all is well") && !healthy.stdout.contains("PROBLEM"),
            "\(healthy.stdout)")
        #expect(try run(["rules", "list"]).stdout == before, "doctor changes nothing")

        // The desktop entry of another replica.
        let other = world.directory.file("other")
        #expect(try run(["init"], home: other).status == 0)
        #expect(try run(["install", "--force"], home: other).status == 0)
        let elsewhere = try run(["doctor"])
        #expect(
            elsewhere.status == 1
                && elsewhere.stdout.contains("opens links with the replica in \(other), not this one"),
            "\(elsewhere.stdout)")
        try mustRun(["install"])

        // A token the server does not know.
        let token = laptop + "/token"
        let working = try String(contentsOfFile: token, encoding: .utf8)
        try mustRun(["remote", "set", world.url, "--token", "brs_notAValidTokenAtAll1234"])
        let refused = try run(["doctor"])
        #expect(
            refused.status == 1 && refused.stdout.contains("PROBLEM server") && refused.stdout.contains("unauthorized")
                && refused.stdout.contains("brsync join --replace"), "\(refused.stdout)")
        // A refusal is an answer all the same: the server's clock is known from it.
        #expect(try run(["sync"]).status != 0)
        let status = try run(["status"])
        #expect(
            !status.stdout.contains("no contact with a server") && status.stdout.contains("clock:     "),
            "\(status.stdout)")
        // A certificate this machine does not trust: the fix names the certificate authority.
        try working.write(toFile: token, atomically: true, encoding: .utf8)
        try mustRun(["remote", "set", world.url, "--token-file", token, "--system-ca"])
        let untrusted = try run(["doctor"])
        #expect(
            untrusted.status == 1 && untrusted.stdout.contains("is not trusted")
                && untrusted.stdout.contains("--ca FILE"), "\(untrusted.stdout)")
        // A server that does not answer.
        try working.write(toFile: token, atomically: true, encoding: .utf8)
        try mustRun(["remote", "set", "https://127.0.0.1:9", "--token-file", token, "--system-ca"])
        let unreachable = try run(["doctor", "--json"])
        #expect(
            unreachable.status == 1 && unreachable.stdout.contains(#""check":"server""#)
                && unreachable.stdout.contains(#""state":"problem""#)
                && unreachable.stdout.contains("cannot reach the server"), "\(unreachable.stdout)")
        // A refused connection is not about certificates.
        #expect(
            unreachable.stdout.contains("check that the server runs")
                && !unreachable.stdout.contains("certificate authority"), "\(unreachable.stdout)")
    }
}

extension DoctorTests {
    /// A block-level copy of this home (same file identity, same device id)
    /// that made the next change under the id first: doctor, run on the
    /// machine that did not make it, says so and what to do; on the one that
    /// did, nothing; asking changes nothing.
    @Test func aCopyOfThisHomeSyncingUnderItsIdIsNamed() throws {
        let world = try CLIWorld(.sqlite)
        let laptop = try world.replica("laptop")
        let user = world.directory.file("user")
        func run(_ arguments: [String], home: String) throws -> ProcessResult {
            try ProcessRunner.run(world.brsync, arguments, environment: ["BRSYNC_HOME": home, "HOME": user])
        }
        func mustRun(_ arguments: [String], home: String) throws {
            let result = try run(arguments, home: home)
            #expect(result.status == 0, "\(arguments): \(result)")
        }
        try mustRun(["browsers", "add", "firefox", "--exec", "/bin/true %u"], home: laptop)
        try mustRun(["rules", "add", "one.example", "firefox"], home: laptop)
        try mustRun(["sync"], home: laptop)
        let copy = world.directory.file("copy")
        try FileManager.default.copyItem(atPath: laptop, toPath: copy)
        try Database(path: copy + "/replica.sqlite").run("DELETE FROM meta WHERE key = 'instance'")
        try mustRun(["rules", "add", "two.example", "firefox"], home: laptop)
        try mustRun(["rules", "add", "three.example", "firefox"], home: copy)
        try mustRun(["sync"], home: laptop)
        let before = try run(["rules", "list"], home: copy).stdout
        let copied = try run(["doctor"], home: copy)
        #expect(
            copied.status == 1
                && copied.stdout.contains(
                    "PROBLEM this machine's changes: the server holds changes under this machine's device id that this machine did not make"
                ) && copied.stdout.contains("fix: brsync sync after an edit"), "\(copied.stdout)")
        #expect(try run(["rules", "list"], home: copy).stdout == before, "doctor changes nothing")
        #expect(!(try run(["doctor"], home: laptop).stdout.contains("this machine's changes")))
        // Its next sync takes an id of its own, and says how to name it; then all is said.
        let forked = try run(["sync"], home: copy)
        #expect(
            forked.status == 0 && forked.stdout.contains("this replica is now device ")
                && forked.stdout.contains("name it: 'brsync device name NAME'"), "\(forked)")
        #expect(!(try run(["doctor"], home: copy).stdout.contains("this machine's changes")))
    }

    /// Doctor is run when syncing seems stuck: behind a sync that holds the
    /// replica it does not wait (a couple of seconds), and names the process.
    @Test func aSyncThatHoldsTheReplicaIsNamed() throws {
        let world = try CLIWorld(.sqlite)
        let laptop = try world.replica("laptop")
        try world.mustRun(laptop, ["sync"])
        let lock = open("\(laptop)/sync.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        defer { close(lock) }
        #expect(lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) == 0)
        let pid = Array("\(getpid())\n".utf8)
        _ = pid.withUnsafeBytes { pwrite(lock, $0.baseAddress, $0.count, 0) }
        let started = Date()
        let doctor = try world.run(laptop, ["doctor"])
        #expect(Date().timeIntervalSince(started) < 30, "doctor waited behind the sync")
        #expect(
            doctor.status == 1
                && doctor.stdout.contains("PROBLEM sync: another sync of this replica (process \(getpid()))"),
            "\(doctor.stdout)")
    }

    /// After `browsers rm`, the rules that still name the browser are
    /// marked in `rules list`, explained by `explain`, and reported by
    /// `doctor` (a problem, with the fix); a browser only disabled is a note.
    @Test func rulesWhoseBrowserIsGoneAreMarkedAndReported() throws {
        let cli = try CLIHarness()
        try cli.standardSetup()
        try cli.mustSucceed("browsers", "default", "firefox")
        try cli.mustSucceed("install")
        try cli.mustSucceed("browsers", "add", "brave", "--exec", "brave %u")
        try cli.mustSucceed("rules", "add", "x.example", "brave")
        let before = try cli.run("doctor")
        #expect(!before.stdout.contains("rules:"), "\(before.stdout)")
        let removed = try cli.run("browsers", "rm", "brave")
        #expect(removed.status == 0 && removed.stderr.contains("still name 'brave'"), "\(removed)")

        let list = try cli.run("rules", "list")
        let line = list.stdout.split(separator: "\n").first { $0.contains("x.example") } ?? ""
        #expect(line.contains("decides nothing: browser 'brave' is not known here"), "\(list.stdout)")
        #expect(
            !(list.stdout.split(separator: "\n").first { $0.contains("github.com") } ?? "").contains("decides nothing"))
        #expect(list.stdout.contains("1 rule(s) decide nothing here"), "\(list.stdout)")

        let explained = try cli.run("explain", "https://x.example/a")
        #expect(
            explained.stdout.contains("decision: firefox (default browser)")
                && explained.stdout.contains(
                    "note: the rule 'x.example' matches, but browser 'brave' is not known here")
                && explained.stdout.contains("brsync browsers add brave"), "\(explained.stdout)")

        let doctor = try cli.run("doctor")
        #expect(
            doctor.status == 1
                && doctor.stdout.contains("PROBLEM rules: 1 rule(s) name a browser this replica does not have (brave)")
                && doctor.stdout.contains("'x.example' -> brave") && doctor.stdout.contains("brsync rules rm PATTERN"),
            "\(doctor.stdout)")
        #expect(!doctor.stdout.contains("all is well"))

        // Back again: nothing to say. Disabled: a note, not a problem.
        try cli.mustSucceed("browsers", "add", "brave", "--exec", "brave %u")
        try cli.mustSucceed("browsers", "disable", "brave")
        let disabled = try cli.run("doctor")
        #expect(
            disabled.stdout.contains("note    rules: 1 rule(s) decide nothing on this machine")
                && !disabled.stdout.contains("PROBLEM rules"),
            "\(disabled.stdout)")
    }
}
