import Postgres
import Storage

/// `brsyncd migrate`: copies an SQLite store into an empty PostgreSQL store,
/// everything a client's place depends on kept as it was (account ids,
/// identities and end-to-end encryption (key, signing key, retired keys), device token
/// hashes, change numbers, the replicas' streams and the changes refused
/// in them, the purge point, the
/// newest stamps and the epoch), so clients go on from
/// their cursors without a full re-sync. The old server must be stopped first:
/// what it accepts after the copy is not in the copy.
public enum StoreMigration {
    public struct Counts: Sendable, Equatable, CustomStringConvertible {
        public var accounts = 0
        public var devices = 0
        public var streams = 0
        public var records = 0
        public var enrollments = 0
        public var description: String {
            "\(accounts) account(s), \(devices) device(s), \(streams) replica stream(s), \(records) record(s), \(enrollments) join code(s)"
        }
    }

    /// Copies `source` (an SQLite store) into `target` (a PostgreSQL store)
    /// in one transaction and checks the counts.
    /// - Throws: ``ServerError/badRequest(_:)`` for stores of other kinds;
    ///   ``ServerError/conflict(_:)`` when the target holds accounts
    ///   already (nothing is written); ``ServerError/storeUnusable(_:)`` when
    ///   the copy's counts differ from the source's (nothing is kept).
    @discardableResult
    public static func copy(from source: SyncStore, to target: SyncStore) throws -> Counts {
        guard let sqlite = source.sqlite, let postgres = target.postgres else {
            throw ServerError.badRequest("migrate copies an SQLite store into a PostgreSQL store")
        }
        // One read transaction: a consistent snapshot of the source.
        let snapshot = try sqlite.withDatabase { database in
            try database.transaction(.deferred) { try Snapshot(database) }
        }
        let copied = try postgres.write { connection -> Counts in
            _ = try connection.run("LOCK TABLE accounts IN EXCLUSIVE MODE")
            let existing = try connection.queryFirst("SELECT count(*) FROM accounts") { $0.int(0) ?? 0 } ?? 0
            guard existing == 0 else {
                throw ServerError.conflict(
                    "the PostgreSQL store holds \(existing) account(s) already; migrate copies into an empty store")
            }
            try insert(snapshot, with: connection)
            // New accounts and devices are numbered after the copied ones.
            try connection.execute(
                """
                SELECT setval(pg_get_serial_sequence('accounts', 'id'), COALESCE((SELECT MAX(id) FROM accounts), 0) + 1, false);
                SELECT setval(pg_get_serial_sequence('devices', 'id'), COALESCE((SELECT MAX(id) FROM devices), 0) + 1, false);
                """)
            try connection.run("UPDATE brsync_meta SET value = $1 WHERE key = 'epoch'", [.text(snapshot.epoch)])
            let (counts, refusals) = try copiedCounts(with: connection)
            guard counts == snapshot.counts, refusals == snapshot.refusals.count else {
                throw ServerError.storeUnusable(
                    "the copy holds \(counts) and \(refusals) refused change(s), the SQLite store \(snapshot.counts) "
                        + "and \(snapshot.refusals.count); nothing was kept")
            }
            return counts
        }
        target.epochCache.set(snapshot.epoch)
        return copied
    }

    /// The snapshot's rows, written into the target's tables.
    private static func insert(_ snapshot: Snapshot, with connection: PostgresConnection) throws {
        for row in snapshot.accounts {
            try connection.run(
                """
                INSERT INTO accounts (id, name, uid, next_seq, purged_through, stamp_high, created_at, encrypted, key_id,
                                      signing_key, retired_keys, encryption_reset, epoch,
                                      max_records, max_bytes, max_devices)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
                """, row)
        }
        for row in snapshot.devices {
            try connection.run(
                """
                INSERT INTO devices (id, account_id, name, token_hash, client_device, revoked, created_at, last_seen,
                                     last_device_seq, acknowledged_cursor)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
                """, row)
        }
        for row in snapshot.streams {
            try connection.run(
                "INSERT INTO device_streams (account_id, client_device, last_seq, last_digest) VALUES ($1, $2, $3, $4)",
                row)
        }
        for row in snapshot.refusals {
            try connection.run(
                "INSERT INTO refusals (account_id, client_device, seq, collection, key, reason) VALUES ($1, $2, $3, $4, $5, $6)",
                row)
        }
        for row in snapshot.records {
            try connection.run(
                """
                INSERT INTO records (account_id, collection, key, fields, versions, seq, deleted, updated_at, known_to, known_after, writer)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                """, row)
        }
        for row in snapshot.enrollments {
            try connection.run(
                "INSERT INTO enrollments (secret_hash, device_id, expires_at, used_at, token_hash) VALUES ($1, $2, $3, $4, $5)",
                row)
        }
    }

    /// What the target holds after the copy: the counts of its tables, and
    /// its refused changes.
    private static func copiedCounts(with connection: PostgresConnection) throws -> (Counts, refusals: Int) {
        let counts =
            try connection.queryFirst(
                """
                SELECT (SELECT count(*) FROM accounts), (SELECT count(*) FROM devices),
                       (SELECT count(*) FROM device_streams), (SELECT count(*) FROM records), (SELECT count(*) FROM enrollments)
                """
            ) {
                Counts(
                    accounts: $0.int(0) ?? -1, devices: $0.int(1) ?? -1, streams: $0.int(2) ?? -1,
                    records: $0.int(3) ?? -1,
                    enrollments: $0.int(4) ?? -1)
            } ?? Counts()
        let refusals = try connection.queryFirst("SELECT count(*) FROM refusals") { $0.int(0) ?? -1 } ?? -1
        return (counts, refusals)
    }

    /// The source's rows, as parameters for the target's inserts.
    struct Snapshot {
        var accounts: [[PostgresValue]] = []
        var devices: [[PostgresValue]] = []
        var streams: [[PostgresValue]] = []
        var records: [[PostgresValue]] = []
        var refusals: [[PostgresValue]] = []
        var enrollments: [[PostgresValue]] = []
        var epoch = ""
        var counts: Counts {
            Counts(
                accounts: accounts.count, devices: devices.count, streams: streams.count, records: records.count,
                enrollments: enrollments.count)
        }

        init(_ database: Database) throws {
            func value(_ row: Row, _ column: Int) -> PostgresValue {
                switch row[column] {
                case .null: return .null
                case .integer(let value): return .integer(value)
                case .real(let value): return .text(String(value))
                case .text(let value): return .text(value)
                case .blob(let value): return .bytes(value)
                }
            }
            func flag(_ row: Row, _ column: Int) -> PostgresValue { .bool(row.int64(column).map { $0 != 0 } ?? false) }
            accounts = try database.query(
                """
                SELECT id, name, uid, next_seq, purged_through, stamp_high, created_at, encrypted, key_id,
                       signing_key, retired_keys, encryption_reset, epoch, max_records, max_bytes, max_devices FROM accounts ORDER BY id
                """
            ) { row in (0..<16).map { $0 == 7 || $0 == 11 ? flag(row, $0) : value(row, $0) } }
            devices = try database.query(
                """
                SELECT id, account_id, name, token_hash, client_device, revoked, created_at, last_seen, last_device_seq, acknowledged_cursor
                FROM devices ORDER BY id
                """
            ) { row in (0..<10).map { $0 == 5 ? flag(row, $0) : value(row, $0) } }
            streams = try database.query("SELECT account_id, client_device, last_seq, last_digest FROM device_streams")
            { row in
                (0..<4).map { value(row, $0) }
            }
            refusals = try database.query(
                "SELECT account_id, client_device, seq, collection, key, reason FROM refusals"
            ) { row in
                (0..<6).map { value(row, $0) }
            }
            records = try database.query(
                """
                SELECT account_id, collection, key, fields, versions, seq, deleted, updated_at, known_to, known_after, writer
                FROM records ORDER BY account_id, seq
                """
            ) { row in (0..<11).map { $0 == 6 ? flag(row, $0) : value(row, $0) } }
            enrollments = try database.query(
                "SELECT secret_hash, device_id, expires_at, used_at, token_hash FROM enrollments"
            ) { row in
                (0..<5).map { value(row, $0) }
            }
            epoch = try database.meta("epoch") ?? ""
        }
    }
}
