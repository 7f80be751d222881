import Foundation
import Storage
import TestSupport
import Testing

/// `brsyncd account limits` and what a machine says when its account is full.
@Suite(.serialized) struct QuotaCommandTests {
    @Test func limitsAreShownChangedAndNamedWhenReached() throws {
        let world = try CLIWorld()
        func brsyncd(_ arguments: [String]) throws -> ProcessResult {
            try ProcessRunner.run(world.brsyncd, arguments + world.storeArguments, environment: world.storeEnvironment)
        }
        let shown = try brsyncd(["account", "limits", "alice"])
        #expect(
            shown.status == 0 && shown.stdout.contains("records: 0 of 100000") && shown.stdout.contains("of 128.0 MiB")
                && shown.stdout.contains("devices: 0 of 64"), "\(shown)")
        let changed = try brsyncd([
            "account", "limits", "alice", "--records", "4", "--bytes", "1M", "--devices", "default",
        ])
        #expect(
            changed.status == 0 && changed.stdout.contains("records: 0 of 4") && changed.stdout.contains("of 1.0 MiB"),
            "\(changed)")
        for (option, value) in [
            ("--records", "0"), ("--records", "many"), ("--bytes", "12X"), ("--bytes", "-5"), ("--devices", ""),
        ] {
            let bad = try brsyncd(["account", "limits", "alice", option, value])
            #expect(bad.status != 0 && bad.stderr.contains(option), "\(option) \(value): \(bad)")
        }
        #expect(try brsyncd(["account", "limits", "nobody"]).stderr.contains("no account named 'nobody'"))
        // A machine whose account is full is told so, and keeps its edits.
        let laptop = try world.replica("laptop")
        try world.mustRun(laptop, ["browsers", "add", "firefox", "--exec", "true %u"])
        for site in ["a.example", "b.example", "c.example", "d.example"] {
            try world.mustRun(laptop, ["rules", "add", site, "firefox"])
        }
        let full = try world.run(laptop, ["sync"])
        #expect(
            full.status == 5 && full.stderr.contains("quota_exceeded")
                && full.stderr.contains("brsyncd account limits"), "\(full)")
        #expect(try world.run(laptop, ["rules", "list"]).stdout.contains("d.example"))
        let listed = try brsyncd(["account", "list"])
        #expect(listed.stdout.contains("alice\t1/64 device(s)"), "\(listed)")
        // Raised, the next sync sends everything.
        #expect(try brsyncd(["account", "limits", "alice", "--records", "default"]).status == 0)
        try world.mustRun(laptop, ["sync"])
        let fresh = try world.replica("fresh")
        try world.mustRun(fresh, ["sync"])
        #expect(try world.run(fresh, ["rules", "list"]).stdout.contains("d.example"))
        // Counts an edit outside brsyncd moved away (sqlite3) are put right while it serves.
        let database = try Database(path: world.db)
        let records = try #require(
            try database.scalar("SELECT COUNT(*) FROM records WHERE collection <> 'ledger'")?.int64Value)
        let held = try brsyncd(["account", "recount"])
        #expect(
            held.status == 0 && held.stdout.contains("alice: \(records) record(s)")
                && held.stdout.contains("right already"), "\(held)")
        try database.run("UPDATE accounts SET record_count = 1 WHERE name = 'alice'")
        let recounted = try brsyncd(["account", "recount", "alice"])
        #expect(
            recounted.status == 0 && recounted.stdout.contains("alice: 1 → \(records) record(s): put right")
                && !recounted.stdout.contains("bytes"), "only what was off: \(recounted)")
        #expect(try brsyncd(["account", "limits", "alice"]).stdout.contains("records: \(records) of 100000"))
        let unknown = try brsyncd(["account", "recount", "nobody"])
        #expect(unknown.status != 0 && unknown.stderr.contains("no account named 'nobody'"), "\(unknown)")
    }
}
