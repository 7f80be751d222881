import Net
import Postgres
import SyncCore

/// The PostgreSQL store's answers to the engine, inside a transaction.
final class PostgresSyncTransaction: SyncWriteTransaction, SyncReadTransaction {
    let connection: PostgresConnection
    /// Records read ahead (nil: known to be absent), kept current by
    /// ``upsertRecord``; the account's row lock keeps other writers out.
    private var cache: [String: (state: RecordState, sequence: Int64)?] = [:]
    /// Keys per read-ahead statement.
    static let prefetchChunk = 1000

    init(connection: PostgresConnection) {
        self.connection = connection
    }

    private static func cacheKey(_ collection: RecordCollection, _ key: String) -> String { collection.rawValue + "\u{0}" + key }

    /// Reads the records a push will merge into, up to 1,000 per statement:
    /// the keys go as two arrays, spread by `unnest` and joined to the
    /// primary key (one statement shape, a nested loop of index lookups
    /// whatever plan PostgreSQL caches for it).
    func prefetch(account: Int64, keys: [(collection: RecordCollection, key: String)]) throws {
        let wanted = keys.filter { cache[Self.cacheKey($0.collection, $0.key)] == nil }
        guard wanted.count > 1 else { return }
        let sql = """
            SELECT r.collection, r.key, r.fields, r.versions, r.seq
            FROM unnest($2::text[], $3::text[]) AS w (collection, key)
            JOIN records r ON r.account_id = $1 AND r.collection = w.collection AND r.key = w.key
            """
        var start = 0
        while start < wanted.count {
            let part = wanted[start..<min(start + Self.prefetchChunk, wanted.count)]
            start += Self.prefetchChunk
            for entry in part { cache[Self.cacheKey(entry.collection, entry.key)] = .some(nil) }
            let rows = try connection.query(sql, [.integer(account), .text(PostgresArray.texts(part.map(\.collection.rawValue))),
                                                  .text(PostgresArray.texts(part.map(\.key)))]) { row in
                (collection: row.string(0) ?? "", key: row.string(1) ?? "", fields: row.string(2) ?? "{}", versions: row.string(3) ?? "{}",
                 sequence: row.int64(4) ?? 0)
            }
            for row in rows {
                cache[row.collection + "\u{0}" + row.key] = (state: try StoredRecord.decode(fields: row.fields, versions: row.versions), sequence: row.sequence)
            }
        }
    }

    func deviceRevoked(_ device: Int64) throws -> Bool? {
        try connection.queryFirst("SELECT revoked FROM devices WHERE id = $1", [.integer(device)]) { $0.bool(0) ?? false }
    }

    func stream(account: Int64, clientDevice: String) throws -> (last: Int64, digest: String)? {
        try connection.queryFirst("SELECT last_seq, last_digest FROM device_streams WHERE account_id = $1 AND client_device = $2",
                                  [.integer(account), .text(clientDevice)]) { (last: $0.int64(0) ?? 0, digest: $0.string(1) ?? "") }
    }

    /// Locks the account's row until the transaction ends: the pushes of one
    /// account, from any process, are serialised here.
    func accountCounters(_ account: Int64) throws -> AccountCounters {
        try connection.queryFirst("SELECT next_seq, stamp_high, encrypted, key_id FROM accounts WHERE id = $1 FOR UPDATE", [.integer(account)]) {
            AccountCounters(nextSequence: $0.int64(0) ?? 1, stampHigh: $0.int64(1) ?? 0, encrypted: $0.bool(2) ?? false, keyID: $0.string(3) ?? "")
        } ?? AccountCounters()
    }

    func record(account: Int64, collection: RecordCollection, key: String) throws -> (state: RecordState, sequence: Int64)? {
        if let cached = cache[Self.cacheKey(collection, key)] { return cached }
        let row = try connection.queryFirst("SELECT fields, versions, seq FROM records WHERE account_id = $1 AND collection = $2 AND key = $3",
                                            [.integer(account), .text(collection.rawValue), .text(key)]) {
            (fields: $0.string(0) ?? "{}", versions: $0.string(1) ?? "{}", sequence: $0.int64(2) ?? 0)
        }
        guard let row else { return nil }
        return (state: try StoredRecord.decode(fields: row.fields, versions: row.versions), sequence: row.sequence)
    }

    /// Records written, kept until ``flush()`` sends them in one statement
    /// (the last write of a key wins; the order of first writes is kept).
    private var pending: [String: PendingRecord] = [:]
    private var pendingOrder: [String] = []

    struct PendingRecord {
        let account: Int64
        let collection: RecordCollection
        let key: String
        let state: RecordState
        let fieldsText: String?
        let sequence: Int64
        let knownTo: String?
        let knownAfter: Int64
        let now: Int64
    }

    /// Runs `body` with a transaction object on `connection` (already inside
    /// a database transaction) and writes what it left pending.
    static func run<T>(_ connection: PostgresConnection, _ body: (PostgresSyncTransaction) throws -> T) throws -> T {
        let transaction = PostgresSyncTransaction(connection: connection)
        let value = try body(transaction)
        try transaction.flush()
        return value
    }

    func upsertRecord(account: Int64, collection: RecordCollection, key: String, state: RecordState, fieldsText: String?, sequence: Int64,
                      knownTo: String?, knownAfter: Int64, now: Int64) throws {
        let cacheKey = Self.cacheKey(collection, key)
        if pending[cacheKey] == nil { pendingOrder.append(cacheKey) }
        pending[cacheKey] = PendingRecord(account: account, collection: collection, key: key, state: state, fieldsText: fieldsText, sequence: sequence,
                                          knownTo: knownTo, knownAfter: knownAfter, now: now)
        cache[cacheKey] = (state: state, sequence: sequence)
    }

    /// Rows per write statement.
    static let writeChunk = 500

    /// Writes the pending records: one statement per 500, their columns sent
    /// as arrays and spread by `unnest` (one statement shape for any count).
    func flush() throws {
        let rows = pendingOrder.compactMap { pending[$0] }
        pending.removeAll()
        pendingOrder.removeAll()
        var start = 0
        while start < rows.count {
            let part = rows[start..<min(start + Self.writeChunk, rows.count)]
            start += Self.writeChunk
            try connection.run(
                """
                INSERT INTO records (account_id, collection, key, fields, versions, seq, deleted, updated_at, known_to, known_after)
                SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::boolean[],
                                     $8::bigint[], $9::text[], $10::bigint[])
                ON CONFLICT (account_id, collection, key) DO UPDATE SET
                    fields = excluded.fields, versions = excluded.versions, seq = excluded.seq,
                    deleted = excluded.deleted, updated_at = excluded.updated_at, known_to = excluded.known_to,
                    known_after = excluded.known_after
                """,
                [.text(PostgresArray.integers(part.map(\.account))),
                 .text(PostgresArray.texts(part.map(\.collection.rawValue))),
                 .text(PostgresArray.texts(part.map(\.key))),
                 .text(PostgresArray.texts(part.map { $0.fieldsText ?? RecordState.encodeFields($0.state.fields) })),
                 .text(PostgresArray.texts(part.map { RecordState.encodeVersions($0.state.versions) })),
                 .text(PostgresArray.integers(part.map(\.sequence))),
                 .text(PostgresArray.booleans(part.map(\.state.isDeleted))),
                 .text(PostgresArray.integers(part.map(\.now))),
                 .text(PostgresArray.texts(part.map(\.knownTo))),
                 .text(PostgresArray.integers(part.map(\.knownAfter)))])
        }
    }

    func setAccountCounters(_ account: Int64, nextSequence: Int64, stampAtLeast: Int64) throws {
        try connection.run("UPDATE accounts SET next_seq = $1, stamp_high = GREATEST(stamp_high, $2) WHERE id = $3",
                           [.integer(nextSequence), .integer(stampAtLeast), .integer(account)])
    }

    func setStream(account: Int64, clientDevice: String, last: Int64, digest: String) throws {
        try connection.run(
            """
            INSERT INTO device_streams (account_id, client_device, last_seq, last_digest) VALUES ($1, $2, $3, $4)
            ON CONFLICT (account_id, client_device) DO UPDATE SET last_seq = excluded.last_seq, last_digest = excluded.last_digest
            """, [.integer(account), .text(clientDevice), .integer(last), .text(digest)])
    }

    func notePush(device: Int64, lastDeviceSequence: Int64, clientDevice: String, now: Int64) throws {
        try connection.run("UPDATE devices SET last_device_seq = $1, client_device = $2, last_seen = $3 WHERE id = $4",
                           [.integer(lastDeviceSequence), .text(clientDevice), .integer(now), .integer(device)])
    }

    func startNewEpoch() throws -> String {
        let fresh = Crypto.hex(Crypto.randomBytes(8))
        try connection.run("UPDATE brsync_meta SET value = $1 WHERE key = 'epoch'", [.text(fresh)])
        try connection.run("UPDATE devices SET acknowledged_cursor = 0")
        return fresh
    }

    func records(account: Int64, after cursor: Int64, limit: Int) throws -> [(row: ServerStore.PulledRow, knownTo: String?, knownAfter: Int64)] {
        try connection.query(
            "SELECT seq, collection, key, fields, versions, known_to, known_after FROM records WHERE account_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
            [.integer(account), .integer(cursor), .integer(Int64(limit))]
        ) { row in
            guard let collection = row.string(1).flatMap(RecordCollection.init(rawValue:)) else {
                throw ServerError.storeUnusable("a stored record has an unknown collection")
            }
            return (row: ServerStore.PulledRow(sequence: row.int64(0) ?? 0, collection: collection, key: row.string(2) ?? "",
                                               fields: row.string(3) ?? "{}", versions: row.string(4) ?? "{}"),
                    knownTo: row.string(5), knownAfter: row.int64(6) ?? 0)
        }
    }
}
