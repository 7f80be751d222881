import Testing

@testable import SyncCore

/// The order of a sync's phases, from tables: each row is a goal, the
/// outcome fed back after each step, and the steps the machine hands out.
/// No server, no replica.
@Suite struct SyncMachineTests {
    typealias Step = SyncMachine.Step
    typealias Outcome = SyncMachine.Outcome

    /// The steps handed out for `goal` when each step's outcome is the
    /// next of `outcomes` (`.done` once they run out), up to the end.
    static func trace(
        _ goal: SyncMachine.Goal, _ outcomes: [Step: Outcome] = [:], each: [Outcome] = []
    )
        -> [Step]
    {
        var machine = SyncMachine(goal)
        var steps: [Step] = []
        var fed = each[...]
        var outcome = Outcome.done
        // Bounded: a sequence that never ends fails the row instead of hanging.
        for _ in 0..<64 {
            let step = machine.next(outcome)
            steps.append(step)
            switch step {
            case .finish, .stopWithRefusal: return steps
            default: break
            }
            outcome = fed.popFirst() ?? outcomes[step] ?? .done
        }
        Issue.record("the sequence did not end: \(steps)")
        return steps
    }

    static let finished = Step.finish(record: false, refused: false)

    @Test func eachGoalRunsEachStepOnceWhenNothingHappens() {
        #expect(Self.trace(.push) == [.takeNewIDIfCopied, .prepare, .push, .noteOwnLedger, Self.finished])
        #expect(Self.trace(.pull) == [.prepare, .pull, Self.finished])
        #expect(Self.trace(.pullPage) == [.pull, Self.finished])
        #expect(
            Self.trace(.sync, [.checkUndelivered: .undelivered(false)]) == [
                .takeNewIDIfCopied, .prepare, .push, .pull, .checkUndelivered, .finishLedger, .noteOwnLedger,
                .finish(record: true, refused: false),
            ])
    }

    /// A sync's refused push still pulls, then ends with the refusal; the
    /// ledger request waits (its book is not known to be current), the
    /// records the server lacks are not sent again.
    @Test func aSyncPullsAfterARefusedPushAndEndsWithTheRefusal() {
        #expect(
            Self.trace(.sync, [.push: .pushRefused, .checkUndelivered: .undelivered(true)]) == [
                .takeNewIDIfCopied, .prepare, .push, .pull, .noteOwnLedger, .finish(record: true, refused: true),
            ])
    }

    @Test func aRefusedPushStopsAPushAtOnce() {
        #expect(
            Self.trace(.push, [.push: .pushRefused]) == [.takeNewIDIfCopied, .prepare, .push, .stopWithRefusal])
    }

    /// Records the pull found the server lacks go up once, then a pull; the
    /// sync does not ask again (the next sync sends what is left).
    @Test func recordsTheServerLacksGoUpOnce() {
        #expect(
            Self.trace(.sync, [.checkUndelivered: .undelivered(true)]) == [
                .takeNewIDIfCopied, .prepare, .push, .pull, .checkUndelivered, .push, .pull, .finishLedger,
                .noteOwnLedger, .finish(record: true, refused: false),
            ])
    }

    /// A pull on another timeline hands the push back to the sequence: a
    /// pull alone checks for a copied home first (it never did), a sync
    /// does not check twice; then the pull starts over.
    @Test func aPullOnAnotherTimelinePushesFirstThenStartsOver() {
        #expect(
            Self.trace(.pull, each: [.done, .timelineChanged]) == [
                .prepare, .pull, .takeNewIDIfCopied, .prepare, .push, .pull, Self.finished,
            ])
        #expect(
            Self.trace(.pullPage, each: [.timelineChanged]) == [
                .pull, .takeNewIDIfCopied, .prepare, .push, .pull, Self.finished,
            ])
        #expect(
            Self.trace(.sync, each: [.done, .done, .done, .timelineChanged, .done, .done, .done, .undelivered(false)])
                == [
                    .takeNewIDIfCopied, .prepare, .push, .pull, .prepare, .push, .pull, .checkUndelivered,
                    .finishLedger, .noteOwnLedger, .finish(record: true, refused: false),
                ])
    }

    /// Only the sync's first push waits for the pull: one after a timeline
    /// change or for records the server lacks stops the sync with its refusal.
    @Test func aLaterPushsRefusalStopsTheSync() {
        #expect(
            Self.trace(.sync, each: [.done, .done, .done, .timelineChanged, .done, .pushRefused]) == [
                .takeNewIDIfCopied, .prepare, .push, .pull, .prepare, .push, .stopWithRefusal,
            ])
        #expect(
            Self.trace(.sync, each: [.done, .done, .done, .done, .undelivered(true), .pushRefused]) == [
                .takeNewIDIfCopied, .prepare, .push, .pull, .checkUndelivered, .push, .stopWithRefusal,
            ])
        // The first push refused, then the pull meets a new timeline: the
        // push it hands back is refused too, and that stops the sync.
        #expect(
            Self.trace(.sync, each: [.done, .done, .pushRefused, .timelineChanged, .done, .pushRefused]) == [
                .takeNewIDIfCopied, .prepare, .push, .pull, .prepare, .push, .stopWithRefusal,
            ])
    }

    /// Each timeline change adds one push and one pull (the client bounds
    /// how many one sync takes); the sequence still ends once they stop.
    @Test func timelineChangesEachAddOneRound() {
        let changes = 4
        var machine = SyncMachine(.pull)
        var steps: [Step] = []
        var outcome = Outcome.done
        while steps.count < 64 {
            let step = machine.next(outcome)
            steps.append(step)
            if step == Self.finished { break }
            let pulls = steps.filter { $0 == .pull }.count
            outcome = step == .pull && pulls <= changes ? .timelineChanged : .done
        }
        #expect(steps.filter { $0 == .pull }.count == changes + 1)
        #expect(steps.filter { $0 == .push }.count == changes)
        #expect(steps.filter { $0 == .prepare }.count == changes + 1)
        #expect(steps.filter { $0 == .takeNewIDIfCopied }.count == 1)
        #expect(steps.last == Self.finished)
    }

    /// Over, it keeps answering its last step.
    @Test func aFinishedSequenceStaysFinished() {
        var machine = SyncMachine(.pull)
        while machine.next(.done) != Self.finished {}
        #expect(machine.next(.done) == Self.finished)
        #expect(machine.next(.timelineChanged) == Self.finished)
    }
}
