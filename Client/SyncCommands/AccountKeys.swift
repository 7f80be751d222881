import Glibc
import Replica
import SyncClient
import SyncCore
import SystemServices

/// What `brsync key …` decides and changes, as library calls: the account
/// key of end-to-end encryption (Deploy/SECURITY.md). Each call checks what
/// the command checks and refuses with the same message and exit status
/// (``CLIFailure``); it never prints, and never syncs: the caller says what
/// happens and runs the sync that follows (``Transfer``).
public enum AccountKeys {
    /// How `key init` goes on: the account is encrypted for the first time,
    /// or again with a new key after its operator reset its encryption.
    public enum Start {
        case encrypt(SyncClient)
        case encryptAgain(SyncClient)
    }

    /// Checks that `key init` may encrypt the account, before a code is made
    /// and shown (the change itself checks again).
    public static func startInit(_ replica: Replica) throws -> Start {
        let held = try AccountKeyFile.read(home: replica.home)
        let client = try machineClient(replica, key: .given(nil)).client
        let current = try client.accountKeyID()
        guard let key = held else {
            if current != nil {
                throw CLIFailure(
                    message:
                        "this account is end-to-end encrypted already: add its recovery code here with 'brsync key add' (nothing was changed)",
                    code: ExitStatus.refused)
            }
            // Its mark holds every record back, sealed ones too: cleared first, by the user, on the server's word.
            if try replica.encryptionState().sawEncrypted {
                throw CLIFailure(
                    message:
                        "this machine saw its account end-to-end encrypted and the server keeps this one readable now (the "
                        + "machine was moved to another account, or the operator reset the encryption): run 'brsync key forget' "
                        + "first, then 'brsync key init' (nothing was changed)",
                    code: ExitStatus.refused)
            }
            return .encrypt(client)
        }
        // A key here: the account is encrypted again only after a reset (its key retired).
        if current == key.id {
            throw CLIFailure(
                message:
                    "this account is end-to-end encrypted with this machine's key already; 'brsync key show' prints its recovery code"
            )
        }
        if current != nil {
            throw CLIFailure(
                message:
                    "this account is end-to-end encrypted with another key: add its recovery code with 'brsync key add' (nothing was changed)",
                code: ExitStatus.refused)
        }
        try replica.clearEncryptionReset()
        return .encryptAgain(try machineClient(replica, key: .given(key)).client)
    }

    /// Checks that `key rotate` may rotate the account's key: this machine's
    /// key is the account's.
    public static func startRotate(_ replica: Replica) throws -> SyncClient {
        guard let old = try AccountKeyFile.read(home: replica.home) else {
            throw CLIFailure(message: "this machine has no account key; 'brsync key init' encrypts the account")
        }
        let client = try machineClient(replica, key: .given(old)).client
        guard try client.accountKeyID() == old.id else {
            throw CLIFailure(
                message:
                    "this machine's account key is not the account's (rotated on another machine?): add the current one with 'brsync key add' first (nothing was changed)",
                code: ExitStatus.refused)
        }
        return client
    }

    /// Changes the account's key to a new one with `client` (see
    /// ``SyncClient/changeAccountKey(to:afterReset:announce:)``): `announce`
    /// gets the new key before the server is asked, to show its recovery
    /// code. After a failure, ``mayHaveChanged(home:)`` says whether the
    /// shown code counts.
    public static func change(
        _ client: SyncClient, afterReset: Bool, despiteHeldChecks: Bool = false, announce: (AccountKey) -> Void
    ) throws -> (change: SyncClient.KeyChange, key: AccountKey) {
        let newKey = AccountKey.generate()
        let change = try client.changeAccountKey(
            to: newKey, afterReset: afterReset, despiteHeldChecks: despiteHeldChecks, announce: announce)
        return (change, newKey)
    }

    /// After a key change failed: whether the server may have taken the new
    /// key (the next sync settles it), or the change did not happen.
    public static func mayHaveChanged(home: String) -> Bool {
        (try? AccountKeyFile.read(home: home, pending: true)) != nil
    }

    /// Adds `key` (a recovery code given) to this machine, after checking that
    /// it is the account's key now.
    /// - Returns: whether it replaced another key (kept after it, never used to seal).
    @discardableResult
    public static func add(_ key: AccountKey, to replica: Replica) throws -> (replaced: Bool, path: String) {
        let existing = try AccountKeyFile.read(home: replica.home)
        if existing?.id == key.id {
            throw CLIFailure(
                message: rotatedAway(replica)
                    ? "this is the code of the key this machine has, which the account was rotated away from: add the "
                        + "new code, from the machine that rotated it (its Encryption page shows it, or 'brsync key show' "
                        + "there). Nothing was saved"
                    : "this machine has this account key already")
        }
        if try replica.encryptionState().retiredKeyIDs.contains(key.id) {
            throw CLIFailure(
                message: "this code's key was retired (the account was rotated away from it, as this machine saw): "
                    + "nothing is sealed with it again. Add the account's current code (nothing was saved)",
                code: ExitStatus.refused)
        }
        // The code must be the account's key now; an older key here was rotated away.
        try machineClient(replica, key: .given(nil)).client.checkKey(key)
        try AccountKeyFile.add(key, home: replica.home)
        return (existing != nil, AccountKeyFile.path(home: replica.home))
    }

    /// What `key forget` did.
    public enum Forgotten {
        /// The key file was set aside at `aside`; the account is still
        /// encrypted (`stillEncrypted`: nothing goes up until a code is
        /// added) or readable now (every record goes up readable).
        case keySetAside(aside: String, stillEncrypted: Bool)
        /// This machine had no key, and the mark that kept its edits from
        /// going up readable was cleared: the server says the account is
        /// readable now. `seen` is the account it saw encrypted, `now` the
        /// one its token is of (either nil when unknown): another account
        /// is a move, the same one a reset by its operator.
        case markCleared(seen: String?, now: String?)

        /// What `key forget` says when it cleared the mark.
        public static func markClearedText(seen: String?, now: String?) -> String {
            if Replica.EncryptionState.movedAway(seen: seen, now: now), let seen, let now {
                return
                    "this machine's token is of another account (\(now)) than the one it saw end-to-end encrypted (\(seen)), "
                    + "and the server keeps this one readable: this machine syncs readable from now on and sends its edits"
            }
            return
                "the server says this account is no longer end-to-end encrypted (its operator reset it): this machine syncs "
                + "readable from now on and sends its edits"
        }
    }

    /// Forgets this machine's account key; without `force`, only when the
    /// server keeps the account readable.
    public static func forget(_ replica: Replica, force: Bool) throws -> Forgotten {
        guard let key = try AccountKeyFile.read(home: replica.home) else {
            guard try replica.encryptionState().sawEncrypted else {
                throw CLIFailure(message: "this machine has no account key; nothing to forget")
            }
            let identity = try machineClient(replica, key: .given(nil)).client.accountIdentity()
            if identity.keyID != nil {
                throw CLIFailure(
                    message:
                        "the server keeps this account end-to-end encrypted: add its recovery code with 'brsync key add'. "
                        + "This machine keeps its edits and sends nothing readable (nothing was changed)",
                    code: ExitStatus.refused)
            }
            let seen = try replica.encryptionState().sawEncryptedAccount
            try replica.clearAccountEncrypted()
            return .markCleared(seen: seen, now: identity.account.isEmpty ? nil : identity.account)
        }
        let current = try machineClient(replica, key: .given(nil)).client.accountKeyID()
        if !force, let current {
            throw CLIFailure(
                message:
                    "the server keeps this account end-to-end encrypted (\(current == key.id ? "with this machine's key" : "with another key")): "
                    + "without a key this machine could not sync it. Nothing was changed (--force forgets it anyway)",
                code: ExitStatus.refused)
        }
        let aside = AccountKeyFile.path(home: replica.home) + ".forgotten"
        guard rename(AccountKeyFile.path(home: replica.home), aside) == 0 else {
            throw CLIFailure(message: "cannot set the key file aside (\(SystemError.text())); nothing was changed")
        }
        AccountKeyFile.remove(home: replica.home, pending: true)
        try replica.endEncryptedSync()
        // Without a key, nothing goes up readable to an account seen encrypted.
        if current != nil { try replica.noteAccountEncrypted() }
        return .keySetAside(aside: aside, stillEncrypted: current != nil)
    }

    /// This machine's account key, and a key change left pending (the server
    /// may have taken it: the next sync settles it).
    public static func held(home: String) throws -> (key: AccountKey, pending: AccountKey?) {
        let pending = try AccountKeyFile.read(home: home, pending: true)
        guard let key = try AccountKeyFile.read(home: home) ?? pending else {
            throw CLIFailure(
                message:
                    "this machine has no account key; 'brsync key init' makes one, 'brsync key add' adds the account's")
        }
        return (key, pending.flatMap { $0.id != key.id ? $0 : nil })
    }

    /// Whether the last sync found the account on a newer key than this
    /// machine's: its code opens only what was written before.
    public static func rotatedAway(_ replica: Replica) -> Bool {
        guard let problem = try? replica.syncState().problem else { return false }
        return problem.contains("(\(WireError.Code.keyRotated.rawValue))")
    }
}
