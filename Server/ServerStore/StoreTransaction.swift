import SyncCore

/// What the store core (``SyncStore``) and ``SyncEngine`` ask of a store
/// inside one transaction. Each dialect answers with its own SQL (and keeps
/// its own optimisations: PostgreSQL's batched `unnest` reads and writes, its
/// one-statement pull): ``SQLiteTransaction`` and ``PostgresTransaction``,
/// used nowhere outside the store.
///
/// A store's write transaction must serialise the writes of one account:
/// SQLite's `BEGIN IMMEDIATE` takes the one write lock; a store shared by
/// several processes locks the account's row in ``accountCounters(_:)``.
package protocol StoreTransaction {
    /// Everything a pull reads, in one snapshot (see ``Store/PullSnapshot``);
    /// nil when no device has a token with this hash.
    /// The records stop at `limit`, or once those taken hold `maxBytes` of
    /// stored text (fields and versions; the first record is always taken,
    /// so a page is at most `maxBytes` plus one record): ``Store/PullSnapshot/truncated`` then.
    func pullSnapshot(
        tokenHash: [UInt8], clientDevice: String, after cursor: Int64, limit: Int, maxBytes: Int
    ) throws -> Store.PullSnapshot?
    /// The device whose token hashes to `tokenHash`, with the hash stored for
    /// it and its account's counters and encryption.
    func device(tokenHash: [UInt8]) throws -> (device: Store.Device, storedHash: [UInt8])?
    /// Locks the account (PostgreSQL: its row, so a push of it from another
    /// process waits) and reads the epoch as it is under the lock.
    func lockAccountReadingEpoch(_ account: Int64) throws -> String
    /// The epoch as stored, locked until the end of the transaction.
    func storedEpochForUpdate() throws -> String
    /// Raises a device's acknowledged cursor (never lowers it) and sets its
    /// last-seen time and the protocol of its latest request: `protocol` as
    /// said when `raising` (a request signed with the account's key) or
    /// when the account is readable as the statement finds it, else no
    /// higher than the stored one (decided in the statement, so neither
    /// another brsyncd's write in between nor a switch to encryption that
    /// capped it is undone by a stale read).
    func noteAcknowledged(device: Int64, cursor: Int64, now: Int64, protocol: Int, raising: Bool) throws
    /// Lowers every device of the account to at most protocol `highest`
    /// (an account turned encrypted: what its devices said unsigned while
    /// it was readable no longer counts toward its sealed format).
    func capProtocols(account: Int64, at highest: Int) throws
    /// Marks an encrypted account format 2 (``Wire/sealedFormatProtocol``),
    /// since `now`, when every device of it that is not revoked and was
    /// seen since `seenSince` said that protocol or later at its latest request.
    /// - Returns: whether it was marked now (false: marked already, not
    ///   encrypted, or a device holds it back).
    func markSealedFormat(account: Int64, now: Int64, seenSince: Int64) throws -> Bool
    /// Sets the account's encryption (a key, or none after an operator's
    /// reset) and deletes its records and replica streams: nothing readable,
    /// or sealed with another key, stays.
    func setEncryption(account: Int64, _ encryption: Store.Encryption) throws
    /// Deletes tombstones updated at or before `cutoff` that every active
    /// device of their account has pulled, raising each account's purge
    /// point to the newest one deleted; one purge at a time.
    /// - Returns: how many were deleted.
    func purgeTombstones(updatedAtOrBefore cutoff: Int64) throws -> Int
    func counts() throws -> (records: Int, devices: Int, accounts: Int)

    // Administration.
    func accountID(named name: String) throws -> Int64?
    func insertAccount(name: String, uid: String, now: Int64) throws
    func accountSummaries() throws -> [Store.Account]
    func setLimits(account: Int64, _ limits: Store.Limits) throws
    func deviceCount(account: Int64) throws -> Int64
    /// Deletes the account's records, streams, devices and the account.
    func deleteAccount(_ account: Int64) throws
    func deviceExists(account: Int64, name: String) throws -> Bool
    func insertDevice(account: Int64, name: String, tokenHash: [UInt8], now: Int64) throws
    /// The account's devices by name (without the account's counters).
    func devices(account: Int64) throws -> [Store.Device]
    /// Gives the named device a new token hash and reinstates it.
    /// - Returns: whether a device was changed.
    func setToken(account: Int64, device name: String, tokenHash: [UInt8]) throws -> Bool
    /// - Returns: whether a device was changed.
    func revoke(account: Int64, device name: String) throws -> Bool
    /// The id of the account's device called `name`.
    func deviceID(account: Int64, name: String) throws -> Int64?
    /// Sets a device's token hash (and reinstates it).
    func setToken(device: Int64, tokenHash: [UInt8]) throws
    /// Replaces the device's join codes by one whose secret hashes to `secretHash`.
    func insertEnrollment(device: Int64, secretHash: [UInt8], expiresAt: Int64) throws
    /// The join code whose secret hashes to `secretHash`.
    func enrollment(secretHash: [UInt8]) throws -> Store.Enrollment?
    /// Marks a join code used, for the token that hashes to `tokenHash`.
    func markEnrollmentUsed(secretHash: [UInt8], tokenHash: [UInt8], now: Int64) throws
    /// Every record of the account as stored, in change order.
    func allRecords(account: Int64) throws -> [ChangeRecord]

    // What a push or relay needs (``SyncEngine`` is written against these).
    /// Whether the device is revoked, and the hash of its token now; nil
    /// when it no longer exists.
    func deviceStanding(_ device: Int64) throws -> (revoked: Bool, tokenHash: [UInt8])?
    /// A replica's stream: its last applied change number and the chain through it.
    func stream(account: Int64, clientDevice: String) throws -> (last: Int64, digest: String)?
    /// The account's next change number, the newest stamp it holds and
    /// whether it is end-to-end encrypted (nil when the account no longer
    /// exists); in a store shared by processes this locks the account until
    /// the end of the transaction (pushes of one account are serialised, and
    /// none slips past an encryption).
    func accountCounters(_ account: Int64) throws -> Store.AccountCounters?
    /// Reads ahead the records a push or relay will ask ``record(account:collection:key:)``
    /// for, where a round trip per record would cost more than the merge
    /// (a store whose reads are local may do nothing).
    func prefetch(account: Int64, keys: [(collection: RecordCollection, key: String)]) throws
    /// A stored record, decoded, with its change number and writer.
    func record(account: Int64, collection: RecordCollection, key: String) throws -> Store.RecordVersion?
    /// Writes a record version with its new change number and writer
    /// (``Store/RecordVersion``); `fieldsText` is its fields as
    /// ``RecordState/encodeFields(_:)`` writes them, when the caller has
    /// that already. `isNew`: this transaction read no such record (it goes
    /// in by a plain insert: were the record there after all, the write
    /// fails and nothing of the transaction stays).
    func upsertRecord(
        account: Int64, collection: RecordCollection, key: String, state: RecordState, writer: VersionVector?,
        fieldsText: String?,
        sequence: Int64, knownTo: String?, knownAfter: Int64, now: Int64, isNew: Bool) throws
    /// Stores the account's next change number and raises its newest stamp to `stampAtLeast`.
    func setAccountCounters(_ account: Int64, nextSequence: Int64, stampAtLeast: Int64) throws
    /// What the account holds now, this transaction's writes included.
    func accountUsage(_ account: Int64) throws -> Store.Usage
    /// Counts again what the account holds from its records (ledger
    /// records left out, as the counting triggers do), for counts that
    /// writes the triggers do not see moved away (an operator's `REPLACE`,
    /// a row moved to another account); what it holds now.
    func recountUsage(_ account: Int64) throws -> Store.Usage
    /// Keeps `publicKey` as the account's signing key, unless it has one
    /// (trust on first use, for an account encrypted before signed writes).
    func registerSigningKey(account: Int64, _ publicKey: String) throws
    /// Records a replica's stream after a push.
    func setStream(account: Int64, clientDevice: String, last: Int64, digest: String) throws
    /// How many replica streams the account has.
    func streamCount(account: Int64) throws -> Int64
    /// The device ids whose ledger records the account holds (the part of
    /// a ledger record's key before its first `/`).
    func ledgerDevices(account: Int64) throws -> Set<String>
    /// Keeps the changes of a replica's stream that a push refused (kept
    /// until the stream is ``Store/refusalsKept`` changes past them), so that
    /// every answer to a push covering them, a retry included, names them.
    func keepRefusals(account: Int64, clientDevice: String, _ refusals: [RejectedChange]) throws
    /// The refusals kept of a replica's stream, numbered `from` through `through`, in order.
    func refusals(account: Int64, clientDevice: String, from: Int64, through: Int64) throws -> [RejectedChange]
    /// Forgets a stream's refusals numbered `through` or lower.
    func forgetRefusals(account: Int64, clientDevice: String, through: Int64) throws
    /// The device's own record of its last push, with the protocol it spoke.
    func notePush(device: Int64, lastDeviceSequence: Int64, clientDevice: String, now: Int64, protocol: Int) throws
    /// Starts a new timeline for the whole store: the store is not the file
    /// or database that last served (restored or copied as a whole). Every
    /// client of every account then re-syncs fully and relays what it holds;
    /// acknowledged cursors of the old timeline stop counting for purges.
    /// - Returns: the new epoch.
    func startNewEpoch() throws -> String
    /// Starts a new timeline for one account (a rollback seen in it, or its
    /// encryption reset): its clients re-sync fully and relay what they
    /// hold; its devices' acknowledged cursors stop counting for purges.
    /// Other accounts are not touched.
    /// - Returns: the account's new epoch (see ``Store/epoch(store:account:)``).
    func startNewAccountEpoch(_ account: Int64) throws -> String
}

extension StoreTransaction {
    package func prefetch(account: Int64, keys: [(collection: RecordCollection, key: String)]) throws {}
}

/// What a pull's page needs (``SyncEngine/pullPage``): a read transaction,
/// or what one statement read ahead.
package protocol SyncReadTransaction {
    func stream(account: Int64, clientDevice: String) throws -> (last: Int64, digest: String)?
    /// Up to `limit` records of the account after `cursor`, in change-number order.
    func records(account: Int64, after cursor: Int64, limit: Int) throws -> [Store.PulledRow]
    /// Whether those records were cut by the page's byte budget (more follow).
    var truncated: Bool { get }
}
