import ServerStore
import SyncCore
import SystemServices

/// What the store core answers from memory (``Store/TokenCache``): a
/// no-change pull, and a watch's authentication, while nothing was heard
/// of the account since the device was read.
extension SyncStore {
    /// ``authenticate(token:)`` for a watch, answered from memory
    /// (``Store/TokenCache``) when this process authenticated the token
    /// within ``Store/TokenCache/watchLifetimeMillis`` and nothing was heard
    /// of its account since; else read, and remembered. A watch arriving
    /// every minute or so from each machine then reads nothing.
    public func authenticateRemembered(token: String) throws -> Store.Device {
        guard !token.hasPrefix(Tokens.joinPrefix) else { return try authenticate(token: token) }
        let hash = Tokens.hash(token)
        if let entry = rememberedDevice(hash, lifetimeMillis: TokenCache.watchLifetimeMillis) {
            return try Self.check(entry.device, storedHash: entry.storedHash, hash: hash)
        }
        let generation = watches.generation
        let outsideWrites = commitState()
        let found = try reading { try $0.device(tokenHash: hash) }
        let device = try Self.check(found?.device, storedHash: found?.storedHash, hash: hash)
        if let found {
            remember(hash, device, storedHash: found.storedHash, generation: generation, outsideWrites: outsideWrites)
        }
        return device
    }
    /// The device of `token` if this process remembers it for a watch
    /// (as ``authenticateRemembered(token:)``), reading nothing; nil when
    /// the store would have to be read (or the token refused).
    public func rememberedWatcher(token: String) -> Store.Device? {
        guard !token.hasPrefix(Tokens.joinPrefix) else { return nil }
        let hash = Tokens.hash(token)
        guard let entry = rememberedDevice(hash, lifetimeMillis: TokenCache.watchLifetimeMillis) else {
            return nil
        }
        return try? Self.check(entry.device, storedHash: entry.storedHash, hash: hash)
    }

    /// Keeps `device`, read after `generation` and `outsideWrites` were
    /// taken, for ``rememberedDevice(_:lifetimeMillis:)``.
    func remember(
        _ hash: [UInt8], _ device: Store.Device, storedHash: [UInt8], generation: UInt64, outsideWrites: CommitState?
    ) {
        tokenCache.keep(
            hash,
            TokenCache.Entry(
                device: device, storedHash: storedHash, generation: generation,
                outsideWrites: outsideWrites, atMillis: SystemServices.Clock.monotonicMillis()))
    }

    /// The device remembered for a token hash while it still holds: young
    /// enough, nothing heard of its account since, no write of another process.
    func rememberedDevice(
        _ hash: [UInt8], lifetimeMillis: Int64 = TokenCache.lifetimeMillis
    ) -> TokenCache.Entry? {
        guard
            let entry = tokenCache.entry(
                hash, nowMillis: SystemServices.Clock.monotonicMillis(), lifetimeMillis: lifetimeMillis),
            !watches.changed(account: entry.device.accountID, since: entry.generation),
            let marker = entry.outsideWrites, marker == commitState()
        else { return nil }
        return entry
    }
    /// A no-change pull answered from memory alone (``Store/TokenCache``),
    /// reading and writing nothing, or nil when the store must be used (or
    /// the pull refused): an event loop answers with it without a thread.
    public func pullFromMemory(
        token: String, since cursor: Int64, limit: Int, clientDevice: PullRequest.Pusher?, origin: CursorOrigin,
        clientProtocol: Int, clientKeyID: String?, clientSigningKey: String?, proof: WriteAuthority? = nil
    ) -> [UInt8]? {
        guard !token.hasPrefix(Tokens.joinPrefix) else { return nil }
        return try? noChangeFromMemory(
            hash: Tokens.hash(token), since: cursor, limit: limit, clientDevice: clientDevice, origin: origin,
            clientProtocol: clientProtocol, clientKeyID: clientKeyID, clientSigningKey: clientSigningKey,
            proof: proof, mayWrite: false)
    }

    /// A pull at the account's latest cursor answered from memory
    /// (``Store/TokenCache``), as the store would answer it; nil when the
    /// store must be read: the token not seen lately, anything heard of the
    /// account since, a cursor that is not the latest, or a page that would
    /// not be plain "no change".
    /// - Parameter mayWrite: false for an answer that writes nothing: nil
    ///   when the device's bookkeeping is due a write.
    func noChangeFromMemory(
        hash: [UInt8], since cursor: Int64, limit: Int, clientDevice: PullRequest.Pusher?, origin: CursorOrigin,
        clientProtocol: Int, clientKeyID: String?, clientSigningKey: String?, proof: WriteAuthority?,
        mayWrite: Bool = true
    ) throws -> [UInt8]? {
        guard let entry = rememberedDevice(hash), cursor == entry.device.accountNextSequence - 1 else { return nil }
        let device = try Self.check(entry.device, storedHash: entry.storedHash, hash: hash)
        try SyncEngine.checkProtocol(clientProtocol, keyID: clientKeyID, of: device)
        let known = Store.PullSnapshot(
            device: device, tokenHash: entry.storedHash, epoch: epochCache.current, stream: nil, records: [],
            epochIsCached: true)
        var page = try SyncEngine.pullPage(
            since: cursor, limit: limit, device: device, clientDevice: clientDevice, origin: origin,
            epoch: Store.epoch(store: known.epoch, account: device.accountEpoch), reconciling: false,
            clientProtocol: clientProtocol, in: ReadAhead(snapshot: known, clientDevice: ""))
        guard page.rows.isEmpty, !page.more, !page.rollback, !page.reset else { return nil }
        if mayWrite {
            try finishPull(
                &page, since: cursor, device: device, origin: origin,
                clientProtocol: countedProtocol(clientProtocol, of: device, proof: proof), joining: false)
        } else if bookkeeping.needsWrite(
            device: device, cursor: cursor, now: currentMillis(),
            protocol: countedProtocol(clientProtocol, of: device, proof: proof, verify: false).value)
        {
            // finishPull would write (and does nothing else for a page like this one).
            return nil
        }
        return Self.pullJSON(page, device: device, clientSigningKey: clientSigningKey, clock: clockStamp())
    }
}
