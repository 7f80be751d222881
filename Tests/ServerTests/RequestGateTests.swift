import Testing
@testable import BrsyncServer

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
