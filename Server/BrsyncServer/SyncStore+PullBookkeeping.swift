import ServerStore
import SyncCore
import SystemServices

/// A pull's bookkeeping (written once for both dialects): the device's
/// acknowledged cursor, last-seen time and protocol, the account's sealed
/// format 2 mark that protocol may bring, and a new epoch on a rollback.
extension SyncStore {
    /// The device's bookkeeping after a page; starts a new epoch for the
    /// device's account on a rollback (other accounts are not touched), when
    /// the credential may: a device of a readable account, as often as the
    /// ``Store/TimelineGate`` lets it. In an encrypted account a key holder
    /// confirms it, signed (``confirmTimeline(of:_:authority:)``); a join
    /// code's secret never starts one.
    /// - Throws: `rollback_unconfirmed` or `timeline_limited`, nothing changed.
    func finishPull(
        _ page: inout Store.PulledPage, since cursor: Int64, device: Store.Device, origin: CursorOrigin,
        clientProtocol: CountedProtocol, joining: Bool
    ) throws {
        if page.rollback {
            if joining || device.accountEncrypted {
                throw ServerError.rollbackUnconfirmed(encrypted: device.accountEncrypted && !joining)
            }
            try timelineGate.admit(
                device,
                because:
                    "its pull's cursor \(cursor) is past the account's latest record \(device.accountNextSequence - 1)")
            let seen = page.epoch
            page.epoch = try writing(account: device.accountID) { transaction in
                let storeEpoch = try transaction.lockAccountReadingEpoch(device.accountID)
                // Another request, of this process or another, may have started it already.
                let stored = Store.epoch(
                    store: storeEpoch, account: try transaction.accountCounters(device.accountID)?.epoch ?? "")
                guard stored == seen else { return stored }
                return Store.epoch(store: storeEpoch, account: try transaction.startNewAccountEpoch(device.accountID))
            }
            if page.epoch != seen { changed(device.accountID) }
            page.more = false
            return
        }
        // A cursor of another timeline or account says nothing about this
        // one, and one below a purge is being given up.
        if !origin.isOf(epoch: page.epoch, account: device.accountUID) { return }
        if page.reset { return }
        // A join code's secret reads (a joining machine checks the account
        // first): the device has not joined, and is not seen by it.
        if joining { return }
        // Bookkeeping writes only when something moved: a no-change pull
        // (the common case, every few minutes per machine) stays a pure read.
        // `acknowledged_cursor`, `last_seen` and `protocol` are written once
        // per device and value (last_seen at most once a minute), so
        // concurrent pulls do not queue on the write lock.
        let now = currentMillis()
        if bookkeeping.shouldWrite(device: device, cursor: cursor, now: now, protocol: clientProtocol.value) {
            let marked = try writing(account: device.accountID) {
                try $0.noteAcknowledged(
                    device: device.id, cursor: cursor, now: now, protocol: clientProtocol.claimed,
                    raising: clientProtocol.mayRaise)
                return try Self.markSealedFormat(device, clientProtocol: clientProtocol.value, now: now, in: $0)
            }
            if marked { changed(device.accountID) }
        }
    }

    /// The protocol a pull says, as it counts toward its device's (and so
    /// the account's sealed format: Deploy/SECURITY.md, "Who may do what").
    struct CountedProtocol: Sendable, Equatable {
        /// What the request said.
        var claimed: Int
        /// Whether it may raise the stored one (signed with the account's
        /// key; a readable account's request raises it too, as the store
        /// finds the account when it writes); else the store keeps the
        /// lower of the two, decided in the statement that writes it (so
        /// neither a lowering another brsyncd wrote since this one read the
        /// device, nor a raise, is undone by a stale read).
        var mayRaise: Bool
        /// The protocol this process expects stored after the request (what
        /// its bookkeeping compares, to write once per device and value).
        var value: Int
    }

    /// The protocol a pull of `device` that says `claimed` counts as: what
    /// it says, except that in an encrypted account only a request signed
    /// with the account's signing key raises it. A token alone may hold the
    /// account in format 1 (an older protocol said unsigned counts), never
    /// mark it ahead of its devices, which would lock an older one out.
    /// - Parameter verify: false to take a signature as given (an event
    ///   loop asking whether a write is due; the thread that writes checks it).
    func countedProtocol(
        _ claimed: Int, of device: Store.Device, proof: WriteAuthority?, verify: Bool = true
    ) -> CountedProtocol {
        // Readable as read: the store raises it only if the account still is
        // readable when it writes (a switch to encryption may come between).
        guard device.accountEncrypted else { return CountedProtocol(claimed: claimed, mayRaise: false, value: claimed) }
        // As this process knows it; the store then decides against what it holds.
        let held = bookkeeping.lastProtocol(of: device, now: currentMillis())
        guard claimed > held else { return CountedProtocol(claimed: claimed, mayRaise: false, value: claimed) }
        guard let proof, proof.signature != nil, !device.accountSigningKey.isEmpty,
            !verify || proof.isSigned(by: device.accountSigningKey)
        else { return CountedProtocol(claimed: claimed, mayRaise: false, value: held) }
        return CountedProtocol(claimed: claimed, mayRaise: true, value: claimed)
    }

    /// Marks `device`'s account format 2 when this request of protocol
    /// `clientProtocol` is the last its devices needed
    /// (``StoreTransaction/markSealedFormat(account:now:seenSince:)``).
    /// - Returns: whether it was marked now (its devices' cached reads are then stale).
    static func markSealedFormat(
        _ device: Store.Device, clientProtocol: Int, now: Int64, in transaction: some StoreTransaction
    ) throws -> Bool {
        guard device.accountEncrypted, device.accountSealedFormat < 2, clientProtocol >= Wire.sealedFormatProtocol
        else { return false }
        return try transaction.markSealedFormat(
            account: device.accountID, now: now, seenSince: now - Wire.sealedFormatWindowMillis)
    }
}
