import Postgres
import SyncCore

/// A PostgreSQL transaction's records: read ahead in batches, read one by
/// one, and written in batches when the transaction ends.
extension PostgresTransaction {
    /// Keys per read-ahead statement.
    static let prefetchChunk = 1000

    static func cacheKey(_ collection: RecordCollection, _ key: String) -> CacheKey {
        CacheKey(collection: collection, key: key)
    }

    /// By the key's bytes, as PostgreSQL compares it (``Store/RecordPlace``).
    typealias CacheKey = Store.RecordPlace

    /// Reads the records a push will merge into, up to 1,000 per statement:
    /// the keys go as two arrays, spread by `unnest` and joined to the
    /// primary key (one statement shape, a nested loop of index lookups
    /// whatever plan PostgreSQL caches for it).
    func prefetch(account: Int64, keys: [(collection: RecordCollection, key: String)]) throws {
        var named = Set<CacheKey>()
        let wanted = keys.filter {
            let place = Self.cacheKey($0.collection, $0.key)
            return cache[place] == nil && named.insert(place).inserted
        }
        guard wanted.count > 1 else { return }
        let sql = """
            SELECT r.collection, r.key, r.fields, r.versions, r.seq, r.writer
            FROM unnest($2::text[], $3::text[]) AS w (collection, key)
            JOIN records r ON r.account_id = $1 AND r.collection = w.collection AND r.key = w.key
            """
        var start = 0
        while start < wanted.count {
            let part = wanted[start..<min(start + Self.prefetchChunk, wanted.count)]
            start += Self.prefetchChunk
            for entry in part { cache[Self.cacheKey(entry.collection, entry.key)] = .some(nil) }
            let rows = try connection.query(
                sql,
                [
                    .integer(account), PostgresArray.texts(part.map(\.collection.rawValue)),
                    PostgresArray.texts(part.map(\.key)),
                ]
            ) { row in
                (
                    collection: row.string(0) ?? "", key: row.string(1) ?? "", fields: row.string(2) ?? "{}",
                    versions: row.string(3) ?? "{}",
                    sequence: row.int64(4) ?? 0, writer: row.string(5)
                )
            }
            for row in rows {
                guard let collection = RecordCollection(rawValue: row.collection) else { continue }
                cache[Self.cacheKey(collection, row.key)] = try StoredRecord.version(
                    fields: row.fields, versions: row.versions, sequence: row.sequence,
                    writer: row.writer)
            }
        }
    }

    func record(account: Int64, collection: RecordCollection, key: String) throws -> Store.RecordVersion? {
        if let cached = cache[Self.cacheKey(collection, key)] { return cached }
        let row = try connection.queryFirst(
            "SELECT fields, versions, seq, writer FROM records WHERE account_id = $1 AND collection = $2 AND key = $3",
            [.integer(account), .text(collection.rawValue), .text(key)]
        ) {
            (
                fields: $0.string(0) ?? "{}", versions: $0.string(1) ?? "{}", sequence: $0.int64(2) ?? 0,
                writer: $0.string(3)
            )
        }
        guard let row else { return nil }
        return try StoredRecord.version(
            fields: row.fields, versions: row.versions, sequence: row.sequence, writer: row.writer)
    }

    struct PendingRecord {
        let account: Int64
        let collection: RecordCollection
        let key: String
        let state: RecordState
        let writer: VersionVector?
        let fieldsText: String?
        let sequence: Int64
        let knownTo: String?
        let knownAfter: Int64
        let now: Int64
        /// Known to be absent from the table (``upsertRecord``): written by a
        /// plain `INSERT`, which costs PostgreSQL about half of an `INSERT …
        /// ON CONFLICT` (no speculative insertion).
        let isNew: Bool
    }

    func upsertRecord(
        account: Int64, collection: RecordCollection, key: String, state: RecordState, writer: VersionVector?,
        fieldsText: String?, sequence: Int64, knownTo: String?, knownAfter: Int64, now: Int64, isNew: Bool
    ) throws {
        let cacheKey = Self.cacheKey(collection, key)
        if pending[cacheKey] == nil { pendingOrder.append(cacheKey) }
        // Absent when read, and not written since (a record written twice
        // before a flush is still new): the account's row lock keeps every
        // other writer of its records out.
        let isNew = pending[cacheKey]?.isNew ?? isNew
        pending[cacheKey] = PendingRecord(
            account: account, collection: collection, key: key, state: state, writer: writer, fieldsText: fieldsText,
            sequence: sequence, knownTo: knownTo, knownAfter: knownAfter, now: now, isNew: isNew)
        cache[cacheKey] = Store.RecordVersion(state: state, sequence: sequence, writer: writer)
    }

    /// Rows per write statement.
    static let writeChunk = 500

    /// Writes the pending records: one statement per 500, their columns sent
    /// as arrays and spread by `unnest` (one statement shape for any count).
    /// Records read ahead as absent go in by a plain `INSERT`; the rest by
    /// `INSERT … ON CONFLICT DO UPDATE`.
    func flush() throws {
        let rows = pendingOrder.compactMap { pending[$0] }
        pending.removeAll()
        pendingOrder.removeAll()
        for (isNew, statement) in [(true, Self.insertStatement), (false, Self.upsertStatement)] {
            let chosen = rows.filter { $0.isNew == isNew }
            var start = 0
            while start < chosen.count {
                let part = chosen[start..<min(start + Self.writeChunk, chosen.count)]
                start += Self.writeChunk
                try connection.run(statement, Self.columns(part))
            }
        }
    }

    private static let insertStatement = """
        INSERT INTO records (account_id, collection, key, fields, versions, seq, deleted, updated_at, known_to, known_after, writer)
        SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::boolean[],
                             $8::bigint[], $9::text[], $10::bigint[], $11::text[])
        """

    private static let upsertStatement = insertStatement + StoreSchema.recordUpsert

    /// The statements' eleven arrays.
    private static func columns(_ part: ArraySlice<PendingRecord>) -> [PostgresValue] {
        [
            PostgresArray.integers(part.map(\.account)),
            PostgresArray.texts(part.map(\.collection.rawValue)),
            PostgresArray.texts(part.map(\.key)),
            PostgresArray.texts(part.map { $0.fieldsText ?? RecordState.encodeFields($0.state.fields) }),
            PostgresArray.texts(part.map { RecordState.encodeVersions($0.state.versions) }),
            PostgresArray.integers(part.map(\.sequence)),
            PostgresArray.booleans(part.map(\.state.isDeleted)),
            PostgresArray.integers(part.map(\.now)),
            PostgresArray.texts(part.map(\.knownTo)),
            PostgresArray.integers(part.map(\.knownAfter)),
            PostgresArray.texts(part.map { $0.writer.map(RecordState.encodeVersions) }),
        ]
    }
}
