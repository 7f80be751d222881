import BrsyncServer
import Foundation
import ServerStore
import TestSupport
import Testing

/// Nothing leaves a replica unrecorded: a sync that drops records the
/// server no longer has (deleted on another machine, the deletion since
/// purged) names them, `log --removed` lists them whole, and `restore
/// --removed` brings one back everywhere.
@Suite(.serialized) struct RemovedRecordsTests {
    @Test func aSyncNamesWhatItRemovesAndRestoreBringsItBack() throws {
        let world = try CLIWorld()
        let laptop = try world.replica("laptop")
        let desktop = try world.replica("desktop")
        for home in [laptop, desktop] {
            try world.mustRun(home, ["browsers", "add", "firefox", "--exec", "firefox %u"])
        }
        try world.mustRun(laptop, ["rules", "add", "gone.example", "firefox", "--priority", "4"])
        try world.mustRun(laptop, ["rules", "add", "kept.example", "firefox"])
        for home in [laptop, desktop] { try world.mustRun(home, ["sync"]) }
        // The desktop is away (revoked) while the laptop deletes the rule and the server purges the deletion.
        #expect(
            try ProcessRunner.run(world.brsyncd, ["device", "revoke", "alice", "desktop", "--db", world.db]).status == 0
        )
        try world.mustRun(laptop, ["rules", "rm", "gone.example"])
        // (Twice: the second sync's pull tells the server the laptop has the deletion.)
        for _ in 0..<2 { try world.mustRun(laptop, ["sync"]) }
        let port = world.port
        world.stop()
        let store = try SyncStore(sqlite: world.db)
        #expect(try store.purgeTombstones(retentionMilliseconds: 0) == 1)
        store.close()
        try world.start(port: port)
        // Back with a new token, the desktop reconciles: the rule goes, named.
        try world.mustRun(
            desktop,
            [
                "remote", "set", world.url, "--token", try world.token("desktop-again"), "--ca",
                world.directory.file("ca.pem"),
            ])
        let synced = try world.run(desktop, ["sync"])
        #expect(
            synced.status == 0 && synced.stdout.contains("removed 1 record(s) deleted on another machine"), "\(synced)")
        #expect(
            synced.stdout.contains("rules 'gone.example' (#1)")
                && synced.stdout.contains("brsync restore --removed ID"), "\(synced)")
        let listed = try world.run(desktop, ["log", "--removed"])
        #expect(
            listed.status == 0 && listed.stdout.contains("#1 ")
                && listed.stdout.contains(#"rules/gone.example: browser="firefox""#), "\(listed)")
        #expect(listed.stdout.contains("priority=4"), "\(listed)")
        let json = try world.run(desktop, ["log", "--removed", "--json"])
        #expect(json.stdout.hasPrefix("[{") && json.stdout.contains(#""restoredAt":null"#), "\(json)")
        // Bad input: a clear error, nothing changed.
        let before = try world.snapshot(desktop)
        let unknown = try world.run(desktop, ["restore", "--removed", "99"])
        #expect(unknown.status != 0 && unknown.stderr.contains("no removed record #99"), "\(unknown)")
        let both = try world.run(desktop, ["log", "--removed", "--conflicts"])
        #expect(both.status != 0 && both.stderr.contains("give one"), "\(both)")
        #expect(try world.snapshot(desktop) == before)
        // Restored, it comes back on every machine; twice is refused.
        try world.mustRun(desktop, ["restore", "--removed", "1"])
        let again = try world.run(desktop, ["restore", "--removed", "1"])
        #expect(again.status != 0 && again.stderr.contains("restored already"), "\(again)")
        try world.mustRun(desktop, ["sync"])
        try world.mustRun(laptop, ["sync"])
        let resolved = try world.run(laptop, ["resolve", "--json", "https://gone.example/"])
        #expect(resolved.stdout.contains(#""rule":"gone.example""#), "\(resolved)")
        #expect(try world.run(desktop, ["log", "--removed"]).stdout.contains("[restored "))
    }
}
