import SyncCore

/// One database's way of running the store's transactions: SQLite
/// (``SQLiteDialect``, the embedded default) or PostgreSQL
/// (``PostgresDialect``). A dialect opens its database, runs transactions
/// and hears of other processes' commits; every decision (authentication,
/// what a push, relay or pull does, key changes, purges, administration and
/// their messages) is written once, in ``SyncStore`` and ``SyncEngine``,
/// against ``StoreTransaction``.
protocol StoreDialect: AnyObject, Sendable {
    /// The epoch as this process knows it: set when the database opens, and
    /// again when another process (or a restore) is seen to have changed it.
    var epochCache: EpochCache { get }

    /// Runs `body` in a write transaction that serialises the writes of an
    /// account (SQLite: `BEGIN IMMEDIATE`; PostgreSQL: the account's row is
    /// locked by ``StoreTransaction/accountCounters(_:)``), committed when it
    /// returns. Where a store's writers queue for one lock (SQLite), they
    /// take turns account by account (Storage's ``WriterQueue``; nil: a write
    /// of no account), so a flood of one account's large writes does not hold
    /// up another's small one behind all of them. `readAhead`
    /// (``readAhead(account:keys:)``) is taken where it is still current. A
    /// dialect may run `body` again when the database says it lost a race;
    /// the database's errors become ``ServerError``s.
    func writing<T>(
        account: Int64?, readAhead: Store.ReadAhead?, _ body: (any StoreTransaction) throws -> T
    ) throws -> T
    /// Reads the records a write of `account` will merge into before it
    /// queues for the write lock, or nil where a store reads them as cheaply
    /// inside the write (PostgreSQL: writers do not wait on one lock, and
    /// its ``StoreTransaction/prefetch(account:keys:)`` reads them in one statement).
    func readAhead(account: Int64, keys: [(collection: RecordCollection, key: String)]) throws -> Store.ReadAhead?
    /// Runs `body` in a read transaction (one snapshot).
    func reading<T>(_ body: (any StoreTransaction) throws -> T) throws -> T
    /// What changes when any process commits to the store and that this
    /// process may not hear of otherwise (SQLite: the WAL index's change
    /// counter; PostgreSQL: nothing, every writer `NOTIFY`s). Compared,
    /// never interpreted; nil when it cannot be told (then nothing is
    /// answered from memory).
    func commitState() -> CommitState?
    /// Wakes the watches of `account` in every other brsyncd sharing the
    /// database (PostgreSQL: `NOTIFY`; SQLite: one process serves a file,
    /// nothing to do). Best effort: a watch not woken answers at its timeout.
    func notifyOtherProcesses(account: Int64)
    /// Starts hearing of other processes' changes, waking the store's
    /// watches (handed to the dialect when it opened) of what they changed:
    /// a serving brsyncd does; the administration commands do not.
    func startListening() throws
    /// Called after an account's key changed and its records were deleted:
    /// a dialect scrubs what the deletion left behind where it can.
    func scrubAfterEncrypting()
    func close()
}
