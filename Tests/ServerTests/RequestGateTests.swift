import HTTP
import Logging
import TestSupport
import Testing

@testable import BrsyncServer
@testable import Net
@testable import ServerStore

/// One credential's requests in progress are bounded; others are not held back.
@Suite struct RequestGateTests {
    @Test func aCredentialGetsAtMostItsLimit() {
        let gate = RequestGate(limit: 2)
        #expect(gate.enter("a") && gate.enter("a"))
        #expect(!gate.enter("a"), "a third request of the same token waits for none: refused")
        #expect(gate.enter("b"), "another token is not held back")
        gate.leave("a")
        #expect(gate.enter("a"), "a slot given back is taken again")
        for _ in 0..<2 { gate.leave("a") }
        gate.leave("b")
        #expect(gate.active == 0, "entries leave with their last request")
        gate.leave("never-entered") // harmless
        #expect(gate.active == 0)
        #expect(RequestGate(limit: 0).limit == 1)
    }
}

/// A request holds its token's slot until its answer has been written: a
/// client that never reads its pages cannot take a new one each time.
@Suite struct AnswerSlotTests {
    @Test func aSlotIsGivenBackOnlyOnceTheAnswerIsWritten() throws {
        let directory = try TemporaryDirectory(prefix: "brsync-slots")
        defer { directory.remove() }
        let store = try SyncStore(sqlite: directory.file("store.sqlite"))
        defer { store.close() }
        let api = SyncAPI(
            store: store, configuration: ServerConfiguration(), metrics: ServerMetrics(), logger: Logger(label: "test"))
        let request = HTTPRequest(method: "GET", target: "/v1/health", headers: ["Authorization": "Bearer brs_someone"])
        let context = HTTPServer.RequestContext(peer: "127.0.0.1")
        let first = api.handle(request, context), second = api.handle(request, context)
        #expect(first.status == 200 && second.status == 200)
        #expect(api.handle(request, context).status == 503, "both slots are held while their answers are being written")
        first.whenWritten?.run()
        let third = api.handle(request, context)
        #expect(third.status == 200, "a written answer gives its slot back")
        for answer in [second, third] { answer.whenWritten?.run() }
        #expect(api.gate.active == 0)
    }
}
