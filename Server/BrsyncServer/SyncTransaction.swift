import SyncCore

/// What a push or relay needs of a store inside one write transaction. Each
/// store (SQLite; PostgreSQL) answers these with its own SQL; the
/// decisions and the merge (``SyncEngine``) are written once against it.
///
/// A store's write transaction must serialise the writes of one account:
/// SQLite's `BEGIN IMMEDIATE` takes the one write lock; a store shared by
/// several processes locks the account's row in ``accountCounters(_:)``.
protocol SyncWriteTransaction {
    /// Whether the device is revoked; nil when it no longer exists.
    func deviceRevoked(_ device: Int64) throws -> Bool?
    /// A replica's stream: its last applied change number and the chain through it.
    func stream(account: Int64, clientDevice: String) throws -> (last: Int64, digest: String)?
    /// The account's next change number, the newest stamp it holds and
    /// whether it is end-to-end encrypted; in a store shared by processes
    /// this locks the account until the end of the transaction (pushes of
    /// one account are serialised, and none slips past an encryption).
    func accountCounters(_ account: Int64) throws -> AccountCounters
    /// Reads ahead the records a push or relay will ask ``record(account:collection:key:)``
    /// for, where a round trip per record would cost more than the merge
    /// (a store whose reads are local may do nothing).
    func prefetch(account: Int64, keys: [(collection: RecordCollection, key: String)]) throws
    /// A stored record, decoded, with its change number.
    func record(account: Int64, collection: RecordCollection, key: String) throws -> (state: RecordState, sequence: Int64)?
    /// Writes a record version with its new change number; `fieldsText` is
    /// its fields as ``RecordState/encodeFields(_:)`` writes them, when the
    /// caller has that already.
    func upsertRecord(account: Int64, collection: RecordCollection, key: String, state: RecordState, fieldsText: String?, sequence: Int64,
                      knownTo: String?, knownAfter: Int64, now: Int64) throws
    /// Stores the account's next change number and raises its newest stamp to `stampAtLeast`.
    func setAccountCounters(_ account: Int64, nextSequence: Int64, stampAtLeast: Int64) throws
    /// Records a replica's stream after a push.
    func setStream(account: Int64, clientDevice: String, last: Int64, digest: String) throws
    /// The device's own record of its last push.
    func notePush(device: Int64, lastDeviceSequence: Int64, clientDevice: String, now: Int64) throws
    /// Starts a new epoch (a rollback was detected) and returns it.
    func startNewEpoch() throws -> String
}

/// An account's counters and encryption, read (and locked) by a push or relay.
struct AccountCounters {
    var nextSequence: Int64 = 1
    var stampHigh: Int64 = 0
    var encrypted = false
    /// The id of the key its records are sealed with ("" when not encrypted).
    var keyID = ""
}

/// What a pull needs of a store inside one read transaction.
protocol SyncReadTransaction {
    func stream(account: Int64, clientDevice: String) throws -> (last: Int64, digest: String)?
    /// Up to `limit` records of the account after `cursor`, in change-number
    /// order, as stored (the wire's JSON), with the replica that made each
    /// from a version it had (`knownTo`) and that version's number.
    func records(account: Int64, after cursor: Int64, limit: Int) throws -> [(row: ServerStore.PulledRow, knownTo: String?, knownAfter: Int64)]
}

extension SyncWriteTransaction {
    func prefetch(account: Int64, keys: [(collection: RecordCollection, key: String)]) throws {}
}
