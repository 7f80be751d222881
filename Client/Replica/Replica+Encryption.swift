import SyncCore

/// The replica's side of end-to-end encryption (issue 13). The replica stays
/// readable on the device; what changes is what the server is told: sealed
/// changes, whose chains the replica must compute over the sealed bytes (the
/// server chains what it receives), and a fresh start on the server when an
/// account key arrives.
extension Replica {
    /// Where the switch to an account key stands: the key this replica syncs
    /// with (its id, never the key) and whether every record still has to go
    /// up sealed.
    public struct EncryptionState: Sendable, Equatable {
        public var keyID: String?
        public var relayPending: Bool
    }

    public func encryptionState() throws -> EncryptionState {
        EncryptionState(keyID: try meta("e2e_key"), relayPending: try meta("e2e_relay") != nil)
    }

    /// Starts syncing with the account key `keyID`, in one transaction: the
    /// server deleted the account's readable records when it was encrypted
    /// (or holds others sealed with another key), so this replica takes a
    /// new device id (its unpushed changes renumbered from 1), pulls from
    /// zero, and sends every record it holds again, sealed (``encryptionState()``
    /// says so until ``finishEncryptedRelay()``). Chains computed over
    /// readable changes are forgotten.
    /// - Returns: the new device id.
    @discardableResult
    public func beginEncryptedSync(keyID: String) throws -> String {
        try transaction {
            let id = try forkDeviceID()
            try database.run("UPDATE changes SET chain = NULL")
            try database.run("DELETE FROM reconcile_seen")
            try setMeta("reconcile", nil)
            try setMeta("pull_cursor", "0")
            try setMeta("e2e_key", keyID)
            try setMeta("e2e_relay", "1")
            return id
        }
    }

    /// Every record went up sealed.
    public func finishEncryptedRelay() throws {
        try transaction { try setMeta("e2e_relay", nil) }
    }

    /// The server's account is not encrypted although this replica syncs
    /// with a key (the server was restored from before the switch): the
    /// account is encrypted again and every record sent again.
    public func requireEncryptedRelay() throws {
        try transaction { try setMeta("e2e_relay", "1") }
    }
}
