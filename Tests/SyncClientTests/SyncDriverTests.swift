import Replica
import SyncCore
import TestSupport
import Testing

@testable import SyncClient

/// The sync's driver, told from tables: a real replica (an SQLite file in a
/// temporary home) and a scripted server (``ScriptedServer``), no socket and
/// no store. Each row is the conversation a `brsync sync`, `push` or `pull`
/// has given the server's answers, and what it leaves behind. Pushes go in
/// batches of 2 changes; a new replica's first change adds its browser, and
/// its first push ends with one more change, the device's name. The
/// convergence suite is the end-to-end proof; these say why each request is made.
@Suite struct SyncDriverTests {
    enum Goal: Sendable { case sync, push, pull }

    struct Case: CustomStringConvertible, Sendable {
        var description: String
        /// Rules written and synced with an honest server before the row's script.
        var synced = 0
        /// Rules written after, unpushed when the script begins.
        var rules = 3
        var goal = Goal.sync
        var script: [ScriptedServer.Step]
        /// The requests the driver makes (``ScriptedServer/Request/line``).
        var lines: [String]
        /// What the error says, when the row ends in one.
        var fails: String?
        /// The code `brsync status` shows for the stop, when a sync ends in a refusal.
        var recorded: String?
        /// Changes left unpushed at the end.
        var unpushed = 0
        /// Whether the replica took a new device id.
        var newID = false
    }

    /// A push answered by taking nothing: the change before the batch acknowledged again.
    static let takesNothing = ScriptedServer.Step.push { push, server in
        .json(
            PushResponse(
                acknowledged: push.from - 1, applied: 0, clock: server.clock, epoch: server.epoch, lost: [],
                acknowledgedDigest: push.base ?? "", account: server.account
            ).json)
    }

    static let cases: [Case] = [
        Case(
            description: "a sync sends its changes in batches, then the device's name, then pulls",
            script: [.push, .push, .push, .pull()],
            lines: ["POST /v1/push 1-2", "POST /v1/push 3-4", "POST /v1/push 5-5", "GET /v1/pull since=0"]),
        Case(
            description: "a gap at a change of ours rewinds to it and sends again from there",
            synced: 2, rules: 2, script: [.refuse(.gap, acknowledged: 3), .push, .push, .pull()],
            lines: ["POST /v1/push 5-6", "POST /v1/push 4-5", "POST /v1/push 6-6", "GET /v1/pull since=0"]),
        Case(
            description: "a gap at a change not ours forks: a new id, the unpushed changes numbered from 1",
            synced: 2, rules: 2, script: [.refuse(.gap, acknowledged: 3, digest: "elsewhere"), .push, .push, .pull()],
            lines: ["POST /v1/push 5-6", "POST /v1/push 1-2", "POST /v1/push 3-3", "GET /v1/pull since=0"],
            newID: true),
        Case(
            description: "diverged forks once; diverged again stops the push, and the sync still pulls",
            script: [.refuse(.diverged), .refuse(.diverged), .pull()],
            lines: ["POST /v1/push 1-2", "POST /v1/push 1-2", "GET /v1/pull since=0"],
            fails: "refused (diverged)", recorded: "diverged", unpushed: 4, newID: true),
        Case(
            description: "a stamp refused as ahead is re-stamped twice; the third refusal says to check the clock",
            script: [
                .refuse(.clockSkew, status: 422), .refuse(.clockSkew, status: 422), .refuse(.clockSkew, status: 422),
                .pull(),
            ],
            lines: ["POST /v1/push 1-2", "POST /v1/push 1-2", "POST /v1/push 1-2", "GET /v1/pull since=0"],
            fails: "Compare this machine's clock", recorded: "clock_skew", unpushed: 4),
        Case(
            description: "a busy server is asked again",
            rules: 1,
            script: [
                .answer("POST", "/v1/push", .refusal(WireError(code: .busy, message: "busy"), status: 503)),
                .push, .push, .pull(),
            ],
            lines: ["POST /v1/push 1-2", "POST /v1/push 1-2", "POST /v1/push 3-3", "GET /v1/pull since=0"]),
        Case(
            description: "an answer that is not JSON stops the push, every change kept",
            goal: .push,
            script: [.answer("POST", "/v1/push", ScriptedServer.Reply(status: 200, body: Array("<html>".utf8)))],
            lines: ["POST /v1/push 1-2"], fails: "is not JSON", unpushed: 4),
        Case(
            description: "a refusal no repair mends stops the push; the sync still pulls, then says why",
            script: [.refuse(.quotaExceeded, status: 507), .pull()],
            lines: ["POST /v1/push 1-2", "GET /v1/pull since=0"],
            fails: "refused (quota_exceeded)", recorded: "quota_exceeded", unpushed: 4),
        Case(
            description: "a server that never takes a batch is left after the stalls allowed, every change kept",
            script: Array(repeating: takesNothing, count: SyncClient.maxPushStalls + 1),
            lines: Array(repeating: "POST /v1/push 1-2", count: SyncClient.maxPushStalls + 1),
            fails: "never let this push finish", unpushed: 4),
        Case(
            description: "a push answered on a new timeline relays every record, then sends the log again from 1",
            synced: 1, rules: 1,
            script: [
                .push { push, server in
                    server.epoch = "e-restored"
                    return .json(server.take(push).json)
                },
                .relay, .relay, .push, .push, .pull(),
            ],
            lines: [
                "POST /v1/push 4-4", "POST /v1/relay 2", "POST /v1/relay 2", "POST /v1/push 1-2", "POST /v1/push 3-4",
                "GET /v1/pull since=0",
            ]),
        Case(
            description: "a pull that meets a new timeline relays every record, sends the log again, then pulls",
            synced: 1, rules: 1, goal: .pull,
            script: [.pull(epoch: "e-restored"), .relay, .relay, .push, .push, .pull()],
            lines: [
                "GET /v1/pull since=0", "POST /v1/relay 2", "POST /v1/relay 2", "POST /v1/push 1-2",
                "POST /v1/push 3-4", "GET /v1/pull since=0",
            ]),
        Case(
            description: "a record the server lacks goes up whole before the next batch",
            script: [
                .push { push, server in
                    var answer = server.take(push)
                    answer.needed = [push.from]
                    return .json(answer.json)
                },
                .relay, .push, .push, .pull(),
            ],
            lines: [
                "POST /v1/push 1-2", "POST /v1/relay 1", "POST /v1/push 3-4", "POST /v1/push 5-5",
                "GET /v1/pull since=0",
            ]),
        Case(
            description: "a pull follows the cursor to the last page and sends nothing",
            rules: 0, goal: .pull,
            script: [.pull(next: 10, more: true), .pull(next: 20, more: true), .pull(next: 20)],
            lines: ["GET /v1/pull since=0", "GET /v1/pull since=10", "GET /v1/pull since=20"], unpushed: 1),
    ]

    @Test(arguments: cases) func conversation(_ row: Case) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (replica, _) = try Replica.initialize(home: directory.file("home"), deviceName: "laptop")
        _ = try replica.addBrowser(id: "firefox", name: nil, format: nil, scheme: nil, exec: nil)
        let server = ScriptedServer()
        var options = SyncClient.Options()
        options.pushBatch = 2
        options.backoffMilliseconds = 1
        func client() throws -> SyncClient {
            SyncClient(
                replica: replica, http: server, remote: try RemoteURL(parsing: "https://sync.example"), token: "t",
                accountKey: nil, olderKeys: [], options: options, progress: nil)
        }
        func add(_ count: Int, _ prefix: String) throws {
            for index in 0..<count {
                try replica.addRule(pattern: "\(prefix)\(index).example", browser: "firefox", priority: nil)
            }
        }
        try add(row.synced, "synced")
        if row.synced > 0 {
            // The browser and the rules, in batches, then the device's name.
            server.then(Array(repeating: .push, count: (row.synced + 2) / 2 + 1) + [.pull()])
            _ = try client().sync()
            #expect(server.unexpected.isEmpty && server.stepsLeft == 0, "\(server.lines)")
        }
        let before = server.lines.count
        let id = replica.deviceID
        try add(row.rules, "new")
        let rules = try replica.rules().count
        server.then(row.script)
        var failure: (any Error)?
        do {
            switch row.goal {
            case .sync: _ = try client().sync()
            case .push: try client().push()
            case .pull: try client().pull()
            }
        } catch { failure = error }

        #expect(Array(server.lines.dropFirst(before)) == row.lines)
        #expect(server.unexpected.isEmpty, "requests the script did not expect")
        #expect(server.stepsLeft == 0, "the script's steps the driver never reached")
        if let fails = row.fails {
            #expect(failure.map { "\($0)".contains(fails) } == true, "\(String(describing: failure))")
        } else {
            #expect(failure == nil, "\(String(describing: failure))")
        }
        // What the sync left, read from the file as the next command reads it.
        let reopened = try Replica.open(home: replica.home)
        #expect(try reopened.unpushedCount() == row.unpushed)
        #expect((reopened.deviceID != id) == row.newID)
        #expect(try reopened.rules().count == rules, "no rule lost")
        let state = try reopened.syncState()
        if row.goal == .sync, row.fails != nil { #expect(state.stopped, "the stop is kept for brsync status") }
        if let recorded = row.recorded { #expect(state.problemCode == recorded) }
    }
}
