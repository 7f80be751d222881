import JSON
import Testing

@testable import SyncCore

/// What a push believes of an answer's conflicts and refusals, from tables:
/// no server, no replica.
@Suite struct PushReviewTests {
    static let me = "00000000000000aa"
    static let other = "00000000000000bb"
    static let clock = HLCTimestamp(wallMillis: 1, counter: 0, device: "server")

    static func stamp(_ millis: Int64, _ device: String) -> HLCTimestamp {
        HLCTimestamp(wallMillis: millis, counter: 0, device: device)
    }

    /// Changes 3…5 of this device, of rules `a.example`…`c.example`, each
    /// setting `browser` to "chrome" at 70.
    static let sent: [ChangeRecord] = ["a.example", "b.example", "c.example"].enumerated().map { index, key in
        ChangeRecord(
            sequence: Int64(3 + index), collection: .rules, key: key,
            state: RecordState(fields: ["browser": StampedValue(.string("chrome"), stamp: stamp(70, me))]))
    }

    static func lost(
        _ sequence: Int64, _ key: String, lost: HLCTimestamp, winner: HLCTimestamp, field: String = "browser"
    ) -> LostField {
        LostField(
            sequence: sequence, collection: .rules, key: key, field: field,
            lost: StampedValue(.string("firefox"), stamp: lost), winner: StampedValue(.string("chrome"), stamp: winner))
    }

    /// The stamp the replica logged as replaced by change 4's `browser`: the
    /// other device's value at 50, which this device had seen.
    static func replaced(_ sequence: Int64, _ field: String) -> HLCTimestamp? {
        sequence == 4 && field == "browser" ? stamp(50, other) : nil
    }

    static func review(_ response: PushResponse) -> PushMachine.Review {
        PushMachine.review(
            response, sent: sent, device: me, shown: { _, key in "shown:\(key)" }, replacedStamp: replaced)
    }

    /// Each row: a reported lost value, and what the push makes of it.
    static let lostValues: [(LostField, PushMachine.Finding?)] = [
        // Another device's value, unseen here when this device edited: a conflict.
        (
            lost(3, "a.example", lost: stamp(60, other), winner: stamp(70, me)),
            .conflict(lost(3, "a.example", lost: stamp(60, other), winner: stamp(70, me)))
        ),
        // Another device's value this device had seen (the log says it replaced it): none.
        (lost(4, "b.example", lost: stamp(50, other), winner: stamp(70, me)), nil),
        // This device's own value, replaced by its own later edit: none.
        (lost(5, "c.example", lost: stamp(60, me), winner: stamp(70, me)), nil),
        // A change this batch did not send, or sent under another key: made up.
        (
            lost(6, "a.example", lost: stamp(60, other), winner: stamp(70, me)),
            .problem("the server reported a conflict on a record this push did not change: not kept")
        ),
        (
            lost(3, "b.example", lost: stamp(60, other), winner: stamp(70, me)),
            .problem("the server reported a conflict on a record this push did not change: not kept")
        ),
        // Neither value is the register this push sent (the server may not name two others).
        (
            lost(3, "a.example", lost: stamp(60, other), winner: stamp(75, me)),
            .problem(
                "the server reported a conflict on 'shown:a.example' field \"browser\" of which neither value is what this push sent: not kept"
            )
        ),
        // A winner the merge would not have chosen.
        (
            lost(3, "a.example", lost: stamp(80, other), winner: stamp(70, me)),
            .problem(
                "the server reported a conflict on 'shown:a.example' field \"browser\" whose winner is not newer than the value it beat: not kept"
            )
        ),
    ]

    @Test(arguments: lostValues) func aReportedConflictIsBelievedOnlyWhenItCanBeTrue(
        _ lost: LostField, _ finding: PushMachine.Finding?
    ) {
        let review = Self.review(
            PushResponse(acknowledged: 5, applied: 3, clock: Self.clock, epoch: "e", lost: [lost]))
        #expect(review.findings == (finding.map { [$0] } ?? []))
        #expect(review.refused.isEmpty)
    }

    @Test func aRefusalMustNameAnAcknowledgedChangeOfTheBatch() {
        let rejected = [
            RejectedChange(sequence: 4, collection: .rules, key: "b.example", reason: "too large"),
            RejectedChange(sequence: 4, collection: .rules, key: "c.example", reason: "another key"),
            RejectedChange(sequence: 5, collection: .rules, key: "c.example", reason: "not acknowledged yet"),
            RejectedChange(sequence: 9, collection: .rules, key: "a.example", reason: "not sent"),
        ]
        let review = Self.review(
            PushResponse(acknowledged: 4, applied: 1, clock: Self.clock, epoch: "e", lost: [], rejected: rejected))
        #expect(review.refused == [4: "too large"])
        #expect(
            review.findings == [
                .problem("the server did not take rules 'shown:b.example': too large"),
                .problem("the server named as refused a change this push did not send (4): not believed"),
                .problem("the server named as refused a change this push did not send (5): not believed"),
                .problem("the server named as refused a change this push did not send (9): not believed"),
            ])
    }

    @Test func valuesLostUnlistedAreCountedOnlyWhenTheBatchCouldHoldThem() {
        var response = PushResponse(acknowledged: 5, applied: 3, clock: Self.clock, epoch: "e", lost: [])
        response.lostOmitted = 12
        #expect(
            Self.review(response).findings == [
                .problem("12 more value(s) lost to newer ones; the server did not list them")
            ])
        response.lostOmitted = 3 * (Wire.maxFields + Wire.maxSealedExtraFields) + 1
        #expect(
            Self.review(response).findings == [
                .problem(
                    "the server counts \(response.lostOmitted) unlisted values lost for a push of 3 change(s), more than they hold: not believed"
                )
            ])
        response.lostOmitted = 0
        #expect(Self.review(response) == PushMachine.Review())
    }

    /// The answer's order is kept: a conflict kept, a report not believed,
    /// and a refusal come out as the answer listed them.
    @Test func findingsKeepTheAnswersOrder() {
        let conflict = Self.lost(3, "a.example", lost: Self.stamp(60, Self.other), winner: Self.stamp(70, Self.me))
        let madeUp = Self.lost(7, "a.example", lost: Self.stamp(60, Self.other), winner: Self.stamp(70, Self.me))
        let review = Self.review(
            PushResponse(
                acknowledged: 5, applied: 3, clock: Self.clock, epoch: "e", lost: [madeUp, conflict],
                rejected: [RejectedChange(sequence: 5, collection: .rules, key: "c.example", reason: "no")]))
        #expect(
            review.findings == [
                .problem("the server reported a conflict on a record this push did not change: not kept"),
                .conflict(conflict), .problem("the server did not take rules 'shown:c.example': no"),
            ])
        #expect(review.refused == [5: "no"])
    }
}
