import Testing

@testable import SyncCore

/// A push's decisions, from tables: a scripted server answers each batch,
/// a small log stands in for the replica, and the actions the session
/// hands out are checked. No server, no replica.
@Suite struct PushSessionTests {
    static let clock = HLCTimestamp(wallMillis: 1, counter: 0, device: "server")

    /// The chain this device's log holds through `sequence`.
    static func chain(_ sequence: Int64) -> String { "chain\(sequence)" }

    static func answer(_ acknowledged: Int64, needed: [Int64] = [], digest: String? = nil) -> PushResponse {
        PushResponse(
            acknowledged: acknowledged, applied: 0, clock: clock, epoch: "e", lost: [],
            acknowledgedDigest: digest ?? chain(acknowledged), needed: needed)
    }

    /// What the scripted server does with one batch.
    enum Reply {
        case answer(PushResponse)
        case refuse(WireError)
        case newTimeline
    }

    /// A push of changes 1…`unpushed` in batches of `batch`, each answered
    /// by `server(request, first, last)`; repairs move the log as the
    /// driver would (a rewind to where the refusal says, a fork to zero).
    /// - Returns: every action, in order, and the session at the end.
    static func push(
        unpushed: Int64, batch: Int64 = 1000, pushedThrough: Int64 = 0,
        server: (_ request: Int, _ first: Int64, _ last: Int64) -> Reply
    ) -> (actions: [PushSession.Action], session: PushSession) {
        var session = PushSession(pushedThrough: pushedThrough, unpushed: Int(unpushed - pushedThrough))
        var end = unpushed
        var input = PushSession.Input.begin
        var actions: [PushSession.Action] = []
        var requests = 0
        var relayedFor: Set<Int64> = []
        // Bounded: a push that never ends fails the row instead of hanging.
        while actions.count < 1000 {
            let action = session.next(input)
            actions.append(action)
            switch action {
            case .send(let after, _):
                guard after < end else {
                    input = .nothingLeft
                    continue
                }
                requests += 1
                let (first, last) = (after + 1, min(after + batch, end))
                switch server(requests, first, last) {
                case .answer(let response):
                    let ours = response.acknowledged > 0 ? chain(response.acknowledged) : nil
                    input = .answered(response, ourChain: ours, last: nil)
                case .refuse(let refusal):
                    input = .refused(refusal, ourDigest: refusal.acknowledged.map(chain))
                case .newTimeline:
                    input = .timelineChanged(pushedThrough: 0)
                }
            case .repair(.rewind(let sequence)):
                input = .repaired(pushedThrough: sequence)
            case .repair(.fork):
                // A new id: every change numbered again from 1.
                end -= session.pushedThrough
                input = .repaired(pushedThrough: 0)
            case .repair:
                input = .repaired(pushedThrough: session.pushedThrough)
            case .review:
                input = .reviewed
            case .keep(let acknowledged, let relaying):
                // The driver relays only the records of changes in the batch.
                let fresh = relaying.filter { $0 <= end }.subtracting(relayedFor)
                relayedFor.formUnion(relaying)
                input = .kept(chain: chain(acknowledged), relayed: fresh.count)
            case .stop, .giveUp, .finished:
                return (actions, session)
            }
        }
        Issue.record("the push did not end")
        return (actions, session)
    }

    static func sends(_ actions: [PushSession.Action]) -> [Int64] {
        actions.compactMap { if case .send(let after, _) = $0 { after } else { nil } }
    }

    @Test func anHonestServerTakesEveryBatchAndTheChainIsCarried() {
        let (actions, session) = Self.push(unpushed: 2500) { _, _, last in .answer(Self.answer(last)) }
        #expect(Self.sends(actions) == [0, 1000, 2000, 2500])
        #expect(actions.last == .finished)
        #expect(actions.contains(.send(after: 1000, carried: PushSession.Carried(sequence: 1000, chain: "chain1000"))))
        #expect(session.stalls == 0 && session.requests == 4)
    }

    /// Answers that never move the acknowledgement on, with nothing that
    /// explains them, stop the push after ``PushSession/maxStalls``.
    @Test func aServerThatNeverTakesABatchIsGivenUpOn() {
        let (actions, session) = Self.push(unpushed: 12) { _, first, _ in .answer(Self.answer(first - 1)) }
        guard case .giveUp(let message)? = actions.last else {
            Issue.record("\(actions.suffix(3))")
            return
        }
        #expect(message.contains("never let this push finish"))
        #expect(message.contains("\(PushSession.maxStalls + 1) requests for 12 change(s)"))
        #expect(session.requests == PushSession.maxStalls + 1)
    }

    /// Many answers that relay records whole are work the push decided, not
    /// stalls: a copied home's edits go up however many the server asks for.
    @Test func recordsAskedForWholeAreWorkNotStalls() {
        let count: Int64 = 3 * Int64(PushSession.maxStalls)
        // The server asks for each change's record once before it takes it.
        let (actions, session) = Self.push(unpushed: count, batch: count) { request, first, last in
            request <= Int(count)
                ? .answer(Self.answer(first - 1, needed: [first + Int64(request) - 1]))
                : .answer(
                    Self.answer(last))
        }
        #expect(actions.last == .finished, "\(actions.suffix(3))")
        #expect(session.stalls == 0)
    }

    /// Naming records the driver could not relay (outside the batch, a new
    /// number each time) explains nothing: those answers are stalls.
    @Test func recordsAskedForButNotSentAreStalls() {
        let (actions, _) = Self.push(unpushed: 5) { request, first, _ in
            .answer(Self.answer(first - 1, needed: [1000 + Int64(request)]))
        }
        #expect({ if case .giveUp? = actions.last { true } else { false } }(), "\(actions.suffix(2))")
    }

    @Test func aRecordAskedForTwiceStopsThePush() {
        let (actions, _) = Self.push(unpushed: 5) { _, first, _ in .answer(Self.answer(first - 1, needed: [first])) }
        guard case .stop(let refusal)? = actions.last else {
            Issue.record("\(actions)")
            return
        }
        #expect(
            refusal.code == .conflict
                && refusal.message.contains("asked twice in one push for the whole record of change 1"))
    }

    /// A gap rewinds to where the server stands and the push goes on from
    /// there (no stall); a second gap in the same push stops it.
    @Test func aGapRewindsOnceThenStops() {
        let gap = WireError(code: .gap, message: "gap", acknowledged: 3, digest: Self.chain(3))
        let (actions, _) = Self.push(unpushed: 10, pushedThrough: 6) { request, _, last in
            request == 1 ? .refuse(gap) : .answer(Self.answer(last))
        }
        #expect(
            actions.prefix(3) == [
                .send(after: 6, carried: nil), .repair(.rewind(to: 3)), .send(after: 3, carried: nil),
            ])
        #expect(actions.last == .finished)
        let (again, _) = Self.push(unpushed: 10, pushedThrough: 6) { _, _, _ in .refuse(gap) }
        #expect(again.last == .stop(gap))
    }

    /// A gap whose acknowledged change is not ours: another replica used
    /// this id and its numbers, so the push forks.
    @Test func aGapOnAnotherReplicasChainForks() {
        let gap = WireError(code: .gap, message: "gap", acknowledged: 3, digest: "theirs")
        let (actions, _) = Self.push(unpushed: 10, pushedThrough: 6) { request, _, last in
            request == 1 ? .refuse(gap) : .answer(Self.answer(last))
        }
        #expect(actions[1] == .repair(.fork))
        #expect(actions.last == .finished)
    }

    /// An acknowledgement of a change this replica did not make forks once;
    /// again under the new id, the push stops.
    @Test func anAcknowledgementNotOursForksOnceThenStops() {
        let (actions, _) = Self.push(unpushed: 4) { request, _, last in
            request == 1 ? .answer(Self.answer(last, digest: "theirs")) : .answer(Self.answer(last))
        }
        #expect(actions.prefix(2) == [.send(after: 0, carried: nil), .repair(.fork)])
        #expect(actions.last == .finished)
        let (again, _) = Self.push(unpushed: 4) { _, _, last in .answer(Self.answer(last, digest: "theirs")) }
        guard case .stop(let refusal)? = again.last else {
            Issue.record("\(again)")
            return
        }
        #expect(refusal.code == .diverged && again.filter { $0 == .repair(.fork) }.count == 1)
    }

    /// A clock refusal re-stamps twice (the second time relaying what was
    /// stamped ahead first), then stops.
    @Test func aClockRefusalRestampsTwiceThenStops() {
        let skew = WireError(code: .clockSkew, message: "ahead", acknowledged: 2, digest: Self.chain(2))
        let (actions, _) = Self.push(unpushed: 5, pushedThrough: 2) { _, _, _ in .refuse(skew) }
        #expect(
            actions.filter { if case .repair = $0 { true } else { false } } == [
                .repair(.restamp(markPushedThrough: 2, relayStampedAhead: false)),
                .repair(.restamp(markPushedThrough: 2, relayStampedAhead: true)),
            ])
        #expect(actions.last == .stop(skew))
    }

    /// A new timeline starts the push over from where the replica stands;
    /// it is no stall (a sync bounds how many it takes).
    @Test func aNewTimelineStartsOverWithoutAStall() {
        let (actions, session) = Self.push(unpushed: 3) { request, _, last in
            request <= 3 ? .newTimeline : .answer(Self.answer(last))
        }
        #expect(Self.sends(actions) == [0, 0, 0, 0, 3])
        #expect(actions.last == .finished && session.stalls == 0)
    }

    @Test func aFinishedPushStaysFinished() {
        var session = PushSession(pushedThrough: 0, unpushed: 0)
        #expect(session.next(.begin) == .send(after: 0, carried: nil))
        #expect(session.next(.nothingLeft) == .finished)
        #expect(session.next(.begin) == .finished)
    }
}
