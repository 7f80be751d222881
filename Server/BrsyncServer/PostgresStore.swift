import Glibc
import Model
import Net
import Postgres
import Synchronization
import SyncCore

/// The PostgreSQL store, for deployments of several `brsyncd` processes
/// behind a load balancer (README "Scaling past one machine"). Nothing in it
/// assumes one process: a push locks its account's row (pushes of an account
/// are serialised, so change numbers commit in order and a pull never skips
/// one that commits later), the epoch lives in the database, and the
/// tombstone purge runs in one process at a time (an advisory lock). The
/// decisions and the merge are ``SyncEngine``'s, as for SQLite.
///
/// SQL is kept to what PostgreSQL and CockroachDB both accept (no
/// PostgreSQL-only types or functions beyond advisory locks, which the purge
/// does without on CockroachDB: see the README).
public final class PostgresStore: SyncStore {
    public let configuration: PostgresConfiguration
    let pool: PostgresPool
    public let currentMillis: @Sendable () -> Int64
    /// The epoch as last read from the database (refreshed by every sync request).
    private let cachedEpoch: SharedEpoch
    /// What this process last wrote of each device's acknowledged cursor and
    /// last-seen time (only to spare writes; the writes themselves only raise).
    private let bookkeeping = Mutex(ServerStore.Bookkeeping())
    static let schemaVersion = 2
    /// The advisory lock keys: schema changes and the tombstone purge.
    static let migrationLock: Int64 = 0x6272_7364_0001
    static let purgeLock: Int64 = 0x6272_7364_0002

    /// Connects and creates or upgrades the schema. Every connection the
    /// store opens first checks that the database is the one that served
    /// last (``DatabaseIdentity``): one restored from a backup, promoted
    /// from a standby or copied starts a new epoch.
    /// - Throws: ``ServerError`` when the database cannot be reached or was
    ///   made by a newer brsyncd.
    public init(_ configuration: PostgresConfiguration, connections: Int = 8,
                clock: @escaping @Sendable () -> Int64 = ServerStore.nowMillis) throws {
        self.configuration = configuration
        currentMillis = clock
        do {
            let first = try PostgresConnection(configuration)
            let epoch = try first.transaction {
                try first.run("SELECT pg_advisory_xact_lock($1)", [.integer(Self.migrationLock)])
                return try Self.migrate(first)
            }
            let shared = SharedEpoch(epoch)
            cachedEpoch = shared
            pool = PostgresPool(configuration, size: connections) { connection in
                if let fresh = try DatabaseIdentity.check(connection) { shared.withLock { $0 = fresh } }
            }
        } catch let error as PostgresError {
            throw ServerError.storeUnusable("\(error)")
        }
        // The first borrowed connection checks the identity: a restored
        // database is noticed before the first request.
        _ = try withConnection { _ in }
    }

    static func migrate(_ connection: PostgresConnection) throws -> String {
        try connection.execute("CREATE TABLE IF NOT EXISTS brsync_meta (key text PRIMARY KEY, value text NOT NULL)")
        let stored: Int?? = try connection.queryFirst("SELECT value FROM brsync_meta WHERE key = 'schema_version'") { $0.int(0) }
        let version = (stored ?? nil) ?? 0
        if version > schemaVersion { throw ServerError.newerSchema(found: version, supported: schemaVersion) }
        if version < 1 {
            try connection.execute("""
                CREATE TABLE accounts (
                    id bigserial PRIMARY KEY,
                    name text NOT NULL UNIQUE,
                    uid text NOT NULL,
                    next_seq bigint NOT NULL DEFAULT 1,
                    purged_through bigint NOT NULL DEFAULT 0,
                    stamp_high bigint NOT NULL DEFAULT 0,
                    created_at bigint NOT NULL
                );
                CREATE TABLE devices (
                    id bigserial PRIMARY KEY,
                    account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
                    name text NOT NULL,
                    token_hash bytea NOT NULL UNIQUE,
                    client_device text,
                    revoked boolean NOT NULL DEFAULT false,
                    created_at bigint NOT NULL,
                    last_seen bigint,
                    last_device_seq bigint NOT NULL DEFAULT 0,
                    acknowledged_cursor bigint NOT NULL DEFAULT 0,
                    UNIQUE (account_id, name)
                );
                CREATE TABLE device_streams (
                    account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
                    client_device text NOT NULL,
                    last_seq bigint NOT NULL,
                    last_digest text NOT NULL,
                    PRIMARY KEY (account_id, client_device)
                );
                CREATE TABLE records (
                    account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
                    collection text NOT NULL,
                    key text NOT NULL,
                    fields text NOT NULL,
                    versions text NOT NULL,
                    seq bigint NOT NULL,
                    deleted boolean NOT NULL,
                    updated_at bigint NOT NULL,
                    known_to text,
                    known_after bigint NOT NULL DEFAULT 0,
                    PRIMARY KEY (account_id, collection, key)
                );
                CREATE UNIQUE INDEX records_by_seq ON records (account_id, seq);
                """)
            try connection.run("INSERT INTO brsync_meta (key, value) VALUES ('epoch', $1)", [.text(Crypto.hex(Crypto.randomBytes(8)))])
        }
        if version < 2 {
            // End-to-end encryption: an encrypted account takes
            // sealed records only, and only from clients of protocol 2.
            try connection.execute("""
                ALTER TABLE accounts ADD COLUMN encrypted boolean NOT NULL DEFAULT false;
                ALTER TABLE accounts ADD COLUMN key_id text NOT NULL DEFAULT '';
                """)
        }
        if version < schemaVersion {
            try connection.run("""
                INSERT INTO brsync_meta (key, value) VALUES ('schema_version', $1)
                ON CONFLICT (key) DO UPDATE SET value = excluded.value
                """, [.text(String(schemaVersion))])
        }
        return try readEpoch(connection)
    }

    static func readEpoch(_ connection: PostgresConnection) throws -> String {
        guard let epoch = try connection.queryFirst("SELECT value FROM brsync_meta WHERE key = 'epoch'", [], { $0.string(0) }) ?? nil else {
            throw ServerError.storeUnusable("the PostgreSQL store has no epoch (brsync_meta was changed by hand?)")
        }
        return epoch
    }

    public var epoch: String { cachedEpoch.withLock { $0 } }

    /// The cached epoch, shared with the pool's check of new connections.
    final class SharedEpoch: Sendable {
        private let value: Mutex<String>
        init(_ epoch: String) { value = Mutex(epoch) }
        func withLock<T>(_ body: (inout String) -> T) -> T { value.withLock { body(&$0) } }
    }

    func refreshEpoch(_ epoch: String) { cachedEpoch.withLock { $0 = epoch } }

    public func close() { pool.close() }

    func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        do {
            return try pool.withConnection(body)
        } catch let error as PostgresError {
            if error.isConnectionFailure { throw ServerError.unavailable("the PostgreSQL store cannot be reached: \(error)") }
            throw ServerError.storeUnusable("the PostgreSQL store: \(error)")
        }
    }

    /// A write transaction, retried when PostgreSQL (or CockroachDB, which
    /// serialises everything) says it lost a race.
    func write<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        var attempt = 0
        while true {
            do {
                return try pool.withConnection { connection in try connection.transaction { try body(connection) } }
            } catch let error as PostgresError where error.isRetryable && attempt < 5 {
                attempt += 1
                usleep(UInt32(1000 << attempt))
            } catch let error as PostgresError {
                if error.isConnectionFailure { throw ServerError.unavailable("the PostgreSQL store cannot be reached: \(error)") }
                throw ServerError.storeUnusable("the PostgreSQL store: \(error)")
            }
        }
    }

    public func counts() throws -> (records: Int, devices: Int, accounts: Int) {
        try withConnection { connection in
            try connection.queryFirst("SELECT (SELECT count(*) FROM records), (SELECT count(*) FROM devices), (SELECT count(*) FROM accounts)") {
                ($0.int(0) ?? 0, $0.int(1) ?? 0, $0.int(2) ?? 0)
            } ?? (0, 0, 0)
        }
    }

    // MARK: - Sync

    public func push(_ request: PushRequest, from device: ServerStore.Device, maxClockOffsetMilliseconds: Int64) throws -> PushResponse {
        let now = currentMillis()
        let prepared = SyncEngine.PreparedPush(request)
        let (outcome, epoch) = try write { connection -> (SyncEngine.PushOutcome, String) in
            // The account's row lock comes first (in the engine); the epoch is
            // read under it, so a new epoch started by another process is seen.
            let outcome = try PostgresSyncTransaction.run(connection) { transaction in
                try SyncEngine.push(request, from: device, prepared: prepared, epoch: try Self.readEpochAfterLocking(device.accountID, connection),
                                    now: now, maxClockOffsetMilliseconds: maxClockOffsetMilliseconds, in: transaction)
            }
            return (outcome, try Self.readEpoch(connection))
        }
        cachedEpoch.withLock { $0 = epoch }
        switch outcome {
        case .gap(let expected, let digest, _):
            throw ServerError.gap(expected: expected, got: request.from, digest: digest)
        case .diverged(let acknowledged, let digest):
            throw ServerError.diverged(acknowledged: acknowledged, digest: digest)
        case .applied(let acknowledged, let digest, let applied, let lost, let rejected, let needed):
            return PushResponse(acknowledged: acknowledged, applied: applied, clock: clockStamp(), epoch: epoch, lost: lost,
                                acknowledgedDigest: digest, rejected: rejected, account: device.accountUID, needed: needed)
        }
    }

    /// Locks the account's row, then reads the epoch: pushes of the account
    /// queue on the lock, and each sees the epoch as it is when it holds it.
    static func readEpochAfterLocking(_ account: Int64, _ connection: PostgresConnection) throws -> String {
        _ = try connection.query("SELECT id FROM accounts WHERE id = $1 FOR UPDATE", [.integer(account)]) { $0.int64(0) }
        return try readEpoch(connection)
    }

    public func relay(_ request: RelayRequest, from device: ServerStore.Device, maxClockOffsetMilliseconds: Int64) throws
        -> (applied: Int, rejected: [RejectedChange], response: PushResponse) {
        let now = currentMillis()
        let (applied, rejected) = try write { connection in
            try PostgresSyncTransaction.run(connection) { transaction in
                try SyncEngine.relay(request, from: device, now: now, maxClockOffsetMilliseconds: maxClockOffsetMilliseconds, in: transaction)
            }
        }
        let response = PushResponse(acknowledged: 0, applied: applied, clock: clockStamp(), epoch: epoch, lost: [],
                                    rejected: rejected, account: device.accountUID)
        return (applied, rejected, response)
    }

    /// A pull in one round trip: one statement (one snapshot, even in READ
    /// COMMITTED) reads the device, the epoch, the replica's stream and the
    /// page; the engine decides on them as it does for SQLite.
    public func pullText(token: String, since cursor: Int64, limit: Int, clientDevice: ServerStore.PullingReplica?, clientEpoch: String?,
                         reconciling: Bool, clientProtocol: Int, clientKeyID: String?) throws -> [UInt8] {
        let hash = Tokens.hash(token)
        let rows = try withConnection { connection in
            try connection.query(
                """
                WITH d AS (
                    SELECT d.id, d.account_id, d.name, d.client_device, d.revoked, d.last_seen, d.last_device_seq, d.acknowledged_cursor,
                           a.uid, d.token_hash, a.next_seq, a.purged_through, a.encrypted, a.key_id
                    FROM devices d JOIN accounts a ON a.id = d.account_id WHERE d.token_hash = $1)
                SELECT d.*, (SELECT value FROM brsync_meta WHERE key = 'epoch'), s.last_seq, s.last_digest,
                       r.seq, r.collection, r.key, r.fields, r.versions, r.known_to, r.known_after
                FROM d
                LEFT JOIN device_streams s ON s.account_id = d.account_id AND s.client_device = $2
                LEFT JOIN LATERAL (SELECT seq, collection, key, fields, versions, known_to, known_after FROM records
                                   WHERE records.account_id = d.account_id AND seq > $3 ORDER BY seq LIMIT $4) r ON true
                ORDER BY r.seq
                """, [.bytes(hash), .text(clientDevice?.device ?? ""), .integer(cursor), .integer(Int64(limit + 1))]
            ) { row -> PrefetchedPull.Row in
                // Columns 0 to 13 are authenticate's.
                let device = Self.authenticatedDevice(row)
                var record: (row: ServerStore.PulledRow, knownTo: String?, knownAfter: Int64)?
                if let sequence = row.int64(17) {
                    guard let collection = row.string(18).flatMap(RecordCollection.init(rawValue:)) else {
                        throw ServerError.storeUnusable("a stored record has an unknown collection")
                    }
                    record = (row: ServerStore.PulledRow(sequence: sequence, collection: collection, key: row.string(19) ?? "",
                                                         fields: row.string(20) ?? "{}", versions: row.string(21) ?? "{}"),
                              knownTo: row.string(22), knownAfter: row.int64(23) ?? 0)
                }
                return PrefetchedPull.Row(device: device, tokenHash: row.bytes(9) ?? [], epoch: row.string(14) ?? "",
                                          stream: row.int64(15).map { (last: $0, digest: row.string(16) ?? "") }, record: record)
            }
        }
        // The lookup is by hash; compare again in constant time before trusting it.
        guard let first = rows.first, Crypto.constantTimeEqual(first.tokenHash, hash) else { throw ServerError.unauthorized("the token is not valid") }
        guard !first.device.revoked else { throw ServerError.revoked }
        try SyncEngine.checkProtocol(clientProtocol, keyID: clientKeyID, of: first.device)
        let prefetched = PrefetchedPull(clientDevice: clientDevice?.device ?? "", stream: first.stream, records: rows.compactMap(\.record))
        var page = try SyncEngine.pullPage(since: cursor, limit: limit, device: first.device, clientDevice: clientDevice, clientEpoch: clientEpoch,
                                           epoch: first.epoch, reconciling: reconciling, clientProtocol: clientProtocol, in: prefetched)
        try finishPull(&page, since: cursor, device: first.device, clientEpoch: clientEpoch)
        cachedEpoch.withLock { $0 = page.epoch }
        return ServerStore.pullJSON(page, device: first.device, clock: clockStamp())
    }

    /// What the pull's one statement read, answering the engine's reads.
    struct PrefetchedPull: SyncReadTransaction {
        struct Row {
            let device: ServerStore.Device
            let tokenHash: [UInt8]
            let epoch: String
            let stream: (last: Int64, digest: String)?
            let record: (row: ServerStore.PulledRow, knownTo: String?, knownAfter: Int64)?
        }

        let clientDevice: String
        let stream: (last: Int64, digest: String)?
        let records: [(row: ServerStore.PulledRow, knownTo: String?, knownAfter: Int64)]

        func stream(account: Int64, clientDevice: String) throws -> (last: Int64, digest: String)? {
            clientDevice == self.clientDevice ? stream : nil
        }

        func records(account: Int64, after cursor: Int64, limit: Int) throws -> [(row: ServerStore.PulledRow, knownTo: String?, knownAfter: Int64)] {
            Array(records.prefix(limit))
        }
    }

    /// The device's bookkeeping after a page; starts a new epoch on a rollback.
    private func finishPull(_ page: inout ServerStore.PulledPage, since cursor: Int64, device: ServerStore.Device, clientEpoch: String?) throws {
        if page.rollback {
            let seen = page.epoch
            page.epoch = try write { connection in
                // Another request, of this process or another, may have started it already.
                _ = try connection.query("SELECT value FROM brsync_meta WHERE key = 'epoch' FOR UPDATE") { $0.string(0) }
                let stored = try Self.readEpoch(connection)
                guard stored == seen else { return stored }
                return try PostgresSyncTransaction(connection: connection).startNewEpoch()
            }
            page.more = false
            return
        }
        if let clientEpoch, clientEpoch != page.epoch { return }
        if page.reset { return }
        let now = currentMillis()
        let write = ServerStore.Bookkeeping.shouldWrite(bookkeeping, device: device, cursor: cursor, now: now)
        if write {
            _ = try withConnection { connection in
                try connection.run("UPDATE devices SET acknowledged_cursor = GREATEST(acknowledged_cursor, $1), last_seen = $2 WHERE id = $3",
                                   [.integer(cursor), .integer(now), .integer(device.id)])
            }
        }
    }

    @discardableResult
    public func purgeTombstones(retentionMilliseconds: Int64) throws -> Int {
        let cutoff = currentMillis() - retentionMilliseconds
        return try write { connection in
            // One purge at a time, whichever process runs it: the next waits
            // for it (and then finds little left to do). Skipping instead
            // would make an explicit purge return having done nothing.
            _ = try connection.query("SELECT pg_advisory_xact_lock($1)", [.integer(Self.purgeLock)]) { _ in () }
            try connection.run(
                """
                UPDATE accounts SET purged_through = GREATEST(purged_through, (
                    SELECT COALESCE(MAX(seq), 0) FROM records WHERE records.account_id = accounts.id AND deleted AND updated_at <= $1
                    AND seq <= (SELECT COALESCE(MIN(acknowledged_cursor), 0) FROM devices
                                WHERE devices.account_id = accounts.id AND NOT revoked)))
                """, [.integer(cutoff)])
            return try connection.run(
                """
                DELETE FROM records WHERE deleted AND updated_at <= $1 AND seq <= (
                    SELECT COALESCE(MIN(acknowledged_cursor), 0) FROM devices
                    WHERE devices.account_id = records.account_id AND NOT revoked)
                """, [.integer(cutoff)])
        }
    }
}
