import Cryptography
import JSON
import Model
import Net
import ServerStore
import SyncCore

/// The store's sync operations (authentication, push, relay, pull, key
/// changes, purges), written once for both dialects. They decide (with
/// ``SyncEngine`` for the merge and the pull's page) and map outcomes to
/// answers and errors; the dialect only runs its SQL in the transactions it
/// hands out.
extension SyncStore {
    /// Wakes the account's watches: this process's, and with PostgreSQL
    /// every other brsyncd's (after the commit: a watch woken reads what
    /// was committed).
    func changed(_ account: Int64) {
        watches.changed(account: account)
        notifyOtherProcesses(account: account)
    }

    public func counts() throws -> (records: Int, devices: Int, accounts: Int) {
        try reading { try $0.counts() }
    }

    // MARK: - Sync

    /// The device a bearer token belongs to.
    /// - Throws: ``ServerError/unauthorized(_:)`` for an unknown token,
    ///   ``ServerError/revoked`` for a revoked one.
    public func authenticate(token: String) throws -> Store.Device {
        let hash = Tokens.hash(token)
        let found = try reading { try $0.device(tokenHash: hash) }
        let device = try checkJoinSecret(token, hash: hash, found: found?.device != nil)
        return try Self.check(device ?? found?.device, storedHash: found?.storedHash, hash: hash)
    }

    /// A join code's secret authenticates (reads) only while it is unused and
    /// unexpired; one that no longer does is named as such.
    /// - Parameter found: whether a device has the secret's hash as its token.
    /// - Returns: nil (the device found stands).
    private func checkJoinSecret(_ token: String, hash: [UInt8], found: Bool) throws -> Store.Device? {
        guard token.hasPrefix(Tokens.joinPrefix) else { return nil }
        guard let enrollment = try reading({ try $0.enrollment(secretHash: hash) }) else { throw Self.invalidToken }
        if enrollment.usedAtMillis != nil {
            throw ServerError.unauthorized(
                "this join code was used already ('brsync join' exchanged it for the joining machine's own token): "
                    + "ask the server's operator for a new one for another machine")
        }
        if !found {
            throw ServerError.unauthorized(
                "this join code no longer works: its device was given a new token or join code since")
        }
        if currentMillis() > enrollment.expiresAtMillis {
            throw ServerError.unauthorized(
                "this join code expired at \(Timestamp.iso8601(millis: enrollment.expiresAtMillis)): "
                    + "ask the server's operator for a new one")
        }
        return nil
    }
    /// Whether `secret` is a join code's secret this server issued (used,
    /// expired or not): one it never issued is refused on the headers.
    public func joinSecretIssued(_ secret: String) throws -> Bool {
        guard secret.hasPrefix(Tokens.joinPrefix) else { return false }
        return try reading { try $0.enrollment(secretHash: Tokens.hash(secret)) } != nil
    }

    static var invalidToken: ServerError { .unauthorized("the token is not valid") }

    /// The lookup is by hash; compare again in constant time before trusting it.
    static func check(_ device: Store.Device?, storedHash: [UInt8]?, hash: [UInt8]) throws -> Store.Device {
        guard var device, let storedHash, Crypto.constantTimeEqual(storedHash, hash) else { throw invalidToken }
        guard !device.revoked else { throw ServerError.revoked }
        device.tokenHash = hash
        return device
    }

    /// Applies a push from `device` in one transaction: the changes after the
    /// replica's last applied sequence are merged with the shared merge, each
    /// changed record gets the account's next sequence number, and the
    /// replica's last applied sequence and that change's digest are recorded
    /// with them. A retried push is acknowledged and applies nothing (its
    /// refusals are told again, ``Store/refusalsKept``); a gap is
    /// refused with what the server has; reused numbers (a copied or restored
    /// replica) are refused as `diverged`. A change whose merged record would
    /// be unusable is rejected alone (reported; its number still counts).
    /// - Parameter authority: what the request brings to write (see ``SyncEngine/authorize(_:account:)``).
    public func push(
        _ request: PushRequest, from device: Store.Device, authority: WriteAuthority = .unsigned,
        maxClockOffsetMilliseconds: Int64
    ) throws -> PushResponse {
        let now = currentMillis()
        // Each change's stored text, digest and chain (see
        // ``ChangeRecord/chained(after:)``), computed outside the write lock.
        let prepared = SyncEngine.PreparedPush(request)
        let (outcome, epoch, storeEpoch) = try writing(account: device.accountID) {
            transaction -> (SyncEngine.PushOutcome, String, String) in
            // The account is locked first; the epoch is read under the lock,
            // so a new epoch started by another process is seen.
            let storeEpoch = try transaction.lockAccountReadingEpoch(device.accountID)
            let (outcome, timeline) = try SyncEngine.push(
                request, from: device, authority: authority, prepared: prepared, epoch: storeEpoch,
                now: now, maxClockOffsetMilliseconds: maxClockOffsetMilliseconds,
                timelineGate: timelineGate, in: transaction)
            return (outcome, timeline, storeEpoch)
        }
        epochCache.set(storeEpoch)
        if case .applied(_, _, let applied, _, _, _, _) = outcome, applied > 0 {
            changed(device.accountID)
        } else {
            watches.touched(account: device.accountID)
        }
        switch outcome {
        case .gap(let expected, let digest, _):
            throw ServerError.gap(expected: expected, got: request.from, digest: digest)
        case .diverged(let acknowledged, let digest):
            throw ServerError.diverged(acknowledged: acknowledged, digest: digest)
        case .applied(let acknowledged, let digest, let applied, let lost, let lostOmitted, let rejected, let needed):
            var response = PushResponse(
                acknowledged: acknowledged, applied: applied, clock: clockStamp(), epoch: epoch, lost: lost,
                acknowledgedDigest: digest, rejected: rejected, account: device.accountUID, needed: needed)
            response.lostOmitted = lostOmitted
            return response
        }
    }

    /// Merges whole records a client relays (after a restore): the same merge,
    /// no change numbers, nothing minted. A record with a stamp too far ahead,
    /// or whose merge would be unusable, is rejected alone.
    public func relay(
        _ request: RelayRequest, from device: Store.Device, authority: WriteAuthority = .unsigned,
        maxClockOffsetMilliseconds: Int64
    ) throws
        -> (applied: Int, rejected: [RejectedChange], response: PushResponse)
    {
        let now = currentMillis()
        var applied = 0
        var rejected: [RejectedChange] = []
        var accountEpoch = ""
        // A large relay is merged a part at a time, each part a transaction
        // of its own, so another account's write waits for one part, not for
        // megabytes (``Store/relayPartBytes``).
        for part in Self.relayParts(request) {
            let merged: (applied: Int, rejected: [RejectedChange], accountEpoch: String)
            do {
                merged = try relayPart(
                    part, from: device, authority: authority, now: now,
                    maxClockOffsetMilliseconds: maxClockOffsetMilliseconds)
            } catch {
                // The parts before stay merged: watches hear of them, and a
                // limit's answer says so, not "nothing applied".
                guard applied > 0 else { throw error }
                changed(device.accountID)
                if case ServerError.quotaExceeded(let what, let would, let limit) = error {
                    throw ServerError.quotaExceededInRelay(what: what, would: would, limit: limit, applied: applied)
                }
                // The device revoked or its token replaced between parts.
                if let refusal = error as? ServerError, refusal.httpStatus == 401 {
                    throw ServerError.inRelay(refusal, applied: applied)
                }
                throw error
            }
            applied += merged.applied
            rejected += merged.rejected
            accountEpoch = merged.accountEpoch
        }
        if applied > 0 { changed(device.accountID) } else { watches.touched(account: device.accountID) }
        let response = PushResponse(
            acknowledged: 0, applied: applied, clock: clockStamp(),
            epoch: Store.epoch(store: epoch, account: accountEpoch), lost: [],
            rejected: rejected, account: device.accountUID)
        return (applied, rejected, response)
    }

    /// One part of a relay, in a write transaction of its own: its fields'
    /// text written and its records read ahead before the account's turn.
    private func relayPart(
        _ part: RelayRequest, from device: Store.Device, authority: WriteAuthority, now: Int64,
        maxClockOffsetMilliseconds: Int64
    ) throws -> (applied: Int, rejected: [RejectedChange], accountEpoch: String) {
        let prepared = SyncEngine.PreparedRelay(part)
        let ahead = try readAhead(account: device.accountID, keys: part.records.map { ($0.collection, $0.key) })
        return try writing(account: device.accountID, readAhead: ahead) { transaction in
            try SyncEngine.relay(
                part, prepared: prepared, from: device, authority: authority, now: now,
                maxClockOffsetMilliseconds: maxClockOffsetMilliseconds, in: transaction)
        }
    }

    /// `request` cut into parts of about ``Store/relayPartBytes`` of fields'
    /// text each (a larger record is a part alone), in order. Each record's
    /// merge stands alone (a relay's records are whole, and merging one
    /// again changes nothing), so a relay cut short after some parts (the
    /// process killed, a key rotated between them) left every record either
    /// merged or not, and the client's retry sends the whole relay again.
    /// A ledger request, and a relay carrying pending ledger records (which
    /// go with the writes they count), stay one part.
    static func relayParts(_ request: RelayRequest) -> [RelayRequest] {
        guard request.ledgerOf == nil, request.ledger.isEmpty, request.records.count > 1 else { return [request] }
        var parts: [RelayRequest] = []
        var part = request
        part.records = []
        var bytes = 0
        for record in request.records {
            // What the record is stored as: its key, fields and versions
            // (a vector of a thousand long device ids weighs more than a rule).
            let versions = record.state.versions.counters.reduce(0) { $0 + $1.key.utf8.count + 24 }
            let size = record.key.utf8.count + versions + (record.fieldsText?.utf8.count ?? Store.relayPartBytes)
            if !part.records.isEmpty, bytes + size > Store.relayPartBytes {
                parts.append(part)
                part.records = []
                part.unreadable = [] // each rejected once, with the first part
                bytes = 0
            }
            part.records.append(record)
            bytes += size
        }
        parts.append(part)
        return parts
    }

    /// Authenticates `token` and answers a pull for its device, as the JSON
    /// text of a ``PullResponse``: one snapshot read (PostgreSQL: one
    /// statement), and the stored fields and versions spliced in as stored
    /// (they are kept in the wire's form), so serving a page parses nothing.
    /// - Parameters:
    ///   - clientDevice: the pulling replica: records its own pushes made
    ///     (from versions it had pulled) are skipped, but only when it proves
    ///     it is the replica that made the stream's latest push (a copy of its
    ///     home shares its device id, not its history).
    ///   - origin: the epoch and account the cursor belongs to; a cursor of
    ///     another timeline or account is not recorded, and a cursor beyond this store's
    ///     high-water mark starts a new epoch (the store was rolled back).
    ///   - reconciling: the replica is pulling everything after a `reset`.
    ///   - clientProtocol: the client's protocol (``Wire/protocolHeader``);
    ///     an encrypted account is refused to protocol 1.
    ///   - clientKeyID: the account key the client syncs with; a key the
    ///     account no longer uses is refused (`key_rotated`).
    ///   - clientSigningKey: the signing key the client derives from it
    ///     (the answer names the account's only when it is another).
    ///   - chainOf: a device id whose stream the answer echoes
    ///     (``PullRequest/chainOf``): only the one the token's device last
    ///     pushed under; such a pull is never answered from memory.
    ///   - maxBytes: the page's byte budget (see
    ///     ``StoreTransaction/pullSnapshot(tokenHash:clientDevice:after:limit:maxBytes:)``).
    ///   - proof: the request's signature, if it came signed: only a signed
    ///     pull raises an encrypted account's device's protocol
    ///     (``countedProtocol(_:of:proof:verify:)``).
    public func pullText(
        token: String, since cursor: Int64, limit: Int, clientDevice: PullRequest.Pusher? = nil,
        origin: CursorOrigin = CursorOrigin(),
        reconciling: Bool = false, clientProtocol: Int = Wire.protocolVersion, clientKeyID: String? = nil,
        clientSigningKey: String? = nil, chainOf: String? = nil,
        maxBytes: Int = Store.defaultPageBytes, proof: WriteAuthority? = nil
    ) throws -> [UInt8] {
        let hash = Tokens.hash(token)
        let joining = token.hasPrefix(Tokens.joinPrefix)
        if !joining, !reconciling, chainOf == nil,
            let answer = try noChangeFromMemory(
                hash: hash, since: cursor, limit: limit, clientDevice: clientDevice,
                origin: origin, clientProtocol: clientProtocol,
                clientKeyID: clientKeyID, clientSigningKey: clientSigningKey, proof: proof)
        {
            return answer
        }
        // Taken before the read: a change heard of after it makes the read stale.
        let generation = watches.generation
        let outsideWrites = commitState()
        // The stream is read only for a replica that can prove its latest
        // push, or that asks where it stands (the same id, when both are given).
        let proving =
            chainOf ?? clientDevice.flatMap { $0.pushed > 0 && !$0.digest.isEmpty ? $0.device : nil } ?? ""
        let snapshot = try reading {
            try $0.pullSnapshot(
                tokenHash: hash, clientDevice: proving, after: cursor, limit: limit + 1, maxBytes: maxBytes)
        }
        _ = try checkJoinSecret(token, hash: hash, found: snapshot?.device != nil)
        guard let snapshot else { throw Self.invalidToken }
        let device = try Self.check(snapshot.device, storedHash: snapshot.tokenHash, hash: hash)
        try SyncEngine.checkProtocol(clientProtocol, keyID: clientKeyID, of: device)
        var page = try SyncEngine.pullPage(
            since: cursor, limit: limit, device: device, clientDevice: clientDevice, origin: origin,
            epoch: Store.epoch(store: snapshot.epoch, account: device.accountEpoch), reconciling: reconciling,
            clientProtocol: clientProtocol,
            in: ReadAhead(snapshot: snapshot, clientDevice: proving))
        try finishPull(
            &page, since: cursor, device: device, origin: origin,
            clientProtocol: countedProtocol(clientProtocol, of: device, proof: proof), joining: joining)
        // Of any id in the account (homes copied with their token share
        // it), to a token whose device pushed: in an encrypted account only a
        // key holder's can, and a push's `gap` answer tells it as much.
        if chainOf != nil, !joining, !device.accountEncrypted || device.clientDevice != nil {
            page.chain = ChainEcho(last: snapshot.stream?.last ?? 0, digest: snapshot.stream?.digest ?? "")
        }
        // One lock per pull at most: the cache is shared by every connection.
        if !snapshot.epochIsCached { epochCache.set(snapshot.epoch) }
        if !joining {
            remember(hash, device, storedHash: snapshot.tokenHash, generation: generation, outsideWrites: outsideWrites)
        }
        return Self.pullJSON(page, device: device, clientSigningKey: clientSigningKey, clock: clockStamp())
    }

    /// The records a pull set aside, asked for again by hidden key
    /// (``PullRequest/asked``): each one the device's account has, as it is
    /// now, in change-number order, in a page that moves no cursor (`next` is
    /// the account's latest sequence) and changes nothing here; within the
    /// page's byte budget (`more` then says some were left out).
    /// Authenticated and checked as a pull is.
    public func pullAskedText(
        token: String, asked: [PullRequest.Asked], clientProtocol: Int = Wire.protocolVersion,
        clientKeyID: String? = nil, clientSigningKey: String? = nil, maxBytes: Int = Store.defaultPageBytes
    ) throws -> [UInt8] {
        let device = try authenticate(token: token)
        try SyncEngine.checkProtocol(clientProtocol, keyID: clientKeyID, of: device)
        // Told apart by the key's bytes, as the table tells them (``Store/RecordPlace``).
        var seen = Set<Store.RecordPlace>()
        // Ledger records go to clients that keep them only, as in a pull.
        let unique = asked.filter {
            seen.insert(Store.RecordPlace(collection: $0.collection, key: $0.key)).inserted
                && Wire.sends(collection: $0.collection, key: $0.key, toProtocol: clientProtocol)
        }
        // Within the page's byte budget, as a pull's page is (the first record always):
        // `more` says the rest were left out; the machine asks for them another day.
        var bytes = 0
        var cut = false
        let rows = try reading { transaction in
            try unique.compactMap { item -> Store.PulledRow? in
                guard !cut,
                    let found = try transaction.record(
                        account: device.accountID, collection: item.collection, key: item.key)
                else { return nil }
                let row = Store.PulledRow(
                    sequence: found.sequence, collection: item.collection, key: item.key,
                    fields: RecordState.encodeFields(found.state.fields),
                    versions: RecordState.encodeVersions(found.state.versions),
                    writer: found.writer.map(RecordState.encodeVersions), knownTo: nil, knownAfter: 0)
                let size = row.fields.utf8.count + row.versions.utf8.count
                if bytes > 0, bytes + size > maxBytes {
                    cut = true
                    return nil
                }
                bytes += size
                return row
            }
        }
        let page = Store.PulledPage(
            rows: rows.sorted { $0.sequence < $1.sequence }, next: device.accountNextSequence - 1, more: cut,
            epoch: Store.epoch(store: epoch, account: device.accountEpoch), rollback: false)
        return Self.pullJSON(page, device: device, clientSigningKey: clientSigningKey, clock: clockStamp())
    }

    /// A pull's answer as the JSON text of a ``PullResponse``, with the stored
    /// fields and versions spliced in as stored (they are kept in the wire's
    /// form), so serving a page parses nothing.
    /// - Parameter clientSigningKey: the signing key the client named: the
    ///   account's is left out when it is that one.
    static func pullJSON(
        _ page: Store.PulledPage, device: Store.Device, clientSigningKey: String?, clock: HLCTimestamp
    ) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(
            128
                + page.rows.reduce(0) {
                    $0 + $1.fields.utf8.count + $1.versions.utf8.count + ($1.writer?.utf8.count ?? 0)
                        + $1.key.utf8.count + 74
                })
        PullResponse.write(
            account: device.accountUID, clock: clock, epoch: page.epoch, more: page.more, reset: page.reset,
            keyID: device.accountEncrypted ? device.accountKeyID : nil,
            signingKey: clientSigningKey == device.accountSigningKey ? nil : device.accountSigningKey,
            encryptionReset: device.accountEncryptionReset,
            sealedFormat: device.accountEncrypted && device.accountSealedFormat >= 2 ? .two : .one, chain: page.chain,
            next: page.next, into: &output
        ) { output in
            for (index, row) in page.rows.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                ChangeRecord.write(
                    collection: row.collection, key: row.key, sequence: row.sequence, into: &output,
                    fields: { $0 += row.fields.utf8 }, versions: { $0 += row.versions.utf8 },
                    writer: row.writer.map { writer in { $0 += writer.utf8 } })
            }
        }
        return output
    }

    /// A key holder's signed confirmation that the account was rolled back
    /// (``TimelineRequest``): when its cursor is still past the account's
    /// latest record on the timeline it names, a new timeline starts; asked
    /// again (another machine confirmed first, a retry), the answer names the
    /// account's timeline as it is.
    /// - Throws: `not_encrypted` for a readable account (a pull starts its
    ///   timeline), or what ``SyncEngine/authorize(_:account:)`` refuses.
    public func confirmTimeline(
        of device: Store.Device, _ request: TimelineRequest, authority: WriteAuthority
    ) throws -> TimelineResponse {
        let answer = try writing(account: device.accountID) { transaction -> TimelineResponse in
            let storeEpoch = try transaction.lockAccountReadingEpoch(device.accountID)
            guard let counters = try transaction.accountCounters(device.accountID) else {
                throw ServerError.unauthorized("the device's account no longer exists")
            }
            guard counters.encrypted else {
                throw ServerError.notEncrypted(
                    "its timeline starts anew with the pull that finds it rolled back, not with this request")
            }
            if let first = try SyncEngine.authorize(authority, account: counters) {
                try transaction.registerSigningKey(account: device.accountID, first)
            }
            let current = Store.epoch(store: storeEpoch, account: counters.epoch)
            guard request.epoch == current, request.since > counters.nextSequence - 1 else {
                return TimelineResponse(epoch: current, changed: false)
            }
            return TimelineResponse(
                epoch: Store.epoch(store: storeEpoch, account: try transaction.startNewAccountEpoch(device.accountID)),
                changed: true)
        }
        if answer.changed { changed(device.accountID) }
        return answer
    }

    /// Makes the device's account end-to-end encrypted with the request's
    /// key, or, with `replaces`, rotates its key from that one, in one
    /// transaction: the key id and its signing key are set and the account's
    /// records and replica streams are deleted (no readable record, or
    /// record sealed with the old key, stays); every device with the key
    /// sends its records again, sealed. Who may ask, and what a retry gets:
    /// ``SyncEngine/keyChange(_:authority:account:accountUID:)``.
    /// The request's `seen` is the account sequence the asking device has
    /// pulled through; a change is refused while the account holds later
    /// records. Without it the check is skipped (a device that re-encrypts
    /// an account restored from before its switch cannot read it).
    /// - Returns: whether the account's records were deleted, the key it uses
    ///   now and its signing key (nil while none is registered).
    /// - Throws: ``ServerError/keyRotated`` for a rotation from a key the
    ///   account no longer uses; ``ServerError/accountMoved(seen:latest:)``
    ///   when records arrived after `seen`; the refusals of a signature.
    ///
    /// The account is locked as a push locks it, so no push of the account
    /// slips past; the dialect then scrubs what the deletion left (see
    /// ``StoreDialect/scrubAfterEncrypting()``).
    public func encryptAccount(
        of device: Store.Device, _ request: EncryptRequest, authority: WriteAuthority
    ) throws -> EncryptResponse {
        let result = try writing(account: device.accountID) { transaction -> EncryptResponse in
            try SyncEngine.requireLive(device, in: transaction)
            guard let current = try transaction.accountCounters(device.accountID) else {
                throw ServerError.unauthorized("the device's account no longer exists")
            }
            let signingKey = current.signingKey.isEmpty ? nil : current.signingKey
            switch try SyncEngine.keyChange(
                request, authority: authority, account: current, accountUID: device.accountUID)
            {
            case .none:
                return EncryptResponse(
                    changed: false, keyID: current.keyID, signingKey: current.encrypted ? signingKey : nil)
            case .register(let publicKey):
                try transaction.registerSigningKey(account: device.accountID, publicKey)
                return EncryptResponse(changed: false, keyID: current.keyID, signingKey: publicKey)
            case .change(let encryption):
                try transaction.setEncryption(account: device.accountID, encryption)
                // Turned encrypted: protocols said unsigned while it was readable no longer count.
                if !current.encrypted {
                    try transaction.capProtocols(account: device.accountID, at: Wire.sealedFormatProtocol - 1)
                }
                return EncryptResponse(changed: true, keyID: encryption.keyID, signingKey: encryption.signingKey)
            }
        }
        if result.changed {
            changed(device.accountID)
            scrubAfterEncrypting()
        } else {
            changed(device.accountID) // a signing key registered: every instance's memory of the account goes
        }
        return result
    }
    /// Makes an account not encrypted again, for its operator (a lost key,
    /// or a signing key registered by someone without the key): its records
    /// are deleted, and every machine that holds a key stops with a message
    /// until it encrypts the account again (`brsync key init`) or forgets
    /// its key. Its key is retired (never taken again: `key init` makes a
    /// new one), as are the keys it was rotated away from.
    /// - Returns: whether the account was encrypted.
    @discardableResult
    public func resetEncryption(account name: String) throws -> Bool {
        let reset = try writing { transaction -> Int64? in
            let id = try Self.account(name, in: transaction)
            guard let current = try transaction.accountCounters(id) else {
                throw ServerError.notFound("no account named '\(name)'")
            }
            guard current.encrypted else { return nil }
            // A timeline of its own: every machine of the account re-syncs
            // and sends what it holds (keyless ones readable at once, key
            // holders once they encrypt it again or forget their key).
            _ = try transaction.startNewAccountEpoch(id)
            // The key is retired: the account is encrypted again with a new one.
            let retired = current.retiredKeys.filter { $0 != current.keyID } + [current.keyID]
            try transaction.setEncryption(
                account: id, Store.Encryption(keyID: "", signingKey: "", retiredKeys: retired, reset: true))
            return id
        }
        guard let reset else { return false }
        changed(reset)
        scrubAfterEncrypting()
        return true
    }

    /// Deletes tombstones older than `retentionMilliseconds` that every
    /// active device of their account has pulled (its acknowledged cursor is
    /// past them): a machine added later never had the record, and a device
    /// that has not pulled keeps every tombstone, however long it stays
    /// offline. The age keeps a tombstone around for edits made long ago and
    /// pushed late, which it must still win against.
    /// - Returns: how many tombstones were removed.
    @discardableResult
    public func purgeTombstones(retentionMilliseconds: Int64) throws -> Int {
        let cutoff = currentMillis() - retentionMilliseconds
        return try writing { try $0.purgeTombstones(updatedAtOrBefore: cutoff) }
    }
}

/// What a pull's snapshot read, answering the engine's reads of a page.
struct ReadAhead: SyncReadTransaction {
    let snapshot: Store.PullSnapshot
    let clientDevice: String

    func stream(account: Int64, clientDevice: String) throws -> (last: Int64, digest: String)? {
        clientDevice == self.clientDevice ? snapshot.stream : nil
    }

    func records(account: Int64, after cursor: Int64, limit: Int) throws -> [Store.PulledRow] {
        Array(snapshot.records.prefix(limit))
    }

    var truncated: Bool { snapshot.truncated }
}
