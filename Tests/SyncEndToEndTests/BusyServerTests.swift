import Foundation
import HTTP
import JSON
import SyncClient
import SyncCore
import Synchronization
import SystemServices
import TestSupport
import Testing

/// A server that answers it is busy (429, 503) is waited for as it asks
/// (`Retry-After`, up to 30 s), and one that keeps saying so is reported
/// in its own words, not as a server out of reach.
@Suite struct BusyServerTests {
    /// A busy answer with `timeline_limited`'s body and a wait.
    static func limited(retryAfter: Int) -> HTTPResponse {
        let body = WireError(
            code: .timelineLimited,
            message: "the account's timeline was started anew less than a minute ago; try again in 6 s"
        ).json
        return HTTPResponse(
            status: 429, headers: ["Content-Type": "application/json", "Retry-After": String(retryAfter)],
            body: Array(body.jsonText.utf8))
    }

    /// The first push is answered 429 with `Retry-After: 6`: the next try
    /// comes six seconds later at the earliest (the backoff alone waits at
    /// most 5 s, here 1 ms), and the sync finishes.
    @Test func aBusyAnswersWaitIsHonoured() throws {
        let world = try SyncWorld()
        let a = try world.machine("a")
        try KeyChangeTests.rule(a, "first.example")
        let pushes = Mutex<[Int64]>([])
        let liar = try LyingServer(
            in: world,
            answering: { request in
                guard request.target.hasPrefix("/v1/push") else { return nil }
                let count = pushes.withLock { times in
                    times.append(Clock.monotonicMicros())
                    return times.count
                }
                return count == 1 ? Self.limited(retryAfter: 6) : nil
            }, rewrite: { _, _, _ in nil })
        defer { liar.stop() }
        try liar.serving(world) { _ = try world.sync(a) }
        #expect(try a.replica.unpushedCount() == 0)
        let times = pushes.withLock { $0 }
        #expect(times.count >= 2)
        if times.count >= 2 { #expect(times[1] - times[0] >= 6_000_000, "waited \(times[1] - times[0]) µs") }
    }

    /// Every push is answered 429: the sync ends as busy (exit 4 in the
    /// CLI, as a server out of reach), with the server's code and message,
    /// and nothing pushed is lost.
    @Test func aServerThatStaysBusyIsReportedInItsOwnWords() throws {
        let world = try SyncWorld()
        let a = try world.machine("a")
        try KeyChangeTests.rule(a, "first.example")
        let liar = try LyingServer(
            in: world,
            answering: { request in request.target.hasPrefix("/v1/push") ? Self.limited(retryAfter: 0) : nil },
            rewrite: { _, _, _ in nil })
        defer { liar.stop() }
        #expect { _ = try liar.serving(world) { try world.sync(a) } } throws: { error in
            guard case SyncError.busy(let message) = error else { return false }
            let said = SyncError.busy(message).description
            return said.hasPrefix("the server is busy: ") && said.contains("timeline_limited")
                && said.contains("started anew") && !said.contains("cannot reach")
        }
        #expect(try a.replica.unpushedCount() > 0, "the edit waits for the next sync")
        _ = try world.sync(a)
        #expect(try a.replica.unpushedCount() == 0)
    }
}
