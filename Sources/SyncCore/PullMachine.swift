/// The decisions of a pull, without I/O: what the client does with a page
/// before applying it. Its inputs are the page's facts and what the driver
/// found when it noted the page's account and epoch; its outputs are actions
/// the driver carries out (`SyncClient`'s pull). Starting over is bounded, so
/// a server that keeps changing its timeline stops the pull.
public struct PullMachine: Sendable {
    public enum Action: Sendable, Equatable {
        /// Another timeline (a new account or epoch): everything local goes
        /// up again, then the pull starts over from zero. `fullResync`: say
        /// so in the summary (the driver says it for a new epoch itself).
        case pushThenStartOver(fullResync: Bool)
        /// The server purged a deletion this replica never pulled (or it
        /// pulls from zero and may hold records from before): pull
        /// everything, and drop what the server no longer has.
        case reconcile(fullResync: Bool)
        /// This replica has a key and the account is readable: the server
        /// was restored from before the switch; encrypt it again and send
        /// every record, then start over.
        case encryptAgainAndStartOver
        /// This replica has a key and the server's operator reset the
        /// account's encryption: stop, and say what the user can do (a
        /// machine with a key never syncs readable on the server's word).
        case encryptionWasReset
        /// The account is encrypted and this replica has no key.
        case needKey
        /// Apply the page.
        case apply
        /// The server keeps starting over: stop with this bad answer.
        case stop(String)
    }

    /// Most times one pull starts over.
    public static let restartLimit = 3

    private var restarts = 0

    public init() {}

    /// - Parameters:
    ///   - accountChanged: the page names another account than the replica's.
    ///   - epochChanged: the page's epoch is not the replica's (a restore).
    ///   - hasKey: this replica holds the account key.
    ///   - cursor: the replica's pull cursor before this page.
    public mutating func decide(
        _ page: PullResponse, accountChanged: Bool, epochChanged: Bool, hasKey: Bool, cursor: Int64
    ) -> Action {
        // Nothing of a replica without the key goes up to an encrypted
        // account, not even on another timeline or account: it waits for the key.
        if page.encrypted, !hasKey { return .needKey }
        if accountChanged || epochChanged {
            if let stop = restart("the server changed its epoch or account") { return stop }
            return .pushThenStartOver(fullResync: accountChanged)
        }
        if page.reset {
            if let stop = restart("the server asked to start over") { return stop }
            return .reconcile(fullResync: cursor > 0)
        }
        if page.encrypted != hasKey {
            guard hasKey else { return .needKey }
            if page.encryptionReset { return .encryptionWasReset }
            if let stop = restart("the server keeps its account readable after it was encrypted (", closing: ")") {
                return stop
            }
            return .encryptAgainAndStartOver
        }
        return .apply
    }

    /// Counts one start-over; the answer to stop with past ``restartLimit``.
    private mutating func restart(_ what: String, closing: String = "") -> Action? {
        restarts += 1
        guard restarts > Self.restartLimit else { return nil }
        let count =
            closing.isEmpty ? " \(restarts) times during one pull" : "\(restarts) times during one pull\(closing)"
        return .stop(what + count)
    }
}
