import Cryptography
import JSON
import Model
import Replica
import SyncCore

/// End-to-end encryption in the sync client (Deploy/SECURITY.md).
extension SyncClient {
    /// What a sync without the account key of an encrypted account says.
    static let keyNeeded = SyncError.refused(
        code: .keyNeeded,
        message: "this account is end-to-end encrypted: add its recovery code with 'brsync key add' (nothing was changed here)")

    /// Brings the server in line with this replica before a transfer: a
    /// replica that has not synced with its key yet starts afresh on the
    /// server (``Replica/beginEncryptedSync(keyID:)``), and while its records
    /// have not all gone up (``Replica/requireFullRelay()``: that switch, a
    /// new epoch or account), the account is made encrypted when this
    /// replica has a key (asking again changes nothing; a server restored
    /// from before a rotation is moved forward) and every record is relayed.
    /// A process killed half way does the rest at its next sync.
    func prepareSync() throws {
        if let keyID, SessionRules.startsEncryptedSync(keyID: keyID, replicaKeyID: try replica.encryptionState().keyID) {
            summary.newDeviceID = try replica.beginEncryptedSync(keyID: keyID)
            summary.encryptionStarted = true
        }
        let state = try replica.encryptionState()
        guard let relay = SessionRules.relay(keyID: keyID, relayPending: state.relayPending, relayIsSwitch: state.relayIsSwitch,
                                             pushedThrough: try replica.syncState().pushedThrough) else { return }
        if let keyID = relay.encryptWith {
            let account = try encryptAccount(keyID: keyID)
            if account.key != keyID { try moveAccountForward(from: account.key) }
        }
        try relayEverything(skippingOwnUnpushed: relay.skippingOwnUnpushed)
        try replica.finishFullRelay()
    }

    static let otherAccountMessage = "this machine's account key belongs to the account it synced with before, not to this one "
        + "(another token, or a server set up again): its rules never go to another account readable, nor sealed with that key "
        + "(nothing was sent). If this account is end-to-end encrypted, add its recovery code with 'brsync key add'; if it is not, "
        + "encrypt it with 'brsync key init' on one of its machines that has no key (or a new home joined to it), then add that code here"

    /// Takes in the account id of an answer (see ``Replica/checkAccount(_:)``).
    /// A replica with a key meets only the account its key belongs to.
    /// - Returns: whether the account differs from the last one seen.
    /// - Throws: `other_account` for another account, before anything changes.
    func noteAccount(_ account: String) throws -> Bool {
        try checkKeyAccount(account)
        return try replica.checkAccount(account)
    }

    /// A replica with a key meets only the account its key belongs to; the
    /// first account it meets with a key is that one.
    /// - Throws: `other_account` for another account, before anything changes.
    private func checkKeyAccount(_ account: String) throws {
        switch SessionRules.account(account, hasKey: cipher != nil, keyAccount: cipher != nil ? try replica.keyAccount() : nil) {
        case .known: break
        case .adoptForKey: try replica.setKeyAccount(account)
        case .otherAccount: throw SyncError.refused(code: .otherAccount, message: Self.otherAccountMessage)
        }
    }

    static let rotatedMessage = "this account's key was rotated on another machine: add the new recovery code with 'brsync key add' (this machine's edits are kept and go up then)"

    /// The account is sealed with `serverKeyID`, not this client's key. When
    /// that is a key this one replaced (see ``replacedKeyIDs()``), the server was restored from
    /// before a rotation: it is rotated forward to this key (the records it
    /// holds, sealed with the old one, leave it; every machine relays what it
    /// holds, this one at once) and nobody is asked for a code. Any other key
    /// is a rotation on another machine: the new code is needed.
    /// - Throws: ``SyncError/refused(code:message:)`` `key_rotated` when the
    ///   account's key is not one this machine ever held.
    ///
    /// Like any key change it is a compare-and-swap when this machine still
    /// has the old key: what the restored server holds under it (machines
    /// with only that key may have pushed there since the restore) is pulled
    /// and merged first, and the move names the sequence it saw.
    func moveAccountForward(from serverKeyID: String) throws {
        guard let keyID, SessionRules.serverKey(serverKeyID, keyID: keyID, replaced: try replacedKeyIDs()) == .moveForward else {
            throw SyncError.refused(code: .keyRotated, message: Self.rotatedMessage)
        }
        let oldKey = olderKeys.first { $0.id == serverKeyID }
        var attempts = 0
        while true {
            attempts += 1
            let seen = try oldKey.map { try takeInEverything(sealedWith: $0) }
            do {
                let account = try encryptAccount(keyID: keyID, replacing: serverKeyID, seen: seen)
                guard account.key == keyID else { throw SyncError.refused(code: .keyRotated, message: Self.rotatedMessage) }
                break
            } catch SyncError.refused(code: .accountMoved, _) where attempts < Self.keyChangeAttempts {
                continue
            }
        }
        try replica.requireFullRelay()
        summary.movedForward = true
    }

    /// Pulls every record of the account sealed with `key` (an older key of
    /// this machine, the one a restored server uses) and merges it here.
    /// - Returns: the cursor after the last page (the account's latest sequence).
    func takeInEverything(sealedWith key: AccountKey) throws -> Int64 {
        let cipher = RecordCipher(key)
        var cursor: Int64 = 0
        while true {
            let page = try fetchPage("/v1/pull?since=\(cursor)&limit=\(options.pullLimit)&full=1&key=\(key.id)")
            if !page.account.isEmpty, let owner = try replica.keyAccount(),
               SessionRules.account(page.account, hasKey: true, keyAccount: owner) == .otherAccount {
                throw SyncError.refused(code: .otherAccount, message: Self.otherAccountMessage)
            }
            let opened = Self.open(page.changes, with: cipher)
            summary.problems += opened.problems
            summary.applied += try replica.applyPulled(opened.changes, cursor: page.next, epoch: page.epoch, skipped: &summary.problems)
            summary.pulled += page.changes.count
            // Every page moves the cursor on, so this ends whatever the server answers.
            guard page.more else { return page.next }
            guard page.next > cursor else { throw SyncError.badAnswer("the server's pages do not move the cursor on (at \(cursor))") }
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
    func movingForward<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch SyncError.refused(code: .keyRotated, _) where keyID != nil {
            guard let current = try accountKeyID(), current != keyID else { return try body() }
            try moveAccountForward(from: current)
            try prepareSync()
            return try body()
        }
    }

    /// Asks the server to make the account end-to-end encrypted with the key
    /// `keyID`, or, with `replacing`, to rotate it from that key.
    /// - Returns: whether the account changed (the server deleted its
    ///   records then), and the key it is sealed with now.
    /// - Parameter seen: the account sequence this replica has pulled
    ///   through; the server refuses the change (`account_moved`) while it
    ///   holds later records.
    @discardableResult
    public func encryptAccount(keyID: String, replacing: String? = nil, seen: Int64? = nil) throws -> (changed: Bool, key: String) {
        defer { try? replica.persistServerTime() }
        var request = EncryptRequest(keyID: keyID, replacing: replacing, seen: seen)
        // The server refuses a change to another account than the one this key belongs to.
        if cipher != nil { request.account = try replica.keyAccount() }
        let answer = try send(method: "POST", target: "/v1/account/encrypt", body: request.body)
        do {
            let response = try EncryptResponse(json: answer)
            return (response.changed, response.keyID)
        } catch {
            throw SyncError.badAnswer(error.message)
        }
    }

    /// The id of the key the account is sealed with, or nil when it is not
    /// encrypted (one pull request; this checks the token too).
    public func accountKeyID() throws -> String? {
        defer { try? replica.persistServerTime() }
        let page = try fetchPage("/v1/pull?since=0&limit=1")
        if cipher != nil { _ = try noteAccount(page.account) }
        return page.encrypted ? page.keyID ?? "" : nil
    }


    static let keyDoesNotOpenMessage = "this recovery code does not open the account's records: it belongs to another account, or to a key since rotated, "
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
        guard let current = try accountKeyID() else {
            throw SyncError.usage("this account is not end-to-end encrypted; encrypt it from this machine with 'brsync key init'")
        }
        guard current == key.id else { throw SyncError.usage(Self.keyDoesNotOpenMessage) }
        let page = try fetchPage("/v1/pull?since=0&limit=\(Self.keyCheckRecords)&full=1&key=\(key.id)")
        let sealed = page.changes.filter { !$0.state.fields.isEmpty }
        guard !sealed.isEmpty else { return } // nothing to open yet
        let opened = Self.open(sealed, with: RecordCipher(key))
        guard !opened.changes.isEmpty else { throw SyncError.usage(Self.keyDoesNotOpenMessage) }
    }

    /// How many of the account's first records ``checkKey(_:)`` tries.
    static let keyCheckRecords = 20

    /// Keeps a value that lost to a concurrent edit, opened, for
    /// `brsync log --conflicts` and `brsync restore`. The server reports it
    /// as it holds it: sealed, under the hidden key.
    func recordConflict(_ lost: LostField, key: String) throws {
        guard let cipher else {
            try replica.recordConflict(collection: lost.collection, key: key, field: lost.field, lost: lost.lost, winner: lost.winner)
            return
        }
        // The sealed key and the deletion flag's twin are encryption's own.
        guard !lost.field.hasPrefix(Wire.sealedFieldPrefix) else { return }
        func opened(_ register: StampedValue) throws -> StampedValue {
            if lost.field == RecordState.deletedField { return register } // readable by design
            guard case .string(let sealed) = register.value else { throw RecordCipherError(message: "a lost value of '\(key)' is not sealed") }
            let text = try cipher.open(sealed, collection: lost.collection.rawValue, hiddenKey: lost.key, field: lost.field,
                                       stamp: register.stamp.description)
            guard let value = try? JSONValue.parse(text) else { throw RecordCipherError(message: "a lost value of '\(key)' is not JSON") }
            return StampedValue(value, stamp: register.stamp)
        }
        do {
            try replica.recordConflict(collection: lost.collection, key: key, field: lost.field, lost: try opened(lost.lost), winner: try opened(lost.winner))
        } catch let error as RecordCipherError {
            summary.problems.append("a conflict reported by the server was not kept: \(error)")
        }
    }
}

/// Joining with a join code (`brsync join`).
extension SyncClient {
    /// Whether `token` is a join code's enrollment secret, which reads until
    /// it is exchanged (``exchangeJoinSecret(for:)``), rather than a device token.
    public static func isJoinSecret(_ token: String) -> Bool { token.hasPrefix(JoinRequest.secretPrefix) }

    /// A new device token: `brs_` and 256 random bits in base64url.
    public static func makeDeviceToken() -> String { JoinRequest.tokenPrefix + Crypto.base64URL(Crypto.randomBytes(32)) }

    /// Exchanges this client's token, a join code's secret, for `token`
    /// (made here): the device's token from now on; the secret stops working.
    /// Retried after a lost answer with the same token, the server answers
    /// the same.
    /// - Returns: the account's identity and the device's name on the server.
    @discardableResult
    public func exchangeJoinSecret(for token: String) throws -> JoinResponse {
        let answer = try send(method: "POST", target: "/v1/join", body: JoinRequest(token: token).body)
        do { return try JoinResponse(json: answer) } catch { throw SyncError.badAnswer(error.message) }
    }
}
