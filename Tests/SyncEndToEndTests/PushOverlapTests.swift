import HTTP
import JSON
import Net
import Replica
import SyncCore
import Synchronization
import TestSupport
import Testing

/// A push sends its next batch as soon as the server took the whole batch
/// before, and commits that answer while the next one is in flight: the
/// answer is committed however the next batch ends (its answer lost after
/// the server took it, or refused), and what the server took goes on to
/// converge, its ledger met.
@Suite struct PushOverlapTests {
    /// What the server says to the push's second batch.
    enum SecondBatch: String, CaseIterable, CustomTestStringConvertible {
        /// The server takes it; its answer never reaches the machine.
        case answerLost
        /// The server never sees it: busy, every try.
        case refused

        var testDescription: String { rawValue }
    }

    @Test(arguments: SecondBatch.allCases, [false, true])
    func theAnswerBeforeTheBatchInFlightIsKeptHoweverThatBatchEnds(_ second: SecondBatch, encrypted: Bool) throws {
        let world = try SyncWorld(.sqlite)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        try LyingServerTests.rules(a, ["first.example"])
        if encrypted {
            _ = try KeyChangeTests.shareNewKey(world, from: a, with: [b])
        } else {
            try world.sync(a)
        }
        try world.sync(b)
        try world.sync(a)
        let before = try a.replica.syncState().pushedThrough
        // Three batches of five (``SyncWorld/client(_:token:stopRequested:)``).
        let patterns = (1...12).map { "overlap\($0).example" }
        try LyingServerTests.rules(a, patterns)
        let upstreamTLS = try TLSContext.client(caFile: world.caFile)
        let honest = world.port
        let pushes = Atomic<Int>(0)
        let liar = try LyingServer(
            in: world,
            answering: { request in
                guard request.path == "/v1/push", pushes.add(1, ordering: .relaxed).newValue > 1 else { return nil }
                switch second {
                case .answerLost:
                    _ = FaultProxy.forward(request, to: honest, tls: upstreamTLS)
                    return HTTPResponse(status: 0)
                case .refused:
                    return HTTPResponse(
                        status: 503, headers: ["Retry-After": "0", "Content-Type": "application/json"],
                        body: Array(#"{"error":"busy","message":"injected"}"#.utf8))
                }
            }, rewrite: { _, _, _ in nil })
        defer { liar.stop() }
        #expect(throws: (any Error).self) { try liar.serving(world) { try world.sync(a) } }
        #expect(pushes.load(ordering: .relaxed) >= 2, "the second batch went")
        #expect(
            try a.replica.syncState().pushedThrough == before + 5,
            "the first batch's answer is kept, though the batch after it got none")
        // An honest sync: what the server took is acknowledged past the batch sent again, the rest goes up.
        let summary = try world.sync(a)
        #expect(summary.problems.isEmpty && summary.newDeviceID == nil, "\(summary)")
        #expect(try a.replica.unpushedCount() == 0)
        try world.sync(b)
        #expect(Set(try SyncWorld.rules(b.replica).keys) == Set(patterns + ["first.example"]))
        let failures = try b.replica.ledgerFailures()
        #expect(failures.isEmpty, "\(failures)")
    }
}
