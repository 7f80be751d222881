import Cryptography
import Glibc
import Model
import Net
import Postgres
import SyncCore
import Synchronization
import SystemServices

/// The PostgreSQL store, for deployments of several `brsyncd` processes
/// behind a load balancer (docs/server.md, "Several `brsyncd` on PostgreSQL"). Nothing in it
/// assumes one process: a push locks its account's row (pushes of an account
/// are serialised, so change numbers commit in order and a pull never skips
/// one that commits later), the epoch lives in the database, and the
/// tombstone purge runs in one process at a time (an advisory lock). The
/// decisions and the merge are ``SyncEngine``'s, as for SQLite.
///
/// SQL is kept to what PostgreSQL and CockroachDB both accept (no
/// PostgreSQL-only types or functions beyond advisory locks, which the purge
/// does without on CockroachDB: see docs/server.md).
public final class PostgresStore: StoreDialect {
    public let configuration: PostgresConfiguration
    let pool: PostgresPool
    public let currentMillis: @Sendable () -> Int64
    /// The epoch as last read from the database (refreshed by every sync request).
    public let epochCache: EpochCache
    public let bookkeeping = Bookkeeping()
    public let timelineGate = TimelineGate()
    public let tokenCache = TokenCache()
    public let watches = WatchHub()
    /// Set at ``close()``: the listening thread ends.
    private let closing = Atomic<Bool>(false)
    /// Whether the listening thread runs (it is started by a serving brsyncd only).
    private let listenerRunning = Atomic<Bool>(false)
    /// Whether the listening connection is up (for tests and logs).
    public let listening = Atomic<Bool>(false)
    /// The channel brsyncd processes tell each other on that an account changed (payload: its id).
    static let changesChannel = "brsync_changes"
    static let schemaVersion = 10
    /// The advisory lock keys: schema changes and the tombstone purge.
    static let migrationLock: Int64 = 0x6272_7364_0001
    static let purgeLock: Int64 = 0x6272_7364_0002

    /// Connects and creates or upgrades the schema. Every connection the
    /// store opens first checks that the database is the one that served
    /// last (``DatabaseIdentity``): one restored from a backup, promoted
    /// from a standby or copied starts a new epoch.
    /// - Throws: ``ServerError`` when the database cannot be reached or was
    ///   made by a newer brsyncd.
    public init(
        _ configuration: PostgresConfiguration, connections: Int = 8,
        clock: @escaping @Sendable () -> Int64 = Clock.wallMillis
    ) throws {
        self.configuration = configuration
        currentMillis = clock
        do {
            let first = try PostgresConnection(configuration)
            let epoch = try first.transaction {
                try first.run("SELECT pg_advisory_xact_lock($1)", [.integer(Self.migrationLock)])
                return try Self.migrate(first)
            }
            let shared = EpochCache(epoch)
            epochCache = shared
            pool = PostgresPool(configuration, size: connections) { connection in
                if let fresh = try DatabaseIdentity.check(connection) { shared.set(fresh) }
            }
        } catch let error as PostgresError {
            throw ServerError.storeUnusable("\(error)")
        }
        // The first borrowed connection checks the identity: a restored
        // database is noticed before the first request.
        _ = try withConnection { _ in }
    }

    /// Starts listening for the other processes' changes (a serving
    /// brsyncd; the administration commands do not).
    public func startListening() {
        guard !listenerRunning.exchange(true, ordering: .relaxed) else { return }
        do {
            try startThread { [self] in
                listen()
                listenerRunning.store(false, ordering: .relaxed)
            }
        } catch {
            listenerRunning.store(false, ordering: .relaxed)
        }
    }

    /// Listens for other processes' changes on a connection of its own (a
    /// session: `LISTEN` does not work through a pooler in transaction
    /// mode) and wakes this process's watches of the account named. Lost,
    /// it connects again within a second and wakes every watch, since a
    /// notification may have been missed meanwhile.
    private func listen() {
        var missed = false
        while !closing.load(ordering: .relaxed) {
            do {
                let connection = try PostgresConnection(
                    configuration, applicationName: "brsyncd-listen", connectTimeoutSeconds: 2)
                try connection.execute("LISTEN \(Self.changesChannel)")
                listening.store(true, ordering: .relaxed)
                if missed { watches.changedAll() }
                while !closing.load(ordering: .relaxed) {
                    for payload in try connection.notifications(waitingMilliseconds: 500) {
                        if let account = Int64(payload) { watches.changed(account: account) }
                    }
                }
            } catch {
                listening.store(false, ordering: .relaxed)
                missed = true
                for _ in 0..<10 where !closing.load(ordering: .relaxed) { usleep(100_000) }
            }
        }
        listening.store(false, ordering: .relaxed)
    }

    /// `NOTIFY` after the commit, on its own: a failure (a database
    /// without it, such as CockroachDB) loses no write; the other
    /// processes' watches then answer at their timeout.
    /// Every writer `NOTIFY`s (``notifyOtherProcesses(account:)``): nothing to look at.
    public func commitState() -> CommitState? { .announced }

    public func notifyOtherProcesses(account: Int64) {
        _ = try? withConnection { connection in
            try connection.run("SELECT pg_notify($1, $2)", [.text(Self.changesChannel), .text(String(account))])
        }
    }

    static func migrate(_ connection: PostgresConnection) throws -> String {
        try connection.execute("CREATE TABLE IF NOT EXISTS brsync_meta (key text PRIMARY KEY, value text NOT NULL)")
        let stored: Int?? = try connection.queryFirst("SELECT value FROM brsync_meta WHERE key = 'schema_version'") {
            $0.int(0)
        }
        let version = (stored ?? nil) ?? 0
        if version > schemaVersion { throw ServerError.newerSchema(found: version, supported: schemaVersion) }
        if version < 1 {
            try connection.execute(
                """
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
            try connection.run(
                "INSERT INTO brsync_meta (key, value) VALUES ('epoch', $1)", [.text(Crypto.hex(Crypto.randomBytes(8)))])
        }
        if version < 2 {
            // End-to-end encryption: an encrypted account takes
            // sealed records only, and only from clients of protocol 2.
            try connection.execute(
                """
                ALTER TABLE accounts ADD COLUMN encrypted boolean NOT NULL DEFAULT false;
                ALTER TABLE accounts ADD COLUMN key_id text NOT NULL DEFAULT '';
                """)
        }
        if version < 3 {
            // Join codes are enrollment secrets (see SQLiteStore's version 9).
            try connection.execute(
                """
                CREATE TABLE enrollments (
                    secret_hash bytea PRIMARY KEY,
                    device_id bigint NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
                    expires_at bigint NOT NULL,
                    used_at bigint,
                    token_hash bytea
                );
                CREATE INDEX enrollments_by_device ON enrollments (device_id);
                """)
        }
        if version < 4 {
            // Signed writes (see SQLiteStore's version 10).
            try connection.execute(
                """
                ALTER TABLE accounts ADD COLUMN signing_key text NOT NULL DEFAULT '';
                ALTER TABLE accounts ADD COLUMN retired_keys text NOT NULL DEFAULT '';
                ALTER TABLE accounts ADD COLUMN encryption_reset boolean NOT NULL DEFAULT false;
                """)
        }
        if version < 5 {
            // Timelines per account (see SQLiteStore's version 11).
            try connection.execute("ALTER TABLE accounts ADD COLUMN epoch text NOT NULL DEFAULT ''")
        }
        if version < 6 {
            // Quotas (see SQLiteStore's version 12). Statement-level triggers
            // with transition tables: one update of the account per statement
            // (a push writes its records in batched statements), not per row.
            try connection.execute(
                """
                ALTER TABLE accounts ADD COLUMN record_count bigint NOT NULL DEFAULT 0,
                    ADD COLUMN byte_count bigint NOT NULL DEFAULT 0,
                    ADD COLUMN max_records bigint NOT NULL DEFAULT \(Store.Limits.defaultRecords),
                    ADD COLUMN max_bytes bigint NOT NULL DEFAULT \(Store.Limits.defaultBytes),
                    ADD COLUMN max_devices bigint NOT NULL DEFAULT \(Store.Limits.defaultDevices);
                UPDATE accounts a SET record_count = s.records, byte_count = s.bytes
                FROM (SELECT account_id, count(*) AS records, sum(octet_length(fields) + octet_length(versions)) AS bytes
                      FROM records GROUP BY account_id) s
                WHERE s.account_id = a.id;
                CREATE FUNCTION brsync_count_records() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF TG_OP = 'INSERT' THEN
                        UPDATE accounts a SET record_count = a.record_count + d.records, byte_count = a.byte_count + d.bytes
                        FROM (SELECT account_id, count(*) AS records, sum(octet_length(fields) + octet_length(versions)) AS bytes
                              FROM new_rows GROUP BY account_id) d
                        WHERE a.id = d.account_id;
                    ELSIF TG_OP = 'DELETE' THEN
                        UPDATE accounts a SET record_count = a.record_count - d.records, byte_count = a.byte_count - d.bytes
                        FROM (SELECT account_id, count(*) AS records, sum(octet_length(fields) + octet_length(versions)) AS bytes
                              FROM old_rows GROUP BY account_id) d
                        WHERE a.id = d.account_id;
                    ELSE
                        UPDATE accounts a SET byte_count = a.byte_count + d.bytes
                        FROM (SELECT account_id, sum(bytes) AS bytes FROM (
                                  SELECT account_id, octet_length(fields) + octet_length(versions) AS bytes FROM new_rows
                                  UNION ALL
                                  SELECT account_id, -(octet_length(fields) + octet_length(versions)) FROM old_rows) changed
                              GROUP BY account_id) d
                        WHERE a.id = d.account_id;
                    END IF;
                    RETURN NULL;
                END $$;
                CREATE TRIGGER records_counted_insert AFTER INSERT ON records
                    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION brsync_count_records();
                CREATE TRIGGER records_counted_update AFTER UPDATE ON records
                    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION brsync_count_records();
                CREATE TRIGGER records_counted_delete AFTER DELETE ON records
                    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION brsync_count_records();
                """)
        }
        if version < 7 {
            // Each record's writer (see SQLiteStore's version 13).
            try connection.execute("ALTER TABLE records ADD COLUMN writer text")
        }
        if version < 8 {
            // The changes a push refused (see SQLiteStore's version 14).
            try connection.execute(
                """
                CREATE TABLE refusals (
                    account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
                    client_device text NOT NULL,
                    seq bigint NOT NULL,
                    collection text NOT NULL,
                    key bytea NOT NULL,
                    reason bytea NOT NULL,
                    PRIMARY KEY (account_id, client_device, seq)
                )
                """)
        }
        if version < 9 {
            // Ledgers outside the quotas (see SQLiteStore's version 15).
            try connection.execute(
                """
                CREATE OR REPLACE FUNCTION brsync_count_records() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF TG_OP = 'INSERT' THEN
                        UPDATE accounts a SET record_count = a.record_count + d.records, byte_count = a.byte_count + d.bytes
                        FROM (SELECT account_id, count(*) AS records, sum(octet_length(fields) + octet_length(versions)) AS bytes
                              FROM new_rows WHERE collection <> 'ledger' GROUP BY account_id) d
                        WHERE a.id = d.account_id;
                    ELSIF TG_OP = 'DELETE' THEN
                        UPDATE accounts a SET record_count = a.record_count - d.records, byte_count = a.byte_count - d.bytes
                        FROM (SELECT account_id, count(*) AS records, sum(octet_length(fields) + octet_length(versions)) AS bytes
                              FROM old_rows WHERE collection <> 'ledger' GROUP BY account_id) d
                        WHERE a.id = d.account_id;
                    ELSE
                        UPDATE accounts a SET byte_count = a.byte_count + d.bytes
                        FROM (SELECT account_id, sum(bytes) AS bytes FROM (
                                  SELECT account_id, octet_length(fields) + octet_length(versions) AS bytes FROM new_rows
                                  WHERE collection <> 'ledger'
                                  UNION ALL
                                  SELECT account_id, -(octet_length(fields) + octet_length(versions)) FROM old_rows
                                  WHERE collection <> 'ledger') changed
                              GROUP BY account_id) d
                        WHERE a.id = d.account_id;
                    END IF;
                    RETURN NULL;
                END $$;
                UPDATE accounts a SET
                    record_count = (SELECT count(*) FROM records r WHERE r.account_id = a.id AND r.collection <> 'ledger'),
                    byte_count = (SELECT COALESCE(sum(octet_length(fields) + octet_length(versions)), 0)
                                  FROM records r WHERE r.account_id = a.id AND r.collection <> 'ledger');
                """)
        }
        if version < 10 {
            // A record's account checked once a statement, not once a row:
            // the foreign key ran a lookup of the account for every row a
            // push wrote, a quarter of PostgreSQL's time for a push of new
            // records. The check locks each account it names (FOR KEY
            // SHARE, as the foreign key did) and refuses a record of an
            // account that does not exist with the foreign key's error;
            // deleting (or truncating) an account deletes its records, as
            // the cascade did, and an account with records keeps its id.
            // The tables are locked in a push's order (accounts, then
            // records) before the key is dropped, which locks both: a
            // push of another brsyncd still running waits, and neither waits
            // on the other.
            try connection.execute(
                """
                LOCK TABLE accounts, records IN ACCESS EXCLUSIVE MODE;
                DO $$
                DECLARE foreign_key text;
                BEGIN
                    FOR foreign_key IN SELECT conname FROM pg_constraint
                        WHERE conrelid = 'records'::regclass AND contype = 'f' AND confrelid = 'accounts'::regclass
                    LOOP
                        EXECUTE format('ALTER TABLE records DROP CONSTRAINT %I', foreign_key);
                    END LOOP;
                END $$;
                CREATE FUNCTION brsync_records_have_accounts() RETURNS trigger LANGUAGE plpgsql AS $$
                DECLARE named bigint; held bigint;
                BEGIN
                    SELECT count(DISTINCT account_id) INTO named FROM new_rows;
                    SELECT count(*) INTO held FROM (
                        SELECT a.id FROM accounts a WHERE a.id IN (SELECT account_id FROM new_rows) FOR KEY SHARE OF a
                    ) locked;
                    IF held < named THEN
                        RAISE EXCEPTION 'a record of an account that does not exist' USING ERRCODE = 'foreign_key_violation';
                    END IF;
                    RETURN NULL;
                END $$;
                CREATE TRIGGER records_have_accounts_insert AFTER INSERT ON records
                    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION brsync_records_have_accounts();
                CREATE TRIGGER records_have_accounts_update AFTER UPDATE ON records
                    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION brsync_records_have_accounts();
                CREATE FUNCTION brsync_delete_account_records() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    DELETE FROM records r USING old_rows o WHERE r.account_id = o.id;
                    RETURN NULL;
                END $$;
                CREATE TRIGGER accounts_delete_records AFTER DELETE ON accounts
                    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION brsync_delete_account_records();
                CREATE FUNCTION brsync_truncate_records() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    BEGIN
                        TRUNCATE records;
                    EXCEPTION WHEN object_in_use THEN
                        -- A TRUNCATE naming both tables holds records open.
                        DELETE FROM records;
                    END;
                    RETURN NULL;
                END $$;
                CREATE TRIGGER accounts_truncate_records AFTER TRUNCATE ON accounts
                    FOR EACH STATEMENT EXECUTE FUNCTION brsync_truncate_records();
                CREATE FUNCTION brsync_account_id_kept() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF NEW.id <> OLD.id AND EXISTS (SELECT 1 FROM records WHERE account_id = OLD.id) THEN
                        RAISE EXCEPTION 'an account with records keeps its id' USING ERRCODE = 'foreign_key_violation';
                    END IF;
                    RETURN NEW;
                END $$;
                CREATE TRIGGER accounts_id_kept BEFORE UPDATE OF id ON accounts
                    FOR EACH ROW EXECUTE FUNCTION brsync_account_id_kept();
                """)
        }
        if version < schemaVersion {
            try connection.run(
                """
                INSERT INTO brsync_meta (key, value) VALUES ('schema_version', $1)
                ON CONFLICT (key) DO UPDATE SET value = excluded.value
                """, [.text(String(schemaVersion))])
        }
        return try readEpoch(connection)
    }

    static func readEpoch(_ connection: PostgresConnection) throws -> String {
        guard
            let epoch = try connection.queryFirst(
                "SELECT value FROM brsync_meta WHERE key = 'epoch'", [], { $0.string(0) }) ?? nil
        else {
            throw ServerError.storeUnusable("the PostgreSQL store has no epoch (brsync_meta was changed by hand?)")
        }
        return epoch
    }

    public func close() {
        closing.store(true, ordering: .relaxed)
        // The listener ends within its half-second wait (a connection attempt: its timeout).
        for _ in 0..<200 where listenerRunning.load(ordering: .relaxed) { usleep(10_000) }
        pool.close()
    }

    func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        do {
            return try pool.withConnection(body)
        } catch let error as PostgresError {
            if error.isConnectionFailure {
                throw ServerError.unavailable("the PostgreSQL store cannot be reached: \(error)")
            }
            throw ServerError.storeUnusable("the PostgreSQL store: \(error)")
        }
    }

    public func writing<T>(_ body: (PostgresTransaction) throws -> T) throws -> T {
        try write { connection in try PostgresTransaction.run(connection, body) }
    }

    public func reading<T>(_ body: (PostgresTransaction) throws -> T) throws -> T {
        try withConnection { connection in try body(PostgresTransaction(connection: connection)) }
    }

    /// PostgreSQL keeps the deleted row versions until a vacuum reuses their
    /// space (Deploy/SECURITY.md says how to scrub them).
    public func scrubAfterEncrypting() {}

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
                if error.isConnectionFailure {
                    throw ServerError.unavailable("the PostgreSQL store cannot be reached: \(error)")
                }
                throw ServerError.storeUnusable("the PostgreSQL store: \(error)")
            }
        }
    }
}
