/// Where the server holds a replica's own stream of changes, as a pull that
/// asked (``PullRequest/chainOf``) was answered: the number of the last
/// change it took under the device id and its chain digest (0 and "" when it
/// holds none; "" alone for a stream kept from before servers kept digests). The replica compares it with its own change log
/// (``standing(pushedThrough:ourChain:)``), as a push compares a `gap`.
public struct ChainEcho: Sendable, Equatable {
    public var last: Int64
    public var digest: String

    public init(last: Int64, digest: String) {
        self.last = last
        self.digest = digest
    }

    /// What the server's chain of this device id is, as the replica sees it.
    public enum Standing: Sendable, Equatable {
        /// The server's chain ends where this replica's acknowledged pushes end.
        case ours
        /// The server holds this replica's chain only through `last`, before
        /// its last acknowledged push: it was restored from an older copy (or
        /// never took a change, `last` 0). The next push sends the rest again.
        case behind(last: Int64)
        /// The server holds this replica's chain further than it was told, through `last`:
        /// an answer to one of its pushes was lost.
        case ahead(last: Int64)
        /// The chain the server holds under this id is not this replica's:
        /// another home syncs under it (a copy of this one), or the server
        /// mixes up devices.
        case another
        /// The token reaches another account than the one this replica
        /// synced with: the account's streams say nothing of this replica's
        /// (its next sync joins that account as a new machine, or stops with
        /// a key of its own account).
        case otherAccount
        /// The server did not say (it is older than the chain echo, or the
        /// id is not the one this token last pushed under), or keeps no
        /// digest of its last change: nothing can be told.
        case unknown
    }

    /// Compares the server's chain with this replica's.
    /// - Parameters:
    ///   - pushedThrough: the replica's last change the server acknowledged.
    ///   - ourChain: the replica's chain digest through a change number, nil
    ///     for a number its log does not hold (never made here, or dropped).
    public func standing(pushedThrough: Int64, ourChain: (Int64) throws -> String?) rethrows -> Standing {
        if last == 0 { return pushedThrough == 0 ? .ours : .behind(last: 0) }
        if digest.isEmpty { return .unknown }
        guard try ourChain(last) == digest else { return .another }
        if last == pushedThrough { return .ours }
        return last < pushedThrough ? .behind(last: last) : .ahead(last: last)
    }
}
