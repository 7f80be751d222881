-- A brsyncd SQLite store of schema version 17 (StoreFixtures.swift; never rewritten).
PRAGMA application_id = 1651667812;
PRAGMA user_version = 17;
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO meta VALUES('epoch','f1x7e0e90c0000a1');
CREATE TABLE accounts (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    next_seq INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL
, uid TEXT NOT NULL DEFAULT '', purged_through INTEGER NOT NULL DEFAULT 0, stamp_high INTEGER NOT NULL DEFAULT 0, encrypted INTEGER NOT NULL DEFAULT 0, key_id TEXT NOT NULL DEFAULT '', signing_key TEXT NOT NULL DEFAULT '', retired_keys TEXT NOT NULL DEFAULT '', encryption_reset INTEGER NOT NULL DEFAULT 0, epoch TEXT NOT NULL DEFAULT '', record_count INTEGER NOT NULL DEFAULT 0, byte_count INTEGER NOT NULL DEFAULT 0, max_records INTEGER NOT NULL DEFAULT 100000, max_bytes INTEGER NOT NULL DEFAULT 134217728, max_devices INTEGER NOT NULL DEFAULT 64, sealed_format INTEGER NOT NULL DEFAULT 1, sealed_format_since INTEGER);
INSERT INTO accounts VALUES(1,'alice',4,1790000000000,'0123456789abcdef',0,1790000000003,0,'','','',0,'f1x7e0e90c0000a1',3,502,100000,134217728,64,1,NULL);
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
    acknowledged_cursor INTEGER NOT NULL DEFAULT 0, protocol INTEGER NOT NULL DEFAULT 0,
    UNIQUE (account_id, name)
);
INSERT INTO devices VALUES(1,1,'laptop',X'894680b8271ffbeaadcd89a290d58de287131249531e11c6b13a7fb155d3b19f','laptop-1',0,1790000000000,1790000000010,4,3,0);
INSERT INTO devices VALUES(2,1,'phone',X'033903013bb126d81d78b7fbe96d5dcea44c3ec564c8c8079245d4a2d139d17d',NULL,0,1790000000000,NULL,0,0,0);
CREATE TABLE device_streams (
    account_id INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    client_device TEXT NOT NULL,
    last_seq INTEGER NOT NULL,
    last_digest TEXT NOT NULL,
    PRIMARY KEY (account_id, client_device)
) WITHOUT ROWID;
INSERT INTO device_streams VALUES(1,'laptop-1',4,'');
CREATE TABLE IF NOT EXISTS "records" (
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
, writer TEXT);
INSERT INTO records VALUES(1,'rules','*.zoom.us','{"browser":{"s":"000001a0c4506c01-00000000-laptop-1","v":"chrome"},"deleted":{"s":"000001a0c4506c01-00000000-laptop-1","v":false},"pattern":{"s":"000001a0c4506c01-00000000-laptop-1","v":"*.zoom.us"}}','{"laptop-1":1}',1,0,1790000000000,'laptop-1',0,NULL);
INSERT INTO records VALUES(1,'rules','github.com','{"deleted":{"s":"000001a0c4506c02-00000000-laptop-1","v":true},"pattern":{"s":"000001a0c4506c02-00000000-laptop-1","v":"github.com"}}','{"laptop-1":2}',2,1,1790000000001,'laptop-1',0,NULL);
INSERT INTO records VALUES(1,'settings','picker','{"deleted":{"s":"000001a0c4506c03-00000000-laptop-1","v":false},"value":{"s":"000001a0c4506c03-00000000-laptop-1","v":"always"}}','{"laptop-1":3}',3,0,1790000000002,'laptop-1',0,NULL);
CREATE TABLE enrollments (
    secret_hash BLOB PRIMARY KEY,
    device_id INTEGER NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
    expires_at INTEGER NOT NULL,
    used_at INTEGER,
    token_hash BLOB
) WITHOUT ROWID;
INSERT INTO enrollments VALUES(X'033903013bb126d81d78b7fbe96d5dcea44c3ec564c8c8079245d4a2d139d17d',2,4102444800000,NULL,NULL);
CREATE TABLE refusals (
    account_id INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    client_device TEXT NOT NULL,
    seq INTEGER NOT NULL,
    collection TEXT NOT NULL,
    key BLOB NOT NULL,
    reason BLOB NOT NULL,
    PRIMARY KEY (account_id, client_device, seq)
) WITHOUT ROWID;
INSERT INTO refusals VALUES(1,'laptop-1',4,'rules',X'626164006b6579',X'61206b657920686f6c6473204e554c');
CREATE UNIQUE INDEX records_by_key ON records (account_id, collection, key);
CREATE UNIQUE INDEX records_by_seq ON records (account_id, seq);
CREATE INDEX enrollments_by_device ON enrollments (device_id);
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
COMMIT;
