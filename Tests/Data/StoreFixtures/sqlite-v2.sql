-- A brsyncd SQLite store of schema version 2 (StoreFixtures.swift; never rewritten).
PRAGMA application_id = 1651667812;
PRAGMA user_version = 2;
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
, uid TEXT NOT NULL DEFAULT '');
INSERT INTO accounts VALUES(1,'alice',4,1790000000000,'0123456789abcdef');
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
INSERT INTO devices VALUES(1,1,'laptop',X'894680b8271ffbeaadcd89a290d58de287131249531e11c6b13a7fb155d3b19f','laptop-1',0,1790000000000,1790000000010,4,3);
INSERT INTO devices VALUES(2,1,'phone',X'033903013bb126d81d78b7fbe96d5dcea44c3ec564c8c8079245d4a2d139d17d',NULL,0,1790000000000,NULL,0,0);
CREATE TABLE records (
    account_id INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    collection TEXT NOT NULL,
    key TEXT NOT NULL,
    fields TEXT NOT NULL,
    versions TEXT NOT NULL,
    seq INTEGER NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL, known_to TEXT,
    PRIMARY KEY (account_id, collection, key)
) WITHOUT ROWID;
INSERT INTO records VALUES(1,'rules','*.zoom.us','{"browser":{"s":"000001a0c4506c01-00000000-laptop-1","v":"chrome"},"deleted":{"s":"000001a0c4506c01-00000000-laptop-1","v":false},"pattern":{"s":"000001a0c4506c01-00000000-laptop-1","v":"*.zoom.us"}}','{"laptop-1":1}',1,0,1790000000000,'laptop-1');
INSERT INTO records VALUES(1,'rules','github.com','{"deleted":{"s":"000001a0c4506c02-00000000-laptop-1","v":true},"pattern":{"s":"000001a0c4506c02-00000000-laptop-1","v":"github.com"}}','{"laptop-1":2}',2,1,1790000000001,'laptop-1');
INSERT INTO records VALUES(1,'settings','picker','{"deleted":{"s":"000001a0c4506c03-00000000-laptop-1","v":false},"value":{"s":"000001a0c4506c03-00000000-laptop-1","v":"always"}}','{"laptop-1":3}',3,0,1790000000002,'laptop-1');
CREATE TABLE device_streams (
    account_id INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    client_device TEXT NOT NULL,
    last_seq INTEGER NOT NULL,
    last_digest TEXT NOT NULL,
    PRIMARY KEY (account_id, client_device)
) WITHOUT ROWID;
INSERT INTO device_streams VALUES(1,'laptop-1',4,'');
CREATE UNIQUE INDEX records_by_seq ON records (account_id, seq);
COMMIT;
