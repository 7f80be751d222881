import JSON
import Replica
import SyncCore

/// Changing the account key (`brsync key init` and `key rotate`): the server
/// deletes what the old key sealed (or the readable records) in the same
/// transaction as the change, so a change is a sync first and a
/// compare-and-swap: this machine pulls everything, merges and pushes, then
/// asks for the change naming the account sequence it has seen; a record
/// that arrived since makes the server refuse (`account_moved`), and the
/// machine syncs and asks again. What the server deletes is then held here,
/// and goes up sealed with the new key at once. Every other machine keeps
/// its copy and sends it again once it has the new code.
extension SyncClient {
    /// What a key change did.
    public struct KeyChange: Sendable {
        /// The syncs before the change (pulled and pushed; more than one when
        /// the account moved meanwhile).
        public var before = Summary()
        /// The first sync with the new key (every record sent sealed).
        public var after = Summary()
        /// How many times the change was asked for.
        public var attempts = 0
    }

    /// Most syncs before a key change gives up because other machines keep
    /// writing. Default 5.
    static let keyChangeAttempts = 5

    /// Changes the account's key to `key`: encrypts the account when this
    /// client has no key, rotates it from this client's key otherwise.
    /// The new key waits in `account-key.next` from before the server is
    /// asked (`announce` is called then: the server may take the key from
    /// that moment, so its code must be shown), and replaces the current key
    /// once the server has it; the current key is kept as an older key.
    /// - Throws: ``SyncError/refused(code:message:)`` when the server will
    ///   not change the key (encrypted already; rotated elsewhere; the
    ///   account kept moving), with the pending key removed; any other
    ///   failure (no answer, an answer that is not the protocol) leaves it
    ///   pending for the next sync to settle.
    /// - Parameter afterReset: the operator reset the account's encryption
    ///   and this client holds the retired key: nothing is synced first (it
    ///   would not be, readable), and the account is encrypted with `key`.
    /// - Parameter despiteHeldChecks: change the key even while this machine
    ///   holds failures of other devices' ledgers (Deploy/SECURITY.md: the
    ///   change carries what this machine holds and ends those checks,
    ///   which are kept as ended, ``Replica/ledgerFailuresEnded(now:)``);
    ///   without it such a change is refused before anything is done.
    public func changeAccountKey(
        to key: AccountKey, afterReset: Bool = false, despiteHeldChecks: Bool = false,
        announce: (AccountKey) -> Void
    ) throws -> KeyChange {
        if !despiteHeldChecks {
            let held = try replica.ledgerFailures(now: nil)
            if !held.isEmpty { throw SyncError.usage(try Self.heldChecksMessage(held, names: replica.deviceNames())) }
        }
        var change = KeyChange()
        var certificate: KeyCertificate?
        try replica.noteKeyMadeHere(key.id)
        try AccountKeyFile.write(key, home: replica.home, pending: true)
        announce(key)
        do {
            try locked {
                while true {
                    change.attempts += 1
                    // After a reset, what machines without a key sent since is
                    // pulled (readable); nothing goes up readable from here.
                    let seen: Int64
                    if afterReset {
                        seen = try pullEveryRecord(sealedWith: nil)
                        change.before = summary
                    } else {
                        change.before = try sync()
                        seen = try replica.syncState().pullCursor
                    }
                    do {
                        let answer: (changed: Bool, key: String, certificate: KeyCertificate?)
                        if afterReset {
                            let encrypted = try encryptAccount(with: key, seen: seen, onPurpose: true)
                            answer = (encrypted.changed, encrypted.key, nil)
                        } else {
                            answer = try rotateAccount(to: key, seen: seen)
                        }
                        certificate = answer.certificate
                        guard answer.key == key.id else {
                            throw SyncError.refused(
                                code: .noAccountKey,
                                message:
                                    "this account is end-to-end encrypted already: add its recovery code here with 'brsync key add' (nothing was changed)"
                            )
                        }
                        return
                    } catch SyncError.refused(code: .accountMoved, _) where change.attempts < Self.keyChangeAttempts {
                        continue
                    }
                }
            }
        } catch SyncError.refused(let code, let message) {
            // A definite refusal: the server does not use the key. Any other
            // failure (no answer, an answer garbled by a proxy after the
            // server committed) may hide a change the server made: the key
            // stays pending, and the next sync settles it (see
            // ``AccountKeyFile/settle(home:accountKeyID:)``).
            AccountKeyFile.remove(home: replica.home, pending: true)
            throw SyncError.refused(code: code, message: message)
        }
        try AccountKeyFile.promotePending(home: replica.home)
        // Every machine that syncs with the new key learns what it replaced.
        if let keyID { try replica.recordReplacedKeyIDs([keyID] + olderKeys.map(\.id)) }
        if let certificate { try replica.recordKeyCertificates([certificate]) }
        // The same connection: the new key changes what is sealed, not where it goes.
        let next = SyncClient(
            replica: replica, http: transport.http, remote: remote, token: token, accountKey: key,
            olderKeys: (accountKey.map { [$0] } ?? []) + olderKeys, options: options, progress: progress)
        change.after = try next.sync()
        return change
    }
}

extension SyncClient {
    /// Why a key change waits while `held` (this machine's failing checks
    /// of other devices' ledgers) stand.
    public static func heldChecksMessage(_ held: [LedgerFailure], names: DeviceNames) -> String {
        let listed = held.prefix(5).map {
            "\(DisplayText.printable(names.display($0.device))): \(DisplayText.printable(String($0.what.prefix(200))))"
        }
        return
            "this machine's checks of \(held.count) other device(s) are failing (\(listed.joined(separator: "; "))): "
            + "a key change now would carry what this machine holds into the new key and end those checks. Run "
            + "'brsync sync' on those devices and let the checks clear (a check held may clear by itself at the next "
            + "pull; a device that will never sync again: 'brsync device forget DEVICE'), or go on anyway with --yes "
            + "(nothing was changed)"
    }
}
