/// The order of a sync's phases, without I/O: which phase the client runs
/// next (`SyncClient`'s driver carries each out and feeds back what came of
/// it). `brsync push`, `brsync pull` and `brsync sync` are this one
/// sequence with different goals, so each step runs once where the sequence
/// needs it: a copied home takes its new id once, the server is brought in
/// line once, and a pull that meets another timeline hands the push back
/// to the sequence instead of running one itself.
///
/// The phases themselves decide within (``PushMachine``, ``PullMachine``);
/// their bounds, and the bound on timeline changes in one sync, make the
/// sequence end: each outcome that adds steps comes from one of them.
public struct SyncMachine: Sendable, Equatable {
    /// What the user asked for.
    public enum Goal: Sendable, Equatable {
        /// Send every unpushed change (`brsync push`).
        case push
        /// Take in every page after the cursor (`brsync pull`).
        case pull
        /// Take in the next page only, as it stands: no preparing, and a
        /// refusal is the answer (a pull stopped after its first page, as
        /// the tests stop one; what is local still goes up first when the
        /// page is on another timeline).
        case pullPage
        /// Push, then pull until nothing is left (`brsync sync`, the watch).
        case sync
    }

    /// What the driver does next.
    public enum Step: Sendable, Hashable {
        /// A copied or restored replica file takes a new device id before it pushes.
        case takeNewIDIfCopied
        /// Bring the server in line with this replica: a key change begun or
        /// ended here, the account encrypted, every record relayed while a
        /// full relay is pending.
        case prepare
        /// Send every unpushed change in batches, then this device's name and
        /// ledger request.
        case push
        /// Pull and apply pages up to the server's head.
        case pull
        /// Whether the pull found records the server lacks (they go up at once).
        case checkUndelivered
        /// Send a ledger request the push could not send yet (its book known
        /// to be current only once the pull reached the server's head).
        case finishLedger
        /// Take in what the server said of this device's ledger.
        case noteOwnLedger
        /// Stop with the push's refusal now (only a sync pulls after one).
        case stopWithRefusal
        /// The sequence is over. `record`: keep the sync's outcome for
        /// `brsync status`; `refused`: end with the push's refusal, after the pull.
        case finish(record: Bool, refused: Bool)
    }

    /// What came of the step the driver carried out last.
    public enum Outcome: Sendable, Equatable {
        /// It ran to its end.
        case done
        /// The push stopped with a refusal that waits for the user.
        case pushRefused
        /// The pull met another timeline (a new epoch or account): what is
        /// local goes up first, then the pull starts over.
        case timelineChanged
        /// The answer to ``Step/checkUndelivered``.
        case undelivered(Bool)
    }

    public let goal: Goal
    /// The steps to come, in order.
    private var steps: [Step]
    /// The step handed out last (its outcome comes next).
    private var current: Step?
    /// Whether a copied home was checked for in this sequence.
    private var copiedChecked = false
    /// Whether the push refused (a sync: the pull goes on, the refusal ends it).
    private var refused = false
    /// Whether the records the pull found missing went up once already.
    private var resent = false
    /// Whether the push under way is the sequence's first (only its refusal waits for the pull).
    private var firstPush = true

    public init(_ goal: Goal) {
        self.goal = goal
        switch goal {
        case .push:
            steps = [.takeNewIDIfCopied, .prepare, .push, .noteOwnLedger, .finish(record: false, refused: false)]
        case .pull:
            steps = [.prepare, .pull, .finish(record: false, refused: false)]
        case .pullPage:
            steps = [.pull, .finish(record: false, refused: false)]
        case .sync:
            steps = [
                .takeNewIDIfCopied, .prepare, .push, .pull, .checkUndelivered, .finishLedger, .noteOwnLedger,
                .finish(record: true, refused: false),
            ]
        }
    }

    /// The next step, given what came of the one before (``Outcome/done``
    /// for the first). After ``Step/finish(record:refused:)`` or
    /// ``Step/stopWithRefusal`` the sequence is over and keeps answering it.
    public mutating func next(_ outcome: Outcome) -> Step {
        if let current { take(outcome, of: current) }
        guard !steps.isEmpty else { return current ?? .finish(record: false, refused: false) }
        var step = steps.removeFirst()
        switch step {
        case .takeNewIDIfCopied: copiedChecked = true
        case .finish(let record, _): step = .finish(record: record, refused: refused)
        default: break
        }
        current = step
        return step
    }

    /// Changes the steps to come by what came of `step`.
    private mutating func take(_ outcome: Outcome, of step: Step) {
        switch (step, outcome) {
        case (.push, .pushRefused):
            // Only a sync's first push waits: the machine still takes in
            // everyone else's rules, then the refusal is what it ends with.
            guard goal == .sync, firstPush else {
                steps = [.stopWithRefusal]
                return
            }
            refused = true
            steps.removeAll { $0 == .checkUndelivered || $0 == .finishLedger }
        case (.pull, .timelineChanged):
            // Another timeline: everything local goes up (on the new one),
            // then the pull starts over.
            var first: [Step] = copiedChecked ? [] : [.takeNewIDIfCopied]
            first += [.prepare, .push, .pull]
            steps.insert(contentsOf: first, at: 0)
        case (.checkUndelivered, .undelivered(true)) where !resent:
            resent = true
            steps.insert(contentsOf: [.push, .pull], at: 0)
        default:
            break
        }
        if step == .push { firstPush = false }
        if case .stopWithRefusal = step { steps = [] }
        if case .finish = step { steps = [] }
    }
}
