/// One push, as a state machine without I/O: it owns where the push stands
/// (what the server acknowledged, the chain carried from batch to batch,
/// the repairs tried, the answers that did not move it on) and says what
/// the driver does next; the driver (`SyncClient`'s push) carries out each
/// action and feeds back what came of it as one ``Input``.
///
/// The push ends whatever the server answers. Each answer either moves the
/// acknowledgement on by a change at least, or comes with work the push
/// decided (a repair, a fork, a record relayed whole, a new timeline), and
/// each of those is bounded: ``PushMachine`` tries each repair a few times
/// per push, each change's whole record is relayed once, and a sync takes
/// few timeline changes. Answers that do neither (a stall: an
/// acknowledgement that never moves, always one short) are what a lying
/// server sends; past ``maxStalls`` of them the push stops, however many
/// batches or records the work takes (a budget counted in requests accused
/// an honest server after a copied home).
public struct PushSession: Sendable {
    /// What came of the driver's last action.
    public enum Input: Sendable, Equatable {
        /// The push begins.
        case begin
        /// ``Action/send(after:carried:)`` found no unpushed change after `after`.
        case nothingLeft
        /// The server refused the batch with a ``PushMachine/repairable``
        /// refusal; `ourDigest`: this replica's chain through the change the
        /// refusal names as acknowledged, when it has one.
        case refused(WireError, ourDigest: String?)
        /// The answer named another account or epoch, and the replica
        /// started over on it; `pushedThrough` as its log stands now.
        case timelineChanged(pushedThrough: Int64)
        /// The server took the batch. `ourChain`: this replica's chain
        /// through the change the answer acknowledges; `last`: the server's
        /// last refusal in this client (named when the push stops).
        case answered(PushResponse, ourChain: String?, last: WireError?)
        /// The driver recorded what the answer reports (``Action/review``).
        case reviewed
        /// A repair was carried out; `pushedThrough` as the log stands now.
        case repaired(pushedThrough: Int64)
        /// The driver kept the answer (``Action/keep(acknowledged:relaying:)``);
        /// `chain`: this replica's chain through the acknowledged change,
        /// when known; `relayed`: the records it relayed whole for it.
        case kept(chain: String?, relayed: Int)
    }

    /// What the driver does next.
    public enum Action: Sendable, Equatable {
        /// Send the unpushed changes after `after`, a batch. `carried`: the
        /// chain through a change this push knows without reading the log.
        case send(after: Int64, carried: Carried?)
        /// Carry out this repair (of a refused batch, or a fork after an
        /// acknowledgement not ours), then say where the log stands.
        case repair(PushMachine.Repair)
        /// The acknowledged change is this replica's: check what the answer
        /// reports (its conflicts and refusals) against the batch sent.
        case review
        /// Keep what the answer acknowledged, through `acknowledged`, after
        /// relaying whole the records of the changes in `relaying`.
        case keep(acknowledged: Int64, relaying: Set<Int64>)
        /// Stop the push with this refusal.
        case stop(WireError)
        /// Stop the push: the server's answers never let it finish (a bad answer).
        case giveUp(String)
        /// Every change went up.
        case finished
    }

    /// The chain through one change of this device.
    public struct Carried: Sendable, Equatable {
        public let sequence: Int64
        public let chain: String
    }

    /// Answers of one push that neither move the acknowledgement on nor
    /// come with work the push decided, before it stops: an honest server
    /// sends none.
    public static let maxStalls = 24

    /// The repairs tried in this push.
    private var machine = PushMachine()
    /// Through which change the server holds this device's changes, as this push knows.
    public private(set) var pushedThrough: Int64
    /// The highest acknowledgement since the last repair: an answer below
    /// or at it moved nothing on.
    private var mark: Int64
    private var carried: Carried?
    /// Batches sent.
    public private(set) var requests = 0
    public private(set) var stalls = 0
    /// The changes unpushed when the push began (named when it gives up).
    private let total: Int
    /// The answer being taken, between ``Input/answered(_:ourChain:last:)`` and ``Input/reviewed``.
    private var answer: (response: PushResponse, last: WireError?)?
    private var finished = false

    public init(pushedThrough: Int64, unpushed: Int) {
        self.pushedThrough = pushedThrough
        mark = pushedThrough
        total = unpushed
    }

    public mutating func next(_ input: Input) -> Action {
        if finished { return .finished }
        switch input {
        case .begin:
            return send()
        case .nothingLeft:
            finished = true
            return .finished
        case .refused(let refusal, let ourDigest):
            return decided(machine.refused(refusal, ourDigest: ourDigest))
        case .timelineChanged(let pushedThrough), .repaired(let pushedThrough):
            restart(at: pushedThrough)
            return send()
        case .answered(let response, let ourChain, let last):
            if let repair = machine.checkAcknowledged(response, ourChain: ourChain, last: last) {
                return decided(repair)
            }
            answer = (response, last)
            return .review
        case .reviewed:
            guard let (response, last) = answer else { return send() }
            switch machine.accept(response, last: last) {
            case .stop(let refusal):
                return stop(refusal)
            case .accept(let relaying):
                return .keep(acknowledged: response.acknowledged, relaying: relaying)
            }
        case .kept(let chain, let relayed):
            guard let (response, _) = answer.take() else { return send() }
            let acknowledged = response.acknowledged
            pushedThrough = acknowledged
            if acknowledged > mark {
                mark = acknowledged
            } else if relayed == 0 {
                // Nothing moved on, and no record relayed whole explains it
                // (each change's record goes up once a push).
                stalls += 1
            }
            carried = acknowledged > 0 ? chain.map { Carried(sequence: acknowledged, chain: $0) } : nil
            return send()
        }
    }

    /// The next batch, unless the answers stalled the push too often.
    private mutating func send() -> Action {
        guard stalls <= Self.maxStalls else {
            finished = true
            return .giveUp(
                """
                the server's answers never let this push finish (\(requests) requests for \(total) change(s)): \
                stopped; every edit is kept for the next sync
                """)
        }
        requests += 1
        // Used once: a repair rewrites what follows it.
        defer { carried = nil }
        return .send(after: pushedThrough, carried: carried)
    }

    /// A repair decided: carried out before the push goes on (or the stop).
    private mutating func decided(_ repair: PushMachine.Repair) -> Action {
        if case .stop(let refusal) = repair { return stop(refusal) }
        return .repair(repair)
    }

    /// After a repair, a fork or a new timeline the log may stand anywhere:
    /// the push goes on from there, and only what moves past it counts.
    private mutating func restart(at pushedThrough: Int64) {
        self.pushedThrough = pushedThrough
        mark = pushedThrough
        carried = nil
        answer = nil
    }

    private mutating func stop(_ refusal: WireError) -> Action {
        finished = true
        return .stop(refusal)
    }
}
