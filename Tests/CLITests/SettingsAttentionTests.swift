import Foundation
import JSON
import Replica
import TestSupport
import Testing

/// The Sync page's second half against a real brsyncd on loopback: a
/// conflict restored from the window, this machine renamed, and live sync
/// switched on and off (a real `brsync watch` started and stopped).
extension SettingsWindowTests {
    /// Concurrent edits leave a conflict on the desk: the window lists it in
    /// words under "Needs you" and restores the losing value, which then wins
    /// on both machines. A name that is none is said and stays typed; a good
    /// one renames the machine. The live-sync switch starts a watch and
    /// stops it again.
    @Test func aConflictIsRestoredAndLiveSyncSwitchedFromTheWindow() throws {
        guard Self.ready() else { return }
        let world = try CLIWorld(.sqlite)
        let laptop = try world.replica("laptop")
        let desk = try world.replica("desk")
        for home in [laptop, desk] {
            try world.mustRun(home, ["browsers", "add", "firefox", "--exec", "true %u"])
            try world.mustRun(home, ["browsers", "add", "chrome", "--exec", "true %u"])
        }
        try world.mustRun(laptop, ["rules", "add", "github.com", "firefox", "--priority", "1"])
        usleep(20_000)
        try world.mustRun(desk, ["rules", "add", "github.com", "chrome", "--priority", "1"])
        try world.mustRun(laptop, ["sync"])
        try world.mustRun(desk, ["sync"])
        let listed = try JSONValue.parse(try world.run(desk, ["log", "--conflicts", "--json"]).stdout)
        guard case .array(let conflicts) = listed, let first = conflicts.first,
            case .int(let id)? = first.objectMember("id")
        else {
            Issue.record("no conflict was made: \(listed)")
            return
        }
        defer { Self.stopWatch(home: desk) }
        let tooLong = String(repeating: "n", count: 65)
        let run = try Self.drive(
            home: desk,
            [
                "key:ctrl+6", "find:label:Conflict #\(id) in rules/github.com: browser: \"firefox\" (laptop",
                "press:Restore conflict #\(id)", "find:label:Status: Restored rules/github.com browser",
                "find:label:Nothing waits for you.",
                "text:This machine's name=\(tooLong)", "press:Rename", "find:label:Status: That name cannot be",
                "text:This machine's name=desk-2", "press:Rename", "find:label:Status: This machine is now 'desk-2'",
                "toggle:Live sync", "find:label:Live sync runs", "find:label:Status: Live sync runs until",
                "run:\(world.brsync) --home '\(desk)' status --json",
                // Live: a rule made on the laptop shows in the desk's window, nothing pressed.
                "run:\(world.brsync) --home '\(laptop)' rules add live.example chrome && "
                    + "\(world.brsync) --home '\(laptop)' sync",
                "key:ctrl+1", "find:panel:live.example, opens in chrome", "key:ctrl+6",
                "toggle:Live sync", "find:label:Live sync is off", "find:label:Status: Live sync stopped",
            ])
        #expect(run.exitStatus == "0", "\(run.result)")
        #expect(run.lines.contains { $0.hasPrefix("RAN 0") && $0.contains(#""watching":true"#) }, "\(run.result)")
        let status = try world.run(desk, ["status", "--json"]).stdout
        #expect(status.contains(#""watching":false"#) && status.contains(#""deviceName":"desk-2""#), "\(status)")
        // The restored value is a new edit: it wins on both machines.
        try world.mustRun(desk, ["sync"])
        try world.mustRun(laptop, ["sync"])
        for home in [laptop, desk] {
            let resolved = try world.run(home, ["resolve", "--json", "https://github.com/x"]).stdout
            #expect(resolved.contains(#""browser":"firefox""#), "\(home): \(resolved)")
        }
        #expect(try world.run(desk, ["log", "--conflicts"]).stdout.contains("[restored"))

        // A server that is down: said in the window as `brsync sync` says it, with "Try again".
        world.stop()
        let down = try Self.drive(
            home: desk,
            [
                "key:ctrl+6", "press:Sync now", "find:label:The last sync stopped: cannot reach the server",
                "find:label:Status: cannot reach the server", "find:label:The last attempt stopped",
                // Stop acts between two attempts at once, not after the retries (5 tries, about 4 to 6 s;
                // a step that waits for the progress line can come too late on a loaded machine).
                "press:Sync now", "press:Stop",
                "find:label:Status: stopped before the sync was done",
            ])
        #expect(down.exitStatus == "0", "\(down.result)")
        #expect(try world.run(desk, ["rules", "list"]).stdout.contains("github.com"), "nothing was lost")
    }

    /// Ends a watch a failed run left behind (a process of its own session).
    static func stopWatch(home: String) {
        guard let running = WatchWake.status(home: home), WatchWake.isWatchProcess(pid: running.pid) else { return }
        kill(running.pid, SIGTERM)
    }
}
