import Cryptography
import Postgres
import Storage

/// The server store's schema: one list of steps for both databases, each
/// with what it changes and why said once, SQLite's statements and
/// PostgreSQL's side by side. A step a database does not need (PostgreSQL
/// began at step 6's schema; only SQLite moved its records to a table with
/// row ids) has nothing for it.
///
/// A database's schema version counts the steps it has statements for,
/// applied in order: SQLite's `PRAGMA user_version` and PostgreSQL's
/// `brsync_meta.schema_version` keep the numbers every earlier brsyncd wrote
/// (SQLite 1–16, PostgreSQL 1–11), and one too new for this brsyncd is
/// refused before anything is changed. A new step goes at the end, with
/// statements for both databases unless one of them truly has nothing to
/// do; a step that has shipped is never edited (stores made by it exist),
/// and `StoreUpgradeTests` upgrades a store of every earlier version, kept
/// as a fixture, to the newest.
enum StoreSchema {
    /// One change of the schema, for each database that needs it.
    struct Step: Sendable {
        let sqlite: String?
        let postgres: String?
        /// Work PostgreSQL's statements cannot do, run after them in the
        /// same transaction.
        let postgresFill: (@Sendable (PostgresConnection) throws -> Void)?

        init(
            sqlite: String?, postgres: String?,
            postgresFill: (@Sendable (PostgresConnection) throws -> Void)? = nil
        ) {
            self.sqlite = sqlite
            self.postgres = postgres
            self.postgresFill = postgresFill
        }
    }

    static let steps: [Step] = [
        // Accounts, their devices with hashed tokens, and records with
        // their fields, stamps and version vectors, numbered per account.
        // PostgreSQL starts here with everything steps 2 to 6 add, and the
        // epoch in `brsync_meta` (SQLite's is set when the store opens).
        Step(
            sqlite: Database.metaTable + """
                CREATE TABLE accounts (
                    id INTEGER PRIMARY KEY,
                    name TEXT NOT NULL UNIQUE,
                    next_seq INTEGER NOT NULL DEFAULT 1,
                    created_at INTEGER NOT NULL
                );
                CREATE TABLE devices (
                    id INTEGER PRIMARY KEY,
                    account_id INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
                    name TEXT NOT NULL,
                    token_hash BLOB NOT NULL UNIQUE,
                    client_device TEXT,
                    revoked INTEGER NOT NULL DEFAULT 0,
                    created_at INTEGER NOT NULL,
                    last_seen INTEGER,
                    last_device_seq INTEGER NOT NULL DEFAULT 0,
                    acknowledged_cursor INTEGER NOT NULL DEFAULT 0,
                    UNIQUE (account_id, name)
                );
                CREATE TABLE records (
                    account_id INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
                    collection TEXT NOT NULL,
                    key TEXT NOT NULL,
                    fields TEXT NOT NULL,
                    versions TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    deleted INTEGER NOT NULL DEFAULT 0,
                    updated_at INTEGER NOT NULL,
                    PRIMARY KEY (account_id, collection, key)
                ) WITHOUT ROWID;
                CREATE UNIQUE INDEX records_by_seq ON records (account_id, seq);
                """,
            postgres: """
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
                """,
            postgresFill: { connection in
                try connection.run(
                    "INSERT INTO brsync_meta (key, value) VALUES ('epoch', $1)",
                    [.text(Crypto.hex(Crypto.randomBytes(8)))])
            }),
        // Counters tied to identities: each replica instance (client device
        // id) of an account has its own stream of change numbers with the
        // digest (now the chain, step 6) of the last one applied, whatever
        // token it uses; each account has an identity clients can check; each
        // record remembers which replica's push made it, when that replica
        // had seen the version before, so that replica's next pull does not
        // fetch it back.
        Step(
            sqlite: """
                ALTER TABLE accounts ADD COLUMN uid TEXT NOT NULL DEFAULT '';
                UPDATE accounts SET uid = lower(hex(randomblob(8)));
                CREATE TABLE device_streams (
                    account_id INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
                    client_device TEXT NOT NULL,
                    last_seq INTEGER NOT NULL,
                    last_digest TEXT NOT NULL,
                    PRIMARY KEY (account_id, client_device)
                ) WITHOUT ROWID;
                INSERT INTO device_streams (account_id, client_device, last_seq, last_digest)
                    SELECT account_id, client_device, MAX(last_device_seq), '' FROM devices
                    WHERE client_device IS NOT NULL GROUP BY account_id, client_device;
                ALTER TABLE records ADD COLUMN known_to TEXT;
                DELETE FROM meta WHERE key = 'hlc';
                """, postgres: nil),
        // The highest sequence of a tombstone purged from each account: a
        // replica whose cursor is below it missed a deletion the server no
        // longer has, and must reconcile from zero.
        Step(
            sqlite: """
                ALTER TABLE accounts ADD COLUMN purged_through INTEGER NOT NULL DEFAULT 0;
                """, postgres: nil),
        // The wall time of the newest stamp each account holds: an edit made
        // after seeing it must be stamped above it, so stamps are judged
        // against the later of this and the server's clock.
        Step(
            sqlite: """
                ALTER TABLE accounts ADD COLUMN stamp_high INTEGER NOT NULL DEFAULT 0;
                """, postgres: nil),
        // The sequence of the version a pushed change merged into: a pull
        // skips the result only for a puller whose cursor covers that version.
        Step(
            sqlite: """
                ALTER TABLE records ADD COLUMN known_after INTEGER NOT NULL DEFAULT 0;
                """, postgres: nil),
        // A stream's digest became the chain through its last change (one
        // change's digest could not tell two copies that made the same edit
        // after different ones). The old digests are forgotten: each stream's
        // next push is taken as it comes and records the chain.
        Step(
            sqlite: """
                UPDATE device_streams SET last_digest = '';
                """, postgres: nil),
        // End-to-end encryption: an encrypted account takes sealed
        // records only, and only from clients of protocol 2.
        Step(
            sqlite: """
                ALTER TABLE accounts ADD COLUMN encrypted INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE accounts ADD COLUMN key_id TEXT NOT NULL DEFAULT '';
                """,
            postgres: """
                ALTER TABLE accounts ADD COLUMN encrypted boolean NOT NULL DEFAULT false;
                ALTER TABLE accounts ADD COLUMN key_id text NOT NULL DEFAULT '';
                """),
        // Records move to a table with row ids, in the order they were
        // written, with their key in an index. The records table was keyed by
        // (account, collection, key) WITHOUT ROWID: a B-tree whose cells hold
        // the whole record, at most about a quarter of a 4 KiB page. A sealed
        // record of an end-to-end encrypted account (about 1 KB) spilled into
        // an overflow page of its own (10,000 rules took 47 MB instead of 12),
        // and its hidden key (an HMAC) put each new record on a random page,
        // so every push rewrote most of the table into the WAL. Now a new
        // record is appended, only the small key index takes random inserts,
        // and a row of up to about 4 KB stays on its page. (PostgreSQL's
        // heap keeps rows in the order written already.)
        Step(
            sqlite: """
                CREATE TABLE records_by_rowid (
                    account_id INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
                    collection TEXT NOT NULL,
                    key TEXT NOT NULL,
                    fields TEXT NOT NULL,
                    versions TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    deleted INTEGER NOT NULL DEFAULT 0,
                    updated_at INTEGER NOT NULL,
                    known_to TEXT,
                    known_after INTEGER NOT NULL DEFAULT 0
                );
                INSERT INTO records_by_rowid (account_id, collection, key, fields, versions, seq, deleted, updated_at, known_to, known_after)
                    SELECT account_id, collection, key, fields, versions, seq, deleted, updated_at, known_to, known_after
                    FROM records ORDER BY account_id, seq;
                DROP TABLE records;
                ALTER TABLE records_by_rowid RENAME TO records;
                CREATE UNIQUE INDEX records_by_key ON records (account_id, collection, key);
                CREATE UNIQUE INDEX records_by_seq ON records (account_id, seq);
                """, postgres: nil),
        // Join codes are enrollment secrets: a device added for a join code
        // has its secret's hash as its token until `brsync join` exchanges
        // it (once, before it expires) for a token the joining machine made.
        Step(
            sqlite: """
                CREATE TABLE enrollments (
                    secret_hash BLOB PRIMARY KEY,
                    device_id INTEGER NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
                    expires_at INTEGER NOT NULL,
                    used_at INTEGER,
                    token_hash BLOB
                ) WITHOUT ROWID;
                CREATE INDEX enrollments_by_device ON enrollments (device_id);
                """,
            postgres: """
                CREATE TABLE enrollments (
                    secret_hash bytea PRIMARY KEY,
                    device_id bigint NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
                    expires_at bigint NOT NULL,
                    used_at bigint,
                    token_hash bytea
                );
                CREATE INDEX enrollments_by_device ON enrollments (device_id);
                """),
        // Signed writes (protocol 3): an encrypted account's signing public
        // key, the key ids it was rotated away from, and the operator's reset.
        Step(
            sqlite: """
                ALTER TABLE accounts ADD COLUMN signing_key TEXT NOT NULL DEFAULT '';
                ALTER TABLE accounts ADD COLUMN retired_keys TEXT NOT NULL DEFAULT '';
                ALTER TABLE accounts ADD COLUMN encryption_reset INTEGER NOT NULL DEFAULT 0;
                """,
            postgres: """
                ALTER TABLE accounts ADD COLUMN signing_key text NOT NULL DEFAULT '';
                ALTER TABLE accounts ADD COLUMN retired_keys text NOT NULL DEFAULT '';
                ALTER TABLE accounts ADD COLUMN encryption_reset boolean NOT NULL DEFAULT false;
                """),
        // Timelines per account: a rollback seen in one account (or its
        // encryption reset) starts a new epoch for that account only.
        Step(
            sqlite: """
                ALTER TABLE accounts ADD COLUMN epoch TEXT NOT NULL DEFAULT '';
                """,
            postgres: """
                ALTER TABLE accounts ADD COLUMN epoch text NOT NULL DEFAULT ''
                """),
        // Quotas: what each account holds, counted by triggers whatever
        // writes its records, and what it may hold. PostgreSQL's triggers
        // are statement-level, with transition tables: one update of the
        // account per statement (a push writes its records in batched
        // statements), not per row.
        Step(
            sqlite: """
                ALTER TABLE accounts ADD COLUMN record_count INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE accounts ADD COLUMN byte_count INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE accounts ADD COLUMN max_records INTEGER NOT NULL DEFAULT \(Store.Limits.defaultRecords);
                ALTER TABLE accounts ADD COLUMN max_bytes INTEGER NOT NULL DEFAULT \(Store.Limits.defaultBytes);
                ALTER TABLE accounts ADD COLUMN max_devices INTEGER NOT NULL DEFAULT \(Store.Limits.defaultDevices);
                UPDATE accounts SET
                    record_count = (SELECT COUNT(*) FROM records WHERE account_id = accounts.id),
                    byte_count = (SELECT COALESCE(SUM(LENGTH(CAST(fields AS BLOB)) + LENGTH(CAST(versions AS BLOB))), 0)
                                  FROM records WHERE account_id = accounts.id);
                CREATE TRIGGER records_counted_insert AFTER INSERT ON records BEGIN
                    UPDATE accounts SET record_count = record_count + 1,
                        byte_count = byte_count + LENGTH(CAST(NEW.fields AS BLOB)) + LENGTH(CAST(NEW.versions AS BLOB))
                    WHERE id = NEW.account_id;
                END;
                CREATE TRIGGER records_counted_update AFTER UPDATE OF fields, versions ON records BEGIN
                    UPDATE accounts SET byte_count = byte_count
                        - LENGTH(CAST(OLD.fields AS BLOB)) - LENGTH(CAST(OLD.versions AS BLOB))
                        + LENGTH(CAST(NEW.fields AS BLOB)) + LENGTH(CAST(NEW.versions AS BLOB))
                    WHERE id = NEW.account_id;
                END;
                CREATE TRIGGER records_counted_delete AFTER DELETE ON records BEGIN
                    UPDATE accounts SET record_count = record_count - 1,
                        byte_count = byte_count - LENGTH(CAST(OLD.fields AS BLOB)) - LENGTH(CAST(OLD.versions AS BLOB))
                    WHERE id = OLD.account_id;
                END;
                """,
            postgres: """
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
                """),
        // The version vector of the write that brought a record's newest
        // stamp, when it differs from the record's (``Store/RecordVersion``):
        // a machine whose value lost to a write that had not seen it is told.
        Step(
            sqlite: """
                ALTER TABLE records ADD COLUMN writer TEXT;
                """,
            postgres: """
                ALTER TABLE records ADD COLUMN writer text
                """),
        // The changes a push refused, per replica stream: every answer to a
        // push covering them names them again, a retry after a lost answer
        // included, so a client always learns which of its changes were
        // never applied (a device's ledger counts only applied ones). The
        // key and reason are kept as bytes: a refused key may hold any
        // character, NUL included (that is why it was refused).
        Step(
            sqlite: """
                CREATE TABLE refusals (
                    account_id INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
                    client_device TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    collection TEXT NOT NULL,
                    key BLOB NOT NULL,
                    reason BLOB NOT NULL,
                    PRIMARY KEY (account_id, client_device, seq)
                ) WITHOUT ROWID;
                """,
            postgres: """
                CREATE TABLE refusals (
                    account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
                    client_device text NOT NULL,
                    seq bigint NOT NULL,
                    collection text NOT NULL,
                    key bytea NOT NULL,
                    reason bytea NOT NULL,
                    PRIMARY KEY (account_id, client_device, seq)
                )
                """),
        // Devices' ledgers sit outside the account's record and byte quotas
        // (a full account still takes the ledger of what it took); they are
        // bounded by their keys instead: 289 a device id that pushed, and at
        // most ``Store/maxStreamsPerAccount`` ids.
        Step(
            sqlite: """
                DROP TRIGGER records_counted_insert;
                DROP TRIGGER records_counted_update;
                DROP TRIGGER records_counted_delete;
                CREATE TRIGGER records_counted_insert AFTER INSERT ON records WHEN NEW.collection <> 'ledger' BEGIN
                    UPDATE accounts SET record_count = record_count + 1,
                        byte_count = byte_count + LENGTH(CAST(NEW.fields AS BLOB)) + LENGTH(CAST(NEW.versions AS BLOB))
                    WHERE id = NEW.account_id;
                END;
                CREATE TRIGGER records_counted_update AFTER UPDATE OF fields, versions ON records
                WHEN NEW.collection <> 'ledger' BEGIN
                    UPDATE accounts SET byte_count = byte_count
                        - LENGTH(CAST(OLD.fields AS BLOB)) - LENGTH(CAST(OLD.versions AS BLOB))
                        + LENGTH(CAST(NEW.fields AS BLOB)) + LENGTH(CAST(NEW.versions AS BLOB))
                    WHERE id = NEW.account_id;
                END;
                CREATE TRIGGER records_counted_delete AFTER DELETE ON records WHEN OLD.collection <> 'ledger' BEGIN
                    UPDATE accounts SET record_count = record_count - 1,
                        byte_count = byte_count - LENGTH(CAST(OLD.fields AS BLOB)) - LENGTH(CAST(OLD.versions AS BLOB))
                    WHERE id = OLD.account_id;
                END;
                UPDATE accounts SET
                    record_count = (SELECT COUNT(*) FROM records WHERE account_id = accounts.id AND collection <> 'ledger'),
                    byte_count = (SELECT COALESCE(SUM(LENGTH(CAST(fields AS BLOB)) + LENGTH(CAST(versions AS BLOB))), 0)
                                  FROM records WHERE account_id = accounts.id AND collection <> 'ledger');
                """,
            postgres: """
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
                """),
        // A record's account checked once a statement, not once a row:
        // PostgreSQL's foreign key ran a lookup of the account for every
        // row a push wrote, a quarter of its time for a push of new
        // records. The check locks each account it names (FOR KEY SHARE,
        // as the foreign key did) and refuses a record of an account that
        // does not exist with the foreign key's error; deleting (or
        // truncating) an account deletes its records, as the cascade did,
        // and an account with records keeps its id. The tables are locked
        // in a push's order (accounts, then records) before the key is
        // dropped, which locks both: a push of another brsyncd still running
        // waits, and neither waits on the other. (SQLite's foreign key costs
        // no such lookup: its account row is in the page cache.)
        Step(
            sqlite: nil,
            postgres: """
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
                """),
        // Sealed format 2 (docs/sealed-format-v2.md): the protocol of each
        // device's latest request (0: none since this step), and the
        // encrypted account's mark, set once every device seen in the last
        // 30 days speaks protocol 6, with when it was set. A store restored
        // from before the mark is marked again by its next such request.
        Step(
            sqlite: """
                ALTER TABLE devices ADD COLUMN protocol INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE accounts ADD COLUMN sealed_format INTEGER NOT NULL DEFAULT 1;
                ALTER TABLE accounts ADD COLUMN sealed_format_since INTEGER;
                """,
            postgres: """
                ALTER TABLE devices ADD COLUMN protocol integer NOT NULL DEFAULT 0;
                ALTER TABLE accounts ADD COLUMN sealed_format integer NOT NULL DEFAULT 1,
                    ADD COLUMN sealed_format_since bigint;
                """),
        // In an encrypted account not yet marked, only a key holder's signed
        // request raises a device's protocol (docs/protocol.md): what its
        // devices said before that rule, or unsigned while the account was
        // readable, counts no more than protocol 5 (each key holder's next
        // signed pull says 6 again).
        Step(
            sqlite: """
                UPDATE devices SET protocol = MIN(protocol, 5)
                WHERE account_id IN (SELECT id FROM accounts WHERE encrypted = 1 AND sealed_format < 2);
                """,
            postgres: """
                UPDATE devices SET protocol = LEAST(protocol, 5)
                WHERE account_id IN (SELECT id FROM accounts WHERE encrypted AND sealed_format < 2);
                """),
        // A push's or relay's new records are counted by brsyncd, once a
        // transaction (``SQLiteTransaction/upsertRecord``): the trigger's
        // update of the account's row for each row inserted was ~8% of a
        // push of 10,000 new records. While a transaction counts them
        // itself, its account's `counted_by_writer` is 1 and the trigger
        // skips that account's inserts; the count is added and the mark
        // cleared before the transaction commits (a rollback clears it
        // too). Any other insert (an operator's, a migration's) is counted
        // by the trigger as before. PostgreSQL counts once a statement.
        Step(
            sqlite: """
                ALTER TABLE accounts ADD COLUMN counted_by_writer INTEGER NOT NULL DEFAULT 0;
                DROP TRIGGER records_counted_insert;
                CREATE TRIGGER records_counted_insert AFTER INSERT ON records
                WHEN NEW.collection <> 'ledger' AND (SELECT counted_by_writer FROM accounts WHERE id = NEW.account_id) = 0
                BEGIN
                    UPDATE accounts SET record_count = record_count + 1,
                        byte_count = byte_count + LENGTH(CAST(NEW.fields AS BLOB)) + LENGTH(CAST(NEW.versions AS BLOB))
                    WHERE id = NEW.account_id;
                END;
                """,
            postgres: nil),
    ]

    /// What an insert of a record row adds to become an upsert, in both
    /// dialects (the same SQL): a row of the same account, collection and
    /// key takes every column but those.
    static let recordUpsert = """

        ON CONFLICT (account_id, collection, key) DO UPDATE SET
            fields = excluded.fields, versions = excluded.versions, seq = excluded.seq,
            deleted = excluded.deleted, updated_at = excluded.updated_at, known_to = excluded.known_to,
            known_after = excluded.known_after, writer = excluded.writer
        """

    /// SQLite's migrations: the steps with SQLite statements, numbered from 1.
    static let sqlite = Migrator(
        steps.compactMap(\.sqlite).enumerated().map { Migrator.Migration(version: $0.offset + 1, sql: $0.element) })

    /// PostgreSQL's steps, numbered from 1 as `schema_version` counts them.
    static let postgres: [(version: Int, sql: String, fill: (@Sendable (PostgresConnection) throws -> Void)?)] =
        steps.compactMap { step in step.postgres.map { ($0, step.postgresFill) } }.enumerated().map {
            ($0.offset + 1, $0.element.0, $0.element.1)
        }

    /// The newest `schema_version` of a PostgreSQL store.
    static var postgresVersion: Int { postgres.count }
}
