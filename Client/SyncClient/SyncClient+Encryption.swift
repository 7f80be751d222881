import Cryptography
import JSON
import Model
import Replica
import SyncCore

/// End-to-end encryption in the sync client (Deploy/SECURITY.md).
extension SyncClient {
    /// What a sync without the account key of an encrypted account says.
    static let noAccountKey = SyncError.refused(
        code: .noAccountKey,
        message:
            "this account is end-to-end encrypted: add its recovery code with 'brsync key add' (nothing was changed here). "
            + "If no machine of yours turned encryption on ('brsync key init', or the settings window's Encryption page), someone with a device token encrypted it: revoke that token and "
            + "ask the server's operator to reset the account's encryption ('brsyncd account reset-encryption')")

    /// What a key holder says when the server keeps another signing key.
    static let signingKeyAlarm = SyncError.refused(
        code: .signingKeyMismatch,
        message:
            "ALARM: the server keeps another signing key for this account than the one of its account key: someone who had "
            + "a device token but not the key claimed the account, or the server lies. Nothing was sent. If no machine of yours "
            + "changed the key, revoke any token that may have leaked (a join code seen by someone else?) and ask the server's "
            + "operator to reset the account's encryption ('brsyncd account reset-encryption'), then run 'brsync key init' here"
    )

    /// What a key holder says when the operator reset the account's encryption.
    static let encryptionWasReset = SyncError.refused(
        code: .encryptionReset,
        message:
            "the server's operator reset this account's end-to-end encryption (its sealed records were deleted there; "
            + "this machine keeps every rule), and a machine that holds a key never syncs readable on the server's word. "
            + "Run 'brsync key init' to encrypt the account again with a new key (this machine's records go up sealed; the "
            + "other machines then add its recovery code), 'brsync key add' with the code of a machine that did, or "
            + "'brsync key forget' to sync without encryption (every rule then goes to this server readable). "
            + "If nobody asked for the reset, ask the operator why first: a server that lies about it gets nothing from 'key init'"
    )

    /// What a machine without a key says once it has seen its account
    /// encrypted: `seen`, the account it saw so (when known), and `now`, the
    /// account it syncs with now, tell a move to another account from a reset.
    static func waitingForKeyMessage(seen: String?, now: String?) -> String {
        let first =
            "this machine saw its account end-to-end encrypted and has no key: its edits wait here and "
            + "nothing is sent readable, whatever the server says now. Add the account's recovery code with 'brsync key add' (they go up "
            + "sealed then). "
        guard Replica.EncryptionState.movedAway(seen: seen, now: now), let seen, let now else {
            return first
                + "If the server's operator reset the account's encryption and you want it readable, run 'brsync key forget' here"
        }
        return first
            + "This machine's token is now of another account (\(now)) than the one it saw encrypted (\(seen)): if you moved it "
            + "there on purpose and that account is readable, run 'brsync key forget' here (it checks with the server first)"
    }

    /// What a machine says once it has seen its key retired.
    static let retiredKeyMessage =
        "this machine's account key was rotated away from on another machine: nothing is sealed with it "
        + "any more, whatever the server says now. Add the new recovery code with 'brsync key add' (this machine's edits are kept and "
        + "go up then). If no machine of yours rotated it, someone with a device token and the key did: revoke that token and ask "
        + "the server's operator to reset the account's encryption"

    /// Records leave this machine only if no mark forbids it: none readable
    /// once it saw its account encrypted without a key, none sealed with a
    /// key it saw retired. Said before anything is sent.
    /// - Throws: ``SyncError/stopped(code:message:)`` (exit 5), every edit kept.
    func checkRecordsMayLeave() throws {
        let state = try replica.encryptionState()
        if cipher == nil, state.sawEncrypted {
            // Which account the token is of now, asked only when the mark
            // names one to tell apart (a stop either way; out of reach, it
            // says what it knows).
            let now = state.sawEncryptedAccount == nil ? nil : (try? accountPage())?.account
            throw SyncError.stopped(
                code: .noAccountKey, message: Self.waitingForKeyMessage(seen: state.sawEncryptedAccount, now: now))
        }
        if let keyID, state.retiredKeyIDs.contains(keyID) {
            throw SyncError.stopped(code: .keyRotated, message: Self.retiredKeyMessage)
        }
        if state.vouchPending != nil { throw SyncError.stopped(code: .keyRotated, message: Self.vouchFirstMessage) }
    }

    static let vouchFirstMessage =
        "this machine has yet to check what it took in with the retired account key against the new "
        + "key's account (nothing was sent): run 'brsync sync'"

    /// Takes in what a refusal says about the account for good: encrypted
    /// (for a machine without a key), or this machine's key retired.
    func noteMarks(_ refusal: WireError) throws {
        if refusal.code == .encryptionRequired, cipher == nil { try replica.noteAccountEncrypted(account: nil) }
        if refusal.code == .keyRotated, refusal.retired, let keyID { try replica.noteKeyRetired(keyID) }
    }

    /// What a key holder does with the signing key the server keeps for the
    /// account: goes on with its own, registers its own when there is none
    /// (an account encrypted before signed writes: before anyone else can),
    /// and stops with an alarm on another.
    func checkSigningKey(_ registered: String?) throws {
        guard let accountKey, let signingPublicKey else { return }
        switch SessionRules.signingKey(registered: registered, own: signingPublicKey) {
        case .same: return
        case .mismatch: throw Self.signingKeyAlarm
        case .register:
            // Once per client: a server that keeps none after it was asked (an
            // older brsyncd) is not asked on every page.
            guard !askedToRegister else { return }
            askedToRegister = true
            try encryptAccount(with: accountKey)
        }
    }

    /// Brings the server in line with this replica before a transfer: a
    /// replica that has not synced with its key yet starts afresh on the
    /// server (``Replica/beginEncryptedSync(keyID:)``), and while its records
    /// have not all gone up (``Replica/requireFullRelay()``: that switch, a
    /// new epoch or account), the account is made encrypted when this
    /// replica has a key (asking again changes nothing; a server restored
    /// from before a rotation is moved forward) and every record is relayed.
    /// A process killed half way does the rest at its next sync.
    func prepareSync() throws {
        if try replica.encryptionState().resetNoted { try checkStillReset() }
        let replicaKeyID = try replica.encryptionState().keyID
        let keyChangedAt = replica.currentMillis
        if let keyID, SessionRules.startsEncryptedSync(keyID: keyID, replicaKeyID: replicaKeyID) {
            // Synced with another key until now, and this machine did not ask
            // for this one: it learned of a rotation made elsewhere, late.
            let madeHere = try replica.encryptionState().keyMadeHere
            let late = replicaKeyID != nil && madeHere != keyID
            summary.newDeviceID = try replica.beginEncryptedSync(keyID: keyID, vouchingFor: late ? replicaKeyID : nil)
            summary.encryptionStarted = true
            try sayWhatTheKeyChangeEnded(since: keyChangedAt)
        } else if SessionRules.endsEncryptedSync(keyID: keyID, replicaKeyID: replicaKeyID) {
            summary.newDeviceID = try replica.endEncryptedSync()
            summary.encryptionEnded = true
            try sayWhatTheKeyChangeEnded(since: keyChangedAt)
        }
        let state = try replica.encryptionState()
        guard
            let relay = SessionRules.relay(
                keyID: keyID, relayPending: state.relayPending, relayIsSwitch: state.relayIsSwitch,
                pushedThrough: try replica.syncState().pushedThrough)
        else { return }
        if relay.encryptWith != nil, let accountKey {
            let account = try encryptAccount(with: accountKey)
            if account.key != accountKey.id { try moveAccountForward(from: account.key) }
        }
        if let retired = try replica.encryptionState().vouchPending, let accountKey {
            try vouch(retired: retired, key: accountKey, movedHere: movedForwardFrom != nil)
        }
        // Said first, so a machine that learns of the rotation late knows at
        // once that writes with the old key may have been made since.
        if let movedFrom = movedForwardFrom {
            try self.relay(try replica.wholeRecords([(.settings, try replica.recordMovedForward(from: movedFrom))]))
            movedForwardFrom = nil
        }
        try relayEverything(skippingOwnUnpushed: relay.skippingOwnUnpushed)
        try replica.finishFullRelay()
        // A move to another account finished here (begun by a sync that
        // stopped before it was done, a quota's, say): said as when it is done at once.
        if state.relayJoinsAccount { summary.accountChanged = true }
    }

    /// A key change drops every ledger with the old key, and with them
    /// this machine's failing checks of other devices: each is one of the
    /// sync's problems (kept in `brsync status` as ended, 30 days).
    private func sayWhatTheKeyChangeEnded(since: Int64) throws {
        let names = try replica.deviceNames()
        for ended in try replica.ledgerFailuresEnded(now: nil) where ended.endedAtMillis >= since {
            summary.problems.append(
                "the key change ended this machine's check of \(names.display(ended.failure.device)), failing since "
                    + "\(Timestamp.iso8601(millis: ended.failure.firstAtMillis)): \(ended.failure.what) "
                    + "('brsync status' keeps it; the device sends its writes again once it has the new code)")
        }
    }

    static let otherAccountMessage =
        "this machine's account key belongs to the account it synced with before, not to this one "
        + "(another token, or a server set up again): its rules never go to another account readable, nor sealed with that key "
        + "(nothing was sent). If this account is end-to-end encrypted, add its recovery code with 'brsync key add'; if it is not, "
        + "encrypt it with 'brsync key init' on one of its machines that has no key (or a new home joined to it), then add that code here"

    /// Takes in the account id of an answer (see ``Replica/checkAccount(_:)``).
    /// A replica with a key meets only the account its key belongs to.
    /// - Returns: whether the account differs from the last one seen.
    /// - Throws: `other_account` for another account, before anything changes.
    func noteAccount(_ account: String, epoch: String? = nil) throws -> Bool {
        try checkKeyAccount(account)
        let changed = try replica.checkAccount(account, epoch: epoch)
        if changed { try countTimelineChange("account") }
        return changed
    }

    /// A replica with a key meets only the account its key belongs to; the
    /// first account it meets with a key is that one.
    /// - Throws: `other_account` for another account, before anything changes.
    private func checkKeyAccount(_ account: String) throws {
        switch SessionRules.account(
            account, hasKey: cipher != nil, keyAccount: cipher != nil ? try replica.keyAccount() : nil)
        {
        case .known: break
        case .adoptForKey: try replica.setKeyAccount(account)
        case .otherAccount: throw SyncError.stopped(code: .otherAccount, message: Self.otherAccountMessage)
        }
    }

    /// The account a certificate names (its statement is signed with the
    /// account's id): the one this replica's key belongs to. A replica that
    /// has not met it yet (a home restored from a copy made before it did,
    /// a key added late) asks the server once and takes it in as any answer's
    /// (``noteAccount(_:)``); a certificate for no account would never verify
    /// and leave this machine stuck.
    func accountForCertificates() throws -> String {
        if let known = try replica.keyAccount() { return known }
        let page = try fetchPage(PullRequest(limit: 1).target)
        if !page.account.isEmpty { _ = try noteAccount(page.account) }
        return try replica.keyAccount() ?? page.account
    }

    /// The stop after an operator's reset holds while the account is still
    /// not encrypted; once it is again (another machine ran `key init`), the
    /// sync goes on, starting afresh with the key.
    private func checkStillReset() throws {
        let page = try fetchPage(PullRequest(limit: 1).target)
        if cipher != nil, !page.encrypted { throw Self.encryptionWasReset }
        try replica.clearEncryptionReset()
    }

    static let rotatedMessage =
        "this account's key was rotated on another machine: add the new recovery code with 'brsync key add' "
        + "(this machine's edits are kept and go up then). If no machine of yours rotated it or encrypted it again, someone with a "
        + "device token did: revoke that token and ask the server's operator to reset the account's encryption"

    static let forkedRotationMessage =
        "ALARM: the server's account key is none this machine knows, and the server does not know "
        + "this machine's key as one it left: a server restored from before your rotation was rotated by whoever kept an older key "
        + "(one of your machines that missed your rotation, or a revoked device). Do not add a recovery code you did not make "
        + "yourself. If you rotated the key on another machine since, add that code here with 'brsync key add'; if not, ask the "
        + "server's operator to revoke that device again and reset the account's encryption ('brsyncd account reset-encryption'), "
        + "then run 'brsync key init' on one of your machines; every machine keeps its edits meanwhile"

    static let cannotMoveForwardMessage =
        "the server was restored from before a rotation of the account key, and this machine can "
        + "prove the rotation neither with the old key nor with a certificate of it: a machine that holds the key the server uses, "
        + "or that synced with this key, moves it forward at its next sync (this machine's edits are kept)"

    /// The account is sealed with `serverKeyID`, not this client's key. When
    /// that is a key this one replaced (see ``replacedKeyIDs()``), the server was restored from
    /// before a rotation: it is rotated forward to this key (the records it
    /// holds, sealed with the old one, leave it; every machine relays what it
    /// holds, this one at once) and nobody is asked for a code. The move is
    /// authorised by certificates (``KeyCertificate``): made here from an
    /// older key this machine holds, or kept from the rotations it learned of.
    /// Any other key is a rotation on another machine: the new code is needed.
    /// - Throws: ``SyncError/refused(code:message:)`` `key_rotated` when the
    ///   account's key is not one this machine ever held.
    ///
    /// Like any key change it is a compare-and-swap when this machine still
    /// has the old key: what the restored server holds under it (machines
    /// with only that key may have pushed there since the restore) is pulled
    /// and merged first, and the move names the sequence it saw.
    func moveAccountForward(from serverKeyID: String) throws {
        let replaced = try replacedKeyIDs()
        guard let accountKey,
            SessionRules.serverKey(serverKeyID, keyID: accountKey.id, replaced: replaced) == .moveForward
        else {
            // This machine's key replaced others, and the server does not even
            // know it as retired: the server's key came from one of the old
            // keys, not after this one (a server restored from before the
            // rotation, rotated by whoever kept an old key).
            if !replaced.isEmpty, lastRefusal?.code == .keyRotated, lastRefusal?.retired == false {
                throw SyncError.stopped(code: .keyRotated, message: Self.forkedRotationMessage)
            }
            throw SyncError.refused(code: .keyRotated, message: Self.rotatedMessage)
        }
        let oldKey = olderKeys.first { $0.id == serverKeyID }
        // A restored server may know no signing key for the old key (encrypted before signed writes): register it.
        if let oldKey { try encryptAccount(with: oldKey) }
        let account = try accountForCertificates()
        let certificates = try replica.keyCertificates() + olderKeys.map { $0.certify(accountKey, account: account) }
        guard let chain = KeyCertificate.chain(from: serverKeyID, to: accountKey.id, through: certificates) else {
            throw SyncError.refused(code: .keyRotated, message: Self.cannotMoveForwardMessage)
        }
        var attempts = 0
        while true {
            attempts += 1
            let seen = try oldKey.map { try pullEveryRecord(sealedWith: $0) }
            do {
                let answer = try encryptAccount(
                    with: accountKey, replacing: serverKeyID, seen: seen, certificates: chain)
                guard answer.key == accountKey.id else {
                    throw SyncError.refused(code: .keyRotated, message: Self.rotatedMessage)
                }
                break
            } catch SyncError.refused(code: .accountMoved, _) where attempts < Self.keyChangeAttempts {
                continue
            }
        }
        try replica.transaction {
            try replica.recordMovedForward(from: serverKeyID)
            try replica.requireFullRelay()
        }
        movedForwardFrom = serverKeyID
        summary.movedForward = true
    }

    /// Pulls every record of the account sealed with `key` (an older key of
    /// this machine, the one a restored server uses) and merges it here.
    /// - Returns: the cursor after the last page (the account's latest sequence).
    /// With no key, the account must be readable (after the operator reset
    /// its encryption: what machines without a key sent since is kept
    /// before the account is encrypted again).
    /// A machine that learned of a rotation late may have taken in, with
    /// the old key, what a server restored from before the rotation held: a
    /// revoked device's writes too, which it cannot tell from anyone's.
    /// Before it relays anything with the new key, it pulls the new key's
    /// account whole (every holder of the new key pulled what the rotation
    /// sealed again). When a machine moved a restored server forward from
    /// the old key (``Replica/wasMovedForward(from:)``: this one, now, or
    /// another, said in the account), it sets aside what another device
    /// wrote that the account does not hold
    /// (``Replica/setAsideUnvouched(reference:why:)``): its own edits stay
    /// and go up; an honest machine's come back when that machine adds the
    /// new code. Without a restore the server refused every write with the
    /// old key after the rotation: what it holds is older, and goes up whole
    /// (a rotation killed before it sent everything again loses nothing).
    func vouch(retired: String, key: AccountKey, movedHere: Bool) throws {
        var reference: [String: RecordState] = [:]
        _ = try pullEveryRecord(sealedWith: key, retired: false) { change in
            reference["\(change.collection.rawValue)/\(change.key)"] = change.state
        }
        guard try movedHere || replica.wasMovedForward(from: retired) else { return try replica.clearVouch() }
        let names = try replica.deviceNames()
        summary.setAside += try replica.setAsideUnvouched(reference: reference) { writer in
            "taken in with the retired account key \(retired) after the account moved on from it (this machine learned of the "
                + "rotation late), written by \(writer.isEmpty ? "an unknown device" : names.display(writer)) (a machine offline across "
                + "the rotation, or one that kept the old key), and not in the new key's account: set aside, not sent again. It comes "
                + "back if its writer sends it with the new key. Restore it if it is yours"
        }
    }

    /// - Parameters:
    ///   - retired: `key` is one the account moved on from: what adds to
    ///     what this machine holds is set aside, not applied.
    ///   - each: called with every record pulled (opened).
    func pullEveryRecord(
        sealedWith key: AccountKey?, retired: Bool = true, each: (ChangeRecord) -> Void = { _ in }
    ) throws -> Int64 {
        let cipher = key.map(RecordCipher.init)
        var cursor: Int64 = 0
        while true {
            let page = try fetchPage(
                PullRequest(since: cursor, limit: options.pullLimit, full: true, keyID: key?.id).target)
            if cipher == nil, page.encrypted {
                throw SyncError.refused(
                    code: .noAccountKey,
                    message: "this account was encrypted again meanwhile (nothing was changed): "
                        + "add its recovery code with 'brsync key add'")
            }
            if !page.account.isEmpty, let owner = try replica.keyAccount(),
                SessionRules.account(page.account, hasKey: true, keyAccount: owner) == .otherAccount
            {
                throw SyncError.stopped(code: .otherAccount, message: Self.otherAccountMessage)
            }
            let opened = cipher.map { Self.open(page.changes, with: $0) } ?? Opened(changes: page.changes)
            summary.problems += opened.problems
            var changes = opened.changes
            changes.forEach(each)
            if let key, retired {
                // Sealed with a key the account moved on from: only what this
                // machine holds already (it pulled what the rotation sealed
                // again) is from before the rotation; the rest is set aside.
                let names = try replica.deviceNames()
                let sorted = try replica.setAsideWhatIsNotHeld(changes) { change in
                    let writer = change.state.newestStamp.map { names.display($0.device) } ?? "an unknown device"
                    return
                        "written with the retired account key \(key.id) after the account moved on from it, by \(writer) (a machine "
                        + "offline across the rotation, or one that kept the old key): set aside, not applied. Restore it if it is yours"
                }
                changes = sorted.held
                summary.setAside += sorted.setAside
            }
            let applied = try replica.applyPulled(
                changes, cursor: page.next, epoch: page.epoch, aside: opened.aside, prepared: nil,
                skipped: &summary.problems)
            summary.take(applied)
            summary.pulled += page.changes.count
            // Every page moves the cursor on, so this ends whatever the server answers.
            guard page.more else { return page.next }
            guard page.next > cursor else {
                throw SyncError.badAnswer("the server's pages do not move the cursor on (at \(cursor))")
            }
            cursor = page.next
        }
    }

    /// The keys this machine's key replaced: older keys in its key file, and
    /// those rotations on other machines named (``Replica/replacedKeyIDs()``).
    func replacedKeyIDs() throws -> Set<String> {
        Set(olderKeys.map(\.id)).union(try replica.replacedKeyIDs()).subtracting([keyID].compactMap { $0 })
    }

    /// Runs `body`; a refusal because the account uses another key moves a
    /// server restored from before a rotation forward (see
    /// ``moveAccountForward(from:)``) and runs `body` once more.
    func retryingAfterMovingForward<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch SyncError.refused(code: .keyRotated, _) where keyID != nil {
            guard let current = try accountKeyID(), current != keyID else { return try body() }
            try moveAccountForward(from: current)
            try prepareSync()
            return try body()
        }
    }

    /// Asks the server to make the account end-to-end encrypted with `key`,
    /// or, with `replacing`, to rotate it from that key; asked with the
    /// account's own key, it registers the key's signing key when the server
    /// has none. The request is signed with `key` and names its signing
    /// public key; a rotation carries `certificates` from the current key.
    /// - Returns: whether the account changed (the server deleted its
    ///   records then), and the key it is sealed with now.
    /// - Parameter seen: the account sequence this replica has pulled
    ///   through; the server refuses the change (`account_moved`) while it
    ///   holds later records.
    /// - Throws: the alarm (`signing_key_mismatch`) when the server keeps
    ///   another signing key for `key`.
    /// - Parameter onPurpose: the user asked for the change (`brsync key
    ///   init` or `rotate`): an account whose encryption the operator reset
    ///   is encrypted again only then.
    @discardableResult
    public func encryptAccount(
        with key: AccountKey, replacing: String? = nil, seen: Int64? = nil,
        certificates: [KeyCertificate] = [], onPurpose: Bool = false
    ) throws -> (changed: Bool, key: String) {
        defer { try? replica.persistServerTime() }
        // This machine's key, once it saw it retired, never becomes the account's again from here.
        if key.id == keyID, try replica.encryptionState().retiredKeyIDs.contains(key.id) {
            throw SyncError.stopped(code: .keyRotated, message: Self.retiredKeyMessage)
        }
        var request = EncryptRequest(
            keyID: key.id, replacing: replacing, seen: seen, publicKey: key.signingPublicKey, certificates: certificates
        )
        request.afterReset = onPurpose
        // The server refuses a change to another account than the one this key belongs to.
        if cipher != nil { request.account = try replica.keyAccount() }
        let answer = try send(
            method: "POST", target: "/v1/account/encrypt", body: request.body, signedBy: key.signingKey())
        let response: EncryptResponse
        do { response = try EncryptResponse(json: answer) } catch { throw SyncError.badAnswer(error.message) }
        if response.keyID == key.id, let registered = response.signingKey, registered != key.signingPublicKey {
            throw Self.signingKeyAlarm
        }
        return (response.changed, response.keyID)
    }

    /// Rotates the account from this client's key to `next` (signed with
    /// both: the certificate by this key, the request by the new one).
    /// - Returns: what ``encryptAccount(with:replacing:seen:certificates:)`` returns.
    @discardableResult
    public func rotateAccount(
        to next: AccountKey, seen: Int64?
    ) throws -> (changed: Bool, key: String, certificate: KeyCertificate?) {
        guard let accountKey else {
            try replica.noteKeyMadeHere(next.id)
            let answer = try encryptAccount(with: next, seen: seen, onPurpose: true)
            return (answer.changed, answer.key, nil)
        }
        try replica.noteKeyMadeHere(next.id)
        let certificate = accountKey.certify(next, account: try accountForCertificates())
        let answer = try encryptAccount(
            with: next, replacing: accountKey.id, seen: seen, certificates: [certificate], onPurpose: true)
        return (answer.changed, answer.key, certificate)
    }

    /// The id of the key the account is sealed with, or nil when it is not
    /// encrypted (one pull request; this checks the token too).
    public func accountKeyID() throws -> String? {
        try accountIdentity().keyID
    }

    /// The account the server names for this machine's token (empty from a
    /// server too old to name it), and its key id when it is encrypted.
    public func accountIdentity() throws -> (account: String, keyID: String?) {
        let page = try accountPage()
        return (page.account, page.encrypted ? page.keyID ?? "" : nil)
    }

    /// The account's first page of one record: its encryption, key and signing key.
    func accountPage() throws -> PullResponse {
        defer { try? replica.persistServerTime() }
        let page = try fetchPage(PullRequest(limit: 1).target)
        if cipher != nil { _ = try noteAccount(page.account) }
        if cipher == nil, page.encrypted { try replica.noteAccountEncrypted(account: page.account) }
        return page
    }

    static let keyDoesNotOpenMessage =
        "this recovery code does not open the account's records: it belongs to another account, or to a key since rotated, "
        + "or to a key newer than the server's (restored from a backup taken before it: a machine that synced with it "
        + "moves the server forward at its next sync; try again after that). Nothing was saved"

    /// What `brsync key add` and `brsync join` check before they keep a
    /// recovery code: the account is encrypted, the server names this key
    /// as the account's, and the key opens the account's first records when
    /// it has any. The server's word on the key id alone is not enough: a
    /// server that names the key but holds records sealed with another is
    /// caught here.
    /// - Throws: ``SyncError/usage(_:)`` for a key that opens none of them
    ///   (a wrong recovery code, or one of another account).
    public func checkKey(_ key: AccountKey) throws {
        let account = try accountPage()
        guard account.encrypted, let current = account.keyID else {
            let moved =
                try cipher == nil && replica.encryptionState().sawEncrypted
                ? " after 'brsync key forget' (this machine saw its account encrypted before: it was moved to another "
                    + "account, or the operator reset the encryption)" : ""
            throw SyncError.usage(
                "this account is not end-to-end encrypted; encrypt it from this machine with 'brsync key init'\(moved)")
        }
        guard current == key.id else { throw SyncError.usage(Self.keyDoesNotOpenMessage) }
        // A record that does not open says the code is wrong; one that opens
        // beside another signing key says someone claimed the account.
        let page = try fetchPage(PullRequest(limit: Self.keyCheckRecords, full: true, keyID: key.id).target)
        let sealed = page.changes.filter { !$0.state.fields.isEmpty }
        if !sealed.isEmpty { // nothing to open yet otherwise
            let opened = Self.open(sealed, with: RecordCipher(key), requiringManifests: false)
            guard !opened.changes.isEmpty else { throw SyncError.usage(Self.keyDoesNotOpenMessage) }
        }
        if let registered = account.signingKey, !registered.isEmpty, registered != key.signingPublicKey {
            throw Self.signingKeyAlarm
        }
    }

    /// How many of the account's first records ``checkKey(_:)`` tries.
    static let keyCheckRecords = 20

    /// Keeps a value that lost to a concurrent edit, opened, for
    /// `brsync log --conflicts` and `brsync restore`. The server reports it
    /// as it holds it: sealed, under the hidden key. A lost deletion flag
    /// is readable by design: it counts only with its sealed `twin`, lost
    /// under the same stamp and opening to the same flag (else the server
    /// could show a deletion that was never made).
    func recordConflict(_ lost: LostField, key: String, twin: LostField? = nil) throws {
        // A value that lost to the same value lost nothing (two machines
        // both saying "not deleted"): not a conflict anyone needs to see.
        // Nor does a rule's provenance (when and where it was first made).
        guard !RecordState.provenanceFields.contains(lost.field) else { return }
        func keep(_ lostValue: StampedValue, _ winner: StampedValue) throws {
            guard lostValue.value != winner.value else { return }
            if try replica.recordConflict(
                collection: lost.collection, key: key, field: lost.field, lost: lostValue, winner: winner)
            {
                summary.conflicts += 1
            }
        }
        guard let cipher else {
            try keep(lost.lost, lost.winner)
            return
        }
        // The sealed key and the deletion flag's twin are encryption's own.
        guard !lost.field.hasPrefix(Wire.sealedFieldPrefix) else { return }
        if lost.field == RecordState.deletedField {
            let sealed = try? twin.map {
                try cipher.openField(
                    $0.lost, field: lost.field, collection: lost.collection.rawValue, hiddenKey: lost.key)
            }
            guard let twin, twin.lost.stamp == lost.lost.stamp, sealed == lost.lost.value else {
                summary.problems.append(
                    "the server reported a lost deletion flag of '\(key)' without its sealed twin: not kept")
                return
            }
        }
        func opened(_ register: StampedValue) throws -> StampedValue {
            if lost.field == RecordState.deletedField { return register } // its twin says the same (above)
            let value = try cipher.openField(
                register, field: lost.field, collection: lost.collection.rawValue, hiddenKey: lost.key)
            return StampedValue(value, stamp: register.stamp)
        }
        do {
            try keep(try opened(lost.lost), try opened(lost.winner))
        } catch let error as RecordCipherError {
            summary.problems.append("a conflict reported by the server was not kept: \(error)")
        }
    }
}
