import Replica
import SyncCore

/// The driver of a sync's phases: ``SyncMachine`` says which phase comes
/// next, this carries it out and feeds back what came of it.
extension SyncClient {
    /// Runs the sequence for `goal`, holding the lock.
    func run(_ goal: SyncMachine.Goal) throws -> Summary {
        _ = try drive(goal)
        return summary
    }

    /// ``run(_:)``, or for ``SyncMachine/Goal/pullPage``, one page.
    /// - Returns: whether more pages wait (only a one-page pull stops short).
    func drive(_ goal: SyncMachine.Goal) throws -> Bool {
        let onePage = goal == .pullPage
        var machine = SyncMachine(goal)
        partUnderWay = Self.part(of: .finish(record: false, refused: false), in: goal)
        var outcome = SyncMachine.Outcome.done
        // The push's refusal a sync ends with, after its pull.
        var refusal: SyncError?
        var more = false
        while true {
            let step = machine.next(outcome)
            outcome = .done
            partUnderWay = Self.part(of: step, in: goal)
            switch step {
            case .takeNewIDIfCopied:
                try checkCopied()
            case .prepare:
                try retryingAfterMovingForward { try prepareSync() }
            case .push:
                do {
                    try retryingAfterMovingForward { try pushPhase() }
                } catch let error as SyncError where error.waitsForTheUser {
                    refusal = error
                    outcome = .pushRefused
                }
            case .pull:
                // One page is taken as it stands (a refusal is its answer).
                let pulled =
                    onePage
                    ? try pullPhase(onePage: true)
                    : try retryingAfterMovingForward { try pullPhase(onePage: false) }
                switch pulled {
                case .atHead: more = false
                case .more: more = true
                case .timelineChanged: outcome = .timelineChanged
                }
            case .checkUndelivered:
                outcome = .undelivered(try !replica.undeliveredRecords().isEmpty)
            case .finishLedger:
                try finishLedger()
            case .noteOwnLedger:
                try noteOwnLedger()
            case .stopWithRefusal:
                if let refusal { throw refusal }
                return more
            case .finish(let record, let refused):
                if refused, let refusal { throw refusal }
                if record { try recordFinishedSync() }
                return more
            }
        }
    }

    /// The part of a run a step is: a push or pull alone is all that part;
    /// in a sync, pushing (and the refusal it ends with) is the push's, pulling
    /// the pull's, the rest the sync's own.
    private static func part(of step: SyncMachine.Step, in goal: SyncMachine.Goal) -> SyncPart {
        switch (goal, step) {
        case (.push, _): .push
        case (.pull, _), (.pullPage, _): .pull
        case (_, .push), (_, .stopWithRefusal), (_, .finish(_, refused: true)): .push
        case (_, .pull), (_, .checkUndelivered): .pull
        default: .sync
        }
    }

    /// Runs a push or a pull alone (`goal`), keeping how it ended for
    /// `brsync status`: a problem it stopped with, or what it said when it
    /// finished; finished, it ends the problems its part and the sync's own
    /// kept (``Replica/clearSyncProblems(after:)``).
    func runAlone(_ goal: SyncMachine.Goal) throws -> Summary {
        let part = Self.part(of: .finish(record: false, refused: false), in: goal)
        do {
            let summary = try run(goal)
            try replica.clearSyncProblems(after: part)
            if !summary.problems.isEmpty {
                try replica.recordSyncProblem(
                    summary.problems.joined(separator: "; "), code: SyncState.finishedCode, in: part)
            }
            return summary
        } catch {
            throw try stopped(by: error)
        }
    }

    /// Keeps why a sync, push or pull stopped for `brsync status`, with the
    /// part it stopped in (a stop asked for is no problem to show); the
    /// error to end with. The server's refusal to take this key because the operator
    /// reset the account stops as a page saying so does.
    func stopped(by error: any Error) throws -> any Error {
        if case SyncError.refused(code: .encryptionReset, _) = error, cipher != nil {
            try replica.noteEncryptionReset()
            try? replica.recordSyncProblem(
                Self.encryptionWasReset.description, code: WireError.Code.encryptionReset.rawValue,
                in: partUnderWay)
            return Self.encryptionWasReset
        }
        if error as? SyncError != .cancelled {
            try? replica.recordSyncProblem(
                "\(error)", code: (error as? SyncError)?.code?.rawValue, in: partUnderWay)
        }
        return error
    }

    /// Keeps a sync that ran to its end for `brsync status`, with the
    /// problems it met.
    private func recordFinishedSync() throws {
        try replica.recordSync()
        try replica.clearSyncProblems(after: .sync)
        if !summary.problems.isEmpty {
            try replica.recordSyncProblem(
                summary.problems.joined(separator: "; "), code: SyncState.finishedCode, in: .sync)
        }
    }
}
