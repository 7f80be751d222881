import Testing

@testable import SyncCore

/// The push's decisions, from tables: no server, no replica.
@Suite struct PushMachineTests {
    static let ours = "00000000000000aa"
    static let theirs = "00000000000000bb"

    static func refusal(_ code: WireError.Code, acknowledged: Int64? = nil, digest: String? = nil) -> WireError {
        WireError(code: code, message: "refused: \(code)", acknowledged: acknowledged, digest: digest)
    }

    /// Each row: the refusal, this replica's digest of the change it names,
    /// and what the push does.
    static let refusals: [(WireError, String?, PushMachine.Repair)] = [
        (refusal(.notEncrypted), nil, .encryptAgainAndRelayAll),
        // The server has our changes through 7: go on after them.
        (refusal(.gap, acknowledged: 7, digest: ours), ours, .rewind(to: 7)),
        // It has nothing of this device, or says nothing of whose: from its number.
        (refusal(.gap, acknowledged: 0, digest: ""), nil, .rewind(to: 0)),
        (refusal(.gap, acknowledged: 7, digest: ""), ours, .rewind(to: 7)),
        // Its change 7 is not ours: a copy of this replica used the numbers.
        (refusal(.gap, acknowledged: 7, digest: theirs), ours, .fork),
        (refusal(.gap, acknowledged: 7, digest: theirs), nil, .fork),
        (refusal(.diverged, acknowledged: 7, digest: theirs), ours, .fork),
        // Stamps ahead of the server's clock: re-stamp what it does not have of ours.
        (
            refusal(.clockSkew, acknowledged: 7, digest: ours), ours,
            .restamp(markPushedThrough: 7, relayStampedAhead: false)
        ),
        (
            refusal(.clockSkew, acknowledged: 7, digest: theirs), ours,
            .restamp(markPushedThrough: nil, relayStampedAhead: false)
        ),
        (refusal(.clockSkew), nil, .restamp(markPushedThrough: nil, relayStampedAhead: false)),
    ]

    @Test(arguments: refusals) func aRefusalIsRepairedOnce(
        refusal: WireError, ourDigest: String?, action: PushMachine.Repair
    ) {
        var machine = PushMachine()
        #expect(machine.refused(refusal, ourDigest: ourDigest) == action)
        // The same refusal again: the repair did not help. Stamps get a second
        // try, which first relays what was stamped ahead.
        if refusal.code == .clockSkew {
            guard case .restamp(let through, _) = action else { return }
            #expect(
                machine.refused(refusal, ourDigest: ourDigest)
                    == .restamp(markPushedThrough: through, relayStampedAhead: true))
        }
        #expect(machine.refused(refusal, ourDigest: ourDigest) == .stop(refusal))
    }

    @Test func repairsAreCountedByKind() {
        var machine = PushMachine()
        #expect(
            machine.refused(Self.refusal(.gap, acknowledged: 3, digest: Self.ours), ourDigest: Self.ours)
                == .rewind(to: 3))
        #expect(machine.refused(Self.refusal(.diverged), ourDigest: nil) == .fork)
        #expect(machine.refused(Self.refusal(.notEncrypted), ourDigest: nil) == .encryptAgainAndRelayAll)
        // A fork after a refusal counts against the same repair as one found in an answer.
        let answer = PushResponse(
            acknowledged: 5, applied: 0, clock: HLCTimestamp(wallMillis: 1, counter: 0, device: "server"), epoch: "e",
            lost: [], acknowledgedDigest: Self.theirs)
        // The stop is this client's own, worded as such (no refusal of the server's to name).
        guard case .stop(let stop)? = machine.checkAcknowledged(answer, ourChain: Self.ours, last: nil) else {
            Issue.record("a second fork did not stop")
            return
        }
        #expect(
            stop.code == .diverged && stop.message.contains("acknowledging changes this machine did not make"),
            "\(stop.message)")
    }

    @Test func anAnswerIsAcceptedWhenItsAcknowledgedChangeIsOurs() {
        let clock = HLCTimestamp(wallMillis: 1, counter: 0, device: "server")
        var machine = PushMachine()
        var answer = PushResponse(
            acknowledged: 5, applied: 5, clock: clock, epoch: "e", lost: [], acknowledgedDigest: Self.ours)
        #expect(machine.checkAcknowledged(answer, ourChain: Self.ours, last: nil) == nil)
        #expect(machine.accept(answer, last: nil) == .accept(relaying: []))
        // Nothing acknowledged, or no digest to compare: nothing to check.
        #expect(
            machine.checkAcknowledged(
                PushResponse(
                    acknowledged: 0, applied: 0, clock: clock, epoch: "e", lost: [], acknowledgedDigest: Self.theirs),
                ourChain: nil, last: nil) == nil)
        #expect(
            machine.checkAcknowledged(
                PushResponse(acknowledged: 5, applied: 0, clock: clock, epoch: "e", lost: []), ourChain: nil, last: nil)
                == nil)
        // Another replica's change 5: fork, then stop if it happens again (naming the last refusal).
        answer.acknowledgedDigest = Self.theirs
        #expect(machine.checkAcknowledged(answer, ourChain: Self.ours, last: nil) == .fork)
        let last = Self.refusal(.gap)
        #expect(machine.checkAcknowledged(answer, ourChain: Self.ours, last: last) == .stop(last))
    }

    @Test func recordsTheServerNeedsAreRelayedOnce() {
        let clock = HLCTimestamp(wallMillis: 1, counter: 0, device: "server")
        var machine = PushMachine()
        let answer = PushResponse(acknowledged: 3, applied: 3, clock: clock, epoch: "e", lost: [], needed: [6, 4, 6])
        #expect(machine.accept(answer, last: nil) == .accept(relaying: [4, 6]))
        // Asked again for the same change: the relay was refused.
        #expect(
            machine.accept(
                PushResponse(acknowledged: 3, applied: 0, clock: clock, epoch: "e", lost: [], needed: [9]), last: nil)
                == .accept(relaying: [9]))
        guard case .stop(let stop) = machine.accept(answer, last: nil) else {
            Issue.record("a record asked for twice did not stop the push")
            return
        }
        #expect(stop.code == .conflict && stop.message.contains("whole record of change 4"), "\(stop.message)")
    }
}
