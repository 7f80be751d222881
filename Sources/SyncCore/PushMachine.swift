/// The decisions of a push, without I/O: what the client does after the
/// server answered a batch. Its inputs are the answer and the facts of the
/// replica the decision needs (read by the driver beforehand); its outputs
/// are actions the driver carries out (`SyncClient`'s push). Each repair is
/// tried a bounded number of times, so a server that keeps refusing stops
/// the push instead of looping.
public struct PushMachine: Sendable {
    /// What the driver does after the server refused a batch (``refused(_:ourDigest:)``).
    public enum Repair: Sendable, Equatable {
        /// The server's account is readable (restored from before the switch
        /// to encryption): encrypt it again and send every record sealed.
        case encryptAgainAndRelayAll
        /// The server holds this device's changes through `sequence`, and
        /// they are ours: send again from the change after it.
        case rewind(to: Int64)
        /// Another replica used this device id and its numbers: take a new id.
        case fork
        /// The server refused the stamps of the changes it was sent: re-stamp
        /// the unpushed ones, after marking pushed what the server has of
        /// ours (`markPushedThrough`), relaying whole the records it had
        /// acknowledged before a restore, and (`relayStampedAhead`, when
        /// refused again after re-stamping) relaying first the records this
        /// replica stamped ahead of the server's clock.
        case restamp(markPushedThrough: Int64?, relayStampedAhead: Bool)
        /// The server keeps refusing: stop the push with this refusal.
        case stop(WireError)
    }

    /// What the driver does with a batch the server took (``accept(_:last:)``).
    public enum Acceptance: Sendable, Equatable {
        /// Mark it pushed through the acknowledged change, after relaying
        /// whole the records of the changes in `relaying` (edits of records
        /// the server no longer has).
        case accept(relaying: Set<Int64>)
        /// The server keeps asking for the same record: stop the push with this refusal.
        case stop(WireError)
    }

    /// The refusals a push repairs; any other stops it.
    public static let repairable: Set<WireError.Code> = [.gap, .diverged, .clockSkew, .notEncrypted]

    /// A repair, counted per push.
    enum Attempt: Hashable {
        /// The repair of a refusal with this code (an acknowledgement of
        /// another replica's change counts as `diverged`).
        case refusal(WireError.Code)
        /// The relay of a change's whole record the server asked for.
        case needed(Int64)
    }

    /// How many times each repair was tried in this push.
    private var attempts: [Attempt: Int] = [:]

    public init() {}

    /// Counts one try of `attempt`; nil while it was tried at most `times`,
    /// else the refusal to stop with: `last`, the server's last refusal in
    /// this client, when there is one, else `stop`.
    private mutating func attempt(
        _ attempt: Attempt, times: Int = 1, last: WireError?, stop: @autoclosure () -> WireError
    ) -> WireError? {
        attempts[attempt, default: 0] += 1
        guard attempts[attempt, default: 0] > times else { return nil }
        return last ?? stop()
    }

    /// After the server refused a batch with a ``repairable`` refusal.
    /// - Parameter ourDigest: this replica's digest of the change the
    ///   refusal names as acknowledged (`refusal.acknowledged`), when it has one.
    public mutating func refused(_ refusal: WireError, ourDigest: String?) -> Repair {
        let code = refusal.code
        if let stop = attempt(.refusal(code), times: code == .clockSkew ? 2 : 1, last: refusal, stop: refusal) {
            return .stop(stop)
        }
        let acknowledged = refusal.acknowledged ?? 0
        let digest = refusal.digest ?? ""
        switch code {
        case .notEncrypted:
            return .encryptAgainAndRelayAll
        case .gap:
            // The server has this device's changes up to `acknowledged`: if
            // that change is ours, continue from there; if not, the numbers
            // were used by a copy of this replica.
            return acknowledged == 0 || digest.isEmpty || ourDigest == digest ? .rewind(to: acknowledged) : .fork
        case .clockSkew:
            // The server has this device's changes up to `acknowledged` (a
            // retried batch may have been applied): only later ones are re-stamped.
            let ours = acknowledged > 0 && !digest.isEmpty && ourDigest == digest
            return .restamp(
                markPushedThrough: ours ? acknowledged : nil,
                relayStampedAhead: attempts[.refusal(code), default: 0] > 1)
        default:
            return .fork
        }
    }

    /// After the server took a batch: nil when the change it acknowledged
    /// is this replica's; else another replica used this device id and its
    /// numbers (``Repair/fork``, or ``Repair/stop(_:)`` when forking did not
    /// help), counted with the `diverged` refusals.
    /// - Parameters:
    ///   - ourChain: this replica's chain through the acknowledged change.
    ///   - last: the server's last refusal in this client, if any (named when stopping).
    public mutating func checkAcknowledged(_ response: PushResponse, ourChain: String?, last: WireError?) -> Repair? {
        guard !response.acknowledgedDigest.isEmpty, response.acknowledged > 0, ourChain != response.acknowledgedDigest
        else { return nil }
        let stop = WireError(
            code: .diverged,
            message: "the server keeps acknowledging changes this machine did not make under its "
                + "device id, even under a new one (another copy of this home syncing, or a server that mixes up devices); "
                + "every edit is kept here")
        if let stop = attempt(.refusal(.diverged), last: last, stop: stop) { return .stop(stop) }
        return .fork
    }

    /// After the server took a batch whose acknowledged change is ours:
    /// ``Acceptance/accept(relaying:)``, with the changes whose records the
    /// server no longer has (the record goes up whole, then the push goes on
    /// from that change; acknowledged stops before it). Asked twice for the
    /// same change, the relay was refused: ``Acceptance/stop(_:)``.
    public mutating func accept(_ response: PushResponse, last: WireError?) -> Acceptance {
        let needed = Set(response.needed)
        for sequence in needed.sorted() {
            let stop = WireError(
                code: .conflict,
                message: "the server asked twice in one push for the whole record of change \(sequence) "
                    + "(it does not keep what it is sent, or names a change the push did not send); "
                    + "the edit is kept here")
            if let stop = attempt(.needed(sequence), last: last, stop: stop) { return .stop(stop) }
        }
        return .accept(relaying: needed)
    }
}
