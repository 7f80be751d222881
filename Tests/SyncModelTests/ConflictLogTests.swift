import Glibc
import Replica
import SyncClient
import SyncCore
import Testing
import TestSupport

/// What `brsync log --conflicts` holds: values that really lost, and
/// nothing a machine overwrote knowingly.
@Suite struct ConflictLogTests {
    /// a deletes a rule; b, which had not seen the deletion, moves it to
    /// chrome later. The deletion lost, and b (whose push overwrote it) logs
    /// that, but not the browser it had seen and changed on purpose.
    @Test(arguments: StoreKind.allCases) func aMachineLogsOnlyWhatItHadNotSeen(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        try KeyChangeTests.rule(a, "zoom.us")
        _ = try a.replica.addBrowser(id: "chrome", name: nil, format: nil, scheme: nil, exec: nil)
        try world.sync(a)
        try world.sync(b)
        _ = try a.replica.removeRule(pattern: "zoom.us")
        usleep(5_000) // b's edit is the later one, whatever the clock's resolution
        _ = try b.replica.addRule(pattern: "zoom.us", browser: "chrome", priority: nil)
        try world.sync(a)
        let pushed = try world.sync(b)
        try world.sync(a)
        let logged = try b.replica.conflicts(limit: 10).map { "\($0.key) \($0.field): \($0.lost.value) -> \($0.winner.value)" }
        #expect(logged == ["zoom.us deleted: bool(true) -> bool(false)"], "\(logged)")
        #expect(pushed.conflicts == 1)
        #expect(try SyncWorld.rules(a.replica) == ["zoom.us": "chrome"] && (try SyncWorld.rules(b.replica)) == ["zoom.us": "chrome"])
    }
}
