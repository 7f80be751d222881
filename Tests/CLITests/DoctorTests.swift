import Foundation
import Testing
import TestSupport

/// `brsync doctor` on setups broken in each way it checks: each problem is
/// named with the command that fixes it, the exit status says whether all
/// is well, and nothing is changed.
@Suite struct DoctorTests {
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
        #expect(none.status == 1 && none.stdout.contains("PROBLEM replica") && none.stdout.contains("fix: brsync init"), "\(none)")

        // A browser whose program is missing; brsync not the default browser.
        try mustRun(["browsers", "add", "firefox", "--exec", "/bin/true %u"])
        try mustRun(["browsers", "add", "ghost", "--exec", "no-such-ghost %u"])
        let before = try run(["rules", "list"]).stdout
        let broken = try run(["doctor"])
        #expect(broken.status == 1, "\(broken)")
        #expect(broken.stdout.contains("PROBLEM browser ghost: its command cannot start: 'no-such-ghost' not found"), "\(broken.stdout)")
        #expect(broken.stdout.contains("PROBLEM default browser") && broken.stdout.contains("fix: brsync install"), "\(broken.stdout)")
        #expect(broken.stdout.contains("ok      server: \(world.url) answered"), "\(broken.stdout)")
        // No display in a test: a note, not a problem.
        #expect(broken.stdout.contains("note    picker"), "\(broken.stdout)")

        // Fixed as it says: all is well.
        try mustRun(["browsers", "rm", "ghost"])
        try mustRun(["install"])
        let healthy = try run(["doctor"])
        #expect(healthy.status == 0 && healthy.stdout.contains("all is well") && !healthy.stdout.contains("PROBLEM"), "\(healthy.stdout)")
        #expect(try run(["rules", "list"]).stdout == before, "doctor changes nothing")

        // The desktop entry of another replica.
        let other = world.directory.file("other")
        #expect(try run(["init"], home: other).status == 0)
        #expect(try run(["install", "--force"], home: other).status == 0)
        let elsewhere = try run(["doctor"])
        #expect(elsewhere.status == 1 && elsewhere.stdout.contains("opens links with the replica in \(other), not this one"), "\(elsewhere.stdout)")
        try mustRun(["install"])

        // A token the server does not know.
        let token = laptop + "/token"
        let working = try String(contentsOfFile: token, encoding: .utf8)
        try mustRun(["remote", "set", world.url, "--token", "brs_notAValidTokenAtAll1234"])
        let refused = try run(["doctor"])
        #expect(refused.status == 1 && refused.stdout.contains("PROBLEM server") && refused.stdout.contains("unauthorized")
                && refused.stdout.contains("brsync join --replace"), "\(refused.stdout)")
        // A server that does not answer.
        try working.write(toFile: token, atomically: true, encoding: .utf8)
        try mustRun(["remote", "set", "https://127.0.0.1:9", "--token-file", token, "--system-ca"])
        let unreachable = try run(["doctor", "--json"])
        #expect(unreachable.status == 1 && unreachable.stdout.contains(#""check":"server""#) && unreachable.stdout.contains(#""state":"problem""#)
                && unreachable.stdout.contains("cannot reach the server"), "\(unreachable.stdout)")
    }
}
