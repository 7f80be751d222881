/// The decisions a sync makes about the timeline before and between its
/// transfers, without I/O: which account and epoch an answer belongs to,
/// whether the replica starts over with its key, what must go up whole
/// before anything else, and whether a server sealed with another key was
/// restored from before a rotation. The driver (`SyncClient`) reads the
/// facts, asks, and carries the answer out; ``PushMachine`` and
/// ``PullMachine`` decide inside a transfer.
public enum SessionRules {
    /// What an answer's account means for the replica.
    public enum AccountStep: Sendable, Equatable {
        /// The account this replica's key belongs to (or no key, or the
        /// answer names none): go on.
        case known
        /// The replica has a key that belongs to no account yet: this one
        /// is its account from now on.
        case adoptForKey
        /// The replica's key belongs to another account: stop before
        /// anything changes (its rules never go to another account).
        case otherAccount
    }

    /// - Parameters:
    ///   - account: the account the answer names ("" from servers that name none).
    ///   - hasKey: the replica syncs with an account key.
    ///   - keyAccount: the account the replica's key belongs to, when known.
    public static func account(_ account: String, hasKey: Bool, keyAccount: String?) -> AccountStep {
        guard hasKey, !account.isEmpty else { return .known }
        guard let keyAccount else { return .adoptForKey }
        return keyAccount == account ? .known : .otherAccount
    }

    /// What an answer's epoch means for the replica.
    public enum EpochStep: Sendable, Equatable {
        /// The epoch the replica knows.
        case same
        /// The first epoch this replica sees: remember it, nothing to redo.
        case first
        /// Another epoch (the server was restored or set up again): start
        /// over from zero and send every record held, so nothing is lost.
        case changed
    }

    public static func epoch(_ epoch: String, known: String?) -> EpochStep {
        guard let known else { return .first }
        return known == epoch ? .same : .changed
    }

    /// Whether a replica starts over as a new device sealing with `keyID`
    /// (it has not synced with this key yet: the first key, or another).
    public static func startsEncryptedSync(keyID: String?, replicaKeyID: String?) -> Bool {
        guard let keyID else { return false }
        return replicaKeyID != keyID
    }

    /// Whether a replica that synced with a key starts over readable: its
    /// key is gone (every key lost, or `brsync key forget`). The chains it
    /// kept were over sealed bytes, its device id's history on the server
    /// was sealed: it takes a new device id, as for a new key.
    public static func endsEncryptedSync(keyID: String?, replicaKeyID: String?) -> Bool {
        keyID == nil && replicaKeyID != nil
    }

    /// What goes up whole before a transfer.
    public struct Relay: Sendable, Equatable {
        /// Ask the server to encrypt the account with this key first
        /// (asking again changes nothing).
        public var encryptWith: String?
        /// Leave out records only this device made: right after the switch
        /// to a key nothing of it is pushed yet, and its push carries them.
        public var skippingOwnUnpushed: Bool
    }

    /// - Parameters:
    ///   - keyID: the key the client seals with, if any.
    ///   - relayPending: the replica's records have not all gone up since
    ///     the switch to a key, a new epoch or a new account.
    ///   - relayIsSwitch: the pending relay is the one of the switch to a key.
    ///   - pushedThrough: this device's changes the server acknowledged.
    /// - Returns: nil when nothing is pending.
    public static func relay(keyID: String?, relayPending: Bool, relayIsSwitch: Bool, pushedThrough: Int64) -> Relay? {
        guard relayPending else { return nil }
        return Relay(encryptWith: keyID, skippingOwnUnpushed: relayIsSwitch && pushedThrough == 0)
    }

    /// What a client sealing with `keyID` does when the server's account is
    /// sealed with `serverKeyID`.
    public enum ServerKeyStep: Sendable, Equatable {
        /// The same key.
        case same
        /// A key this machine's key replaced: the server was restored from
        /// before a rotation; move it forward to this key.
        case moveForward
        /// A key this machine never held: a rotation on another machine;
        /// the new recovery code is needed.
        case rotatedElsewhere
    }

    /// - Parameter replaced: the keys this machine's key replaced (its own
    ///   older keys and those other machines' rotations named).
    public static func serverKey(_ serverKeyID: String, keyID: String, replaced: Set<String>) -> ServerKeyStep {
        if serverKeyID == keyID { return .same }
        return replaced.contains(serverKeyID) ? .moveForward : .rotatedElsewhere
    }

    /// What a key holder does with the signing key the server keeps for the
    /// account (a pull answer's or a key change's `signingKey`).
    public enum SigningKeyStep: Sendable, Equatable {
        /// Its own: go on.
        case same
        /// None yet (an account encrypted before signed writes): register
        /// its own, before anyone else can.
        case register
        /// Another key: someone without the account key registered it, or
        /// the server lies. Stop with an alarm; nothing is sent.
        case mismatch
    }

    /// - Parameters:
    ///   - registered: a pull answer's `signingKey` to a client that named
    ///     its own (`signer=`): nil when the server keeps that one, "" when
    ///     it keeps none, else the one it keeps.
    ///   - own: the signing public key derived from this machine's account key.
    public static func signingKey(registered: String?, own: String) -> SigningKeyStep {
        guard let registered else { return .same }
        if registered.isEmpty { return .register }
        return registered == own ? .same : .mismatch
    }

    /// Whether an epoch can be named in a request's query as it is (a
    /// server's epoch is lower-case letters and digits; anything else is
    /// left out, and the server answers with its own).
    public static func isPlainEpoch(_ epoch: String) -> Bool {
        epoch.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x7A) }
    }
}
