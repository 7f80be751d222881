import JSON
import Model
import ServerStore
import SyncCore

/// What a write must pass before it is applied: its stamps, its sealing,
/// each record, the merge it makes, the account's quota, the client's
/// protocol. Each check refuses with what the client is told.
extension SyncEngine {
    /// Checks every stamp of pushed or relayed records: a device pushes only
    /// its own stamps (`ownDevice`; nil for a relay) and no stamp may be
    /// further ahead than allowed of the server's wall clock `now`, unless
    /// its wall time is not past the newest the account holds (`newest`): an
    /// edit made after seeing a stamp accepted while the server's clock was
    /// fast is stamped at that wall time, and is not refused for it. A stamp
    /// never goes further ahead of the server's clock than allowed, so no
    /// sequence of pushes walks the account's clock forward.
    static func checkStamps(
        of changes: [ChangeRecord], ownDevice: String?, now: Int64, newest: Int64, maxClockOffsetMilliseconds: Int64
    ) throws {
        for change in changes {
            for (name, register) in change.state.fields {
                if let ownDevice, register.stamp.device != ownDevice {
                    throw ServerError.foreignStamp(
                        "field \"\(name)\" of change \(change.sequence) carries a stamp of device \(register.stamp.device); a device pushes only its own edits"
                    )
                }
                let ahead = register.stamp.wallMillis - now
                if ahead > maxClockOffsetMilliseconds, register.stamp.wallMillis > newest {
                    throw ServerError.clockSkew(
                        aheadMilliseconds: ahead, maximumMilliseconds: maxClockOffsetMilliseconds)
                }
            }
        }
    }

    /// A request to an encrypted account names its key, and one to an account
    /// that is not encrypted names none: otherwise the whole request is
    /// refused, so a client without the key is told to add it, and a client
    /// with a key learns the account is not encrypted yet. A key the account
    /// no longer uses (rotated) is refused too (409 key_rotated, saying
    /// whether the account retired it). Checked twice: on the request's
    /// head against its ``Wire/sealedWithHeader`` (the client sends the body
    /// only if that passes), and inside the write transaction, after the
    /// account is locked, against the body's key, so no push slips past an
    /// encryption. Each change is then checked by itself
    /// (``recordProblem(_:account:clientProtocol:)``).
    static func checkSealing(
        _ claim: Wire.SealedWith, encrypted: Bool, keyID: String, retiredKeys: [String], reset: Bool
    ) throws(ServerError) {
        if encrypted {
            switch claim {
            case .none: throw .encryptionRequired("the request names no account key")
            case .key(let named) where named != keyID: throw .keyRotated(retired: retiredKeys.contains(named))
            case .key: return
            }
        } else if claim != .none {
            // A key holder is told the reset, not asked to encrypt again on its own.
            if reset { throw .encryptionReset }
            throw .notEncrypted("the request names an account key")
        }
    }

    /// ``checkSealing(_:encrypted:keyID:retiredKeys:reset:)`` of a request's key against the locked account.
    static func checkSealing(keyID: String?, account: Store.AccountCounters) throws(ServerError) {
        try checkSealing(
            Wire.SealedWith(keyID: keyID), encrypted: account.encrypted, keyID: account.keyID,
            retiredKeys: account.retiredKeys,
            reset: account.encryptionReset)
    }

    /// ``checkSealing(_:encrypted:keyID:retiredKeys:reset:)`` of a request's head against its device's account.
    static func checkSealing(_ claim: Wire.SealedWith, of device: Store.Device) throws(ServerError) {
        try checkSealing(
            claim, encrypted: device.accountEncrypted, keyID: device.accountKeyID,
            retiredKeys: device.accountRetiredKeys,
            reset: device.accountEncryptionReset)
    }

    /// Why one change cannot be taken into `account`, or nil: in an
    /// encrypted account it must be sealed (a hidden key, the sealed key,
    /// every value but the deletion flag sealed); in one that is not, it
    /// must not carry encryption's fields; in any, its deletion flag is
    /// true or false. A ledger record is taken only into an encrypted
    /// account, from a client of ``Wire/ledgerProtocol`` or later (a
    /// withdrawal, ``Wire/withdrawalProtocol``). Such a
    /// change is rejected alone (reported in `rejected`, its number still
    /// counted): the rest of the batch applies.
    /// - Parameter fieldsBytes: the length of the change's fields as
    ///   ``RecordState/encodeFields(_:)`` writes them, when the caller wrote
    ///   them already (outside the write lock: ``PreparedPush``, ``PreparedRelay``).
    static func recordProblem(
        _ change: ChangeRecord, account: Store.AccountCounters, clientProtocol: Int, fieldsBytes: Int? = nil
    ) -> String? {
        if let problem = fieldsBytes.map(Wire.recordSizeProblem(textBytes:)) ?? Wire.recordSizeProblem(change.state) {
            return problem
        }
        if change.collection == .ledger {
            guard account.encrypted else { return "a ledger is kept in end-to-end encrypted accounts only" }
            guard clientProtocol >= Wire.ledgerProtocol else {
                return "a ledger record needs a client of protocol \(Wire.ledgerProtocol)"
            }
            if case .withdrawal? = Ledger.Key(change.key), clientProtocol < Wire.withdrawalProtocol {
                return "a withdrawal needs a client of protocol \(Wire.withdrawalProtocol)"
            }
        }
        if account.encrypted {
            return Wire.sealedProblem(change).map {
                "the account is end-to-end encrypted and takes sealed records only: \($0)"
            }
        }
        if Wire.looksSealed(change) {
            return "it carries end-to-end encryption's fields, and the account is not encrypted"
        }
        return Wire.deletionFlagProblem(change.state)
    }

    /// Why a ledger record (of a request whose records passed
    /// ``recordProblem(_:account:clientProtocol:)``) cannot be written by
    /// it, or nil: a push writes its own device's ledger only (`pusher`);
    /// a relay (nil) carries ledgers of device ids that pushed to the
    /// account, or whose ledger it holds, or of a new id while fewer than
    /// ``Store/maxStreamsPerAccount`` ids have one (a server restored from
    /// before a device pushed takes its ledger back from the machines that
    /// hold it). So an account keeps at most 289 ledger records an id, and
    /// about ``Store/maxStreamsPerAccount`` ids (twice that at most, with
    /// the streams), outside its quotas.
    static func ledgerWriterProblem(
        _ change: ChangeRecord, pusher: String?, account: Int64, in store: some StoreTransaction
    ) throws -> String? {
        guard change.collection == .ledger, let key = Ledger.Key(change.key) else { return nil }
        var named: String { DisplayText.printable(key.device.prefix(60)) }
        if let pusher {
            return key.device == pusher
                ? nil : "a device writes only its own ledger, and this one is device '\(named)'s"
        }
        guard try store.stream(account: account, clientDevice: key.device) == nil else { return nil }
        let held = try store.ledgerDevices(account: account)
        return held.contains(key.device) || held.count < Store.maxStreamsPerAccount
            ? nil
            : "a ledger of device '\(named)', which never pushed to this account, "
                + "and \(held.count) devices' ledgers are held already"
    }

    /// Why a merge's result cannot be stored, or nil: fields and values were
    /// checked when the change was read; a merge can make a record too wide
    /// or too large, and, in a readable account, a browser profile that would
    /// make other machines run arguments synced data may not choose
    /// (``ProfileArguments``; machines that predate that check would run
    /// them). Deleting such a profile is always taken.
    /// - Parameter fieldsBytes: as in ``recordProblem(_:account:clientProtocol:fieldsBytes:)``, of `merged`.
    static func mergeProblem(
        _ merged: RecordState, collection: RecordCollection, account: Store.AccountCounters, fieldsBytes: Int? = nil
    ) -> String? {
        if Wire.fieldCountProblem(merged) != nil { return "the record would have more than \(Wire.maxFields) fields" }
        if let problem = fieldsBytes.map(Wire.recordSizeProblem(textBytes:)) ?? Wire.recordSizeProblem(merged) {
            return "the record would be too large: \(problem)"
        }
        if collection == .browsers, !account.encrypted, !merged.isDeleted,
            let profile = BrowserProfile(fields: merged.values),
            let problem = ProfileArguments.problem(profile.arguments, base: profile.base)
        {
            return "a profile's arguments that other machines would run: \(problem) (a machine's own launch command, "
                + "'brsync browsers add ID --exec', never syncs and may hold anything)"
        }
        return nil
    }

    /// A write that takes the account past one of its limits is refused
    /// whole: thrown inside the transaction, so nothing of it stays. One
    /// that does not grow an account already past a limit (lowered by its
    /// operator) is taken: deleting is always possible.
    static func checkQuota(before: Store.AccountCounters, after: Store.Usage) throws(ServerError) {
        if after.records > before.limits.records, after.records > before.usage.records {
            throw .quotaExceeded(what: "records", would: after.records, limit: before.limits.records)
        }
        if after.bytes > before.limits.bytes, after.bytes > before.usage.bytes {
            throw .quotaExceeded(what: "bytes", would: after.bytes, limit: before.limits.bytes)
        }
    }

    /// An encrypted account marked format 2 takes no write of a client
    /// older than ``Wire/sealedFormatProtocol`` (checked under the
    /// account's lock, as it is now).
    static func checkSealedFormat(_ clientProtocol: Int, account: Store.AccountCounters) throws(ServerError) {
        if account.encrypted && account.sealedFormat >= 2 && clientProtocol < Wire.sealedFormatProtocol {
            throw sealedFormatUpgrade(since: account.sealedFormatSince)
        }
    }

    /// The refusal of an older client by an account marked format 2 at
    /// `since` (ms since 1970), naming the day.
    static func sealedFormatUpgrade(since: Int64?) -> ServerError {
        .sealedFormatUpgrade(since: since.map { String(Timestamp.iso8601(millis: $0).prefix(10)) })
    }

    /// A client of protocol 1 cannot read an encrypted account: it is told
    /// to upgrade instead of being sent what it cannot open.
    /// A client that names its key (a pull's `key=`) must name the
    /// account's: one with a rotated key learns it before opening anything.
    static func checkProtocol(_ clientProtocol: Int, keyID: String? = nil, of device: Store.Device) throws {
        if device.accountEncrypted && clientProtocol < 2 { throw ServerError.upgradeRequired }
        if device.accountEncrypted && device.accountSealedFormat >= 2 && clientProtocol < Wire.sealedFormatProtocol {
            throw sealedFormatUpgrade(since: device.accountSealedFormatSince)
        }
        if device.accountEncrypted, let keyID, keyID != device.accountKeyID {
            throw ServerError.keyRotated(retired: device.accountRetiredKeys.contains(keyID))
        }
    }
}
