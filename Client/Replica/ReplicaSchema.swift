import Storage
import SyncCore

/// The replica's schema, by version. A record of any synced collection is one
/// row of `records`: its fields as per-field last-writer-wins registers (JSON
/// `{"field": {"v": value, "s": "HLC stamp"}}`) and its version vector. Rules
/// also carry `index_key` and `priority` columns derived from their fields, so
/// resolving reads only the rules filed under the URL host's suffixes.
enum ReplicaSchema {
    /// `PRAGMA application_id` of a replica: "brsy".
    static let applicationID: Int32 = 0x6272_7379

    static let migrator = Migrator([
        Migrator.Migration(
            version: 1,
            sql: Database.metaTable + """
                CREATE TABLE records (
                    collection TEXT NOT NULL CHECK (collection IN ('browsers', 'rules', 'settings')),
                    key TEXT NOT NULL,
                    fields TEXT NOT NULL,
                    versions TEXT NOT NULL,
                    deleted INTEGER NOT NULL DEFAULT 0,
                    index_key TEXT,
                    priority INTEGER,
                    PRIMARY KEY (collection, key)
                ) WITHOUT ROWID;
                CREATE INDEX records_by_index_key ON records (collection, index_key);

                -- What is true of this machine only; never synced, never in the change log.
                CREATE TABLE local_browsers (
                    id TEXT PRIMARY KEY,
                    exec TEXT,
                    desktop_entry TEXT,
                    installed INTEGER NOT NULL DEFAULT 0
                ) WITHOUT ROWID;

                -- Every write, in the transaction of the write. device_seq numbers the
                -- changes of each device; a push sends this device's unpushed range.
                CREATE TABLE changes (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    device TEXT NOT NULL,
                    device_seq INTEGER NOT NULL,
                    collection TEXT NOT NULL,
                    key TEXT NOT NULL,
                    fields TEXT NOT NULL,
                    versions TEXT NOT NULL,
                    kind TEXT NOT NULL DEFAULT 'local' CHECK (kind IN ('local', 'remote', 'conflict')),
                    recorded_at INTEGER NOT NULL,
                    UNIQUE (device, device_seq)
                );
                """),
        Migrator.Migration(
            version: 2,
            sql: """
                -- Values that lost a merge of concurrent edits (`brsync log --conflicts`;
                -- `brsync restore ID` writes one back as a new edit).
                CREATE TABLE conflicts (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    collection TEXT NOT NULL,
                    key TEXT NOT NULL,
                    field TEXT NOT NULL,
                    lost_value TEXT NOT NULL,
                    lost_stamp TEXT NOT NULL,
                    winner_value TEXT NOT NULL,
                    winner_stamp TEXT NOT NULL,
                    recorded_at INTEGER NOT NULL,
                    UNIQUE (collection, key, field, lost_stamp)
                );
                """),
        Migrator.Migration(
            version: 3,
            sql: """
                -- The keys a reconciling pull (from zero, after the server purged a
                -- tombstone this replica never pulled) has seen so far; at its end,
                -- records the server no longer has are dropped.
                CREATE TABLE reconcile_seen (
                    collection TEXT NOT NULL,
                    key TEXT NOT NULL,
                    PRIMARY KEY (collection, key)
                ) WITHOUT ROWID;
                """),
        Migration4.undelivered,
        Migration4.overwrote,
        Migration4.manualLaunchCommands,
        Migration4.chain,
        Migration4.conflictsRestored,
        Migration4.received,
        Migration4.recordsByRow,
        Migration4.removed,
        Migration4.manifests,
        Migration4.profileApprovals,
        Migration4.setAside,
        Migration4.precedence,
        Migration4.ruleColumns,
        Migration4.noPrecedenceIndex,
        Migration4.refusals,
        Migration4.pulledAside,
        Migration4.recordTags,
        Migration4.ledgerRecords,
        Migration4.ledgerBook,
        Migration4.noTagIndex,
        Migration4.ledgerChecked,
        Migration4.tagsByTag,
        Migration4.forgottenDevices,
        Migration4.writesFromElsewhere,
        Migration4.ledgerUnmet,
        Migration4.withdrawalsRead,
        Migration4.sealedFormats,
        Migration4.keptBoxes,
        Migration4.boxesInOrder,
        Migration4.boxWeights,
        Migration4.ownWritesByRecord,
    ])

    enum Migration4 {
        /// Whole records the server needs (it lacked them when an edit came)
        /// but has not taken yet: sent again at every sync, never dropped by a
        /// reconciliation, so an acknowledged edit is not lost.
        static let undelivered = Migrator.Migration(
            version: 4,
            sql: """
                CREATE TABLE undelivered (
                    collection TEXT NOT NULL,
                    key TEXT NOT NULL,
                    PRIMARY KEY (collection, key)
                ) WITHOUT ROWID;
                """)

        /// The highest stamp the record held when a local edit was made: a
        /// re-stamped edit (a clock that ran fast) must stay above what it
        /// overwrote, though the record no longer holds that value.
        static let overwrote = Migrator.Migration(
            version: 5,
            sql: """
                ALTER TABLE changes ADD COLUMN overwrote TEXT;
                """)

        /// Launch commands set by hand (`browsers add --exec`, a profile):
        /// `browsers detect` keeps them unless asked to replace them. A command
        /// with no desktop entry was not detected, so it was set by hand.
        static let manualLaunchCommands = Migrator.Migration(
            version: 6,
            sql: """
                ALTER TABLE local_browsers ADD COLUMN manual INTEGER NOT NULL DEFAULT 0;
                UPDATE local_browsers SET manual = 1 WHERE exec IS NOT NULL AND desktop_entry IS NULL;
                """)

        /// The chain digest through each local change (see
        /// `ChangeRecord.chained(after:)`), filled when first asked for and
        /// cleared when a change is re-stamped; the server knows a device's
        /// history by it.
        static let chain = Migrator.Migration(
            version: 7,
            sql: """
                ALTER TABLE changes ADD COLUMN chain TEXT;
                """)

        /// When a conflict's lost value was written back (`brsync restore`).
        static let conflictsRestored = Migrator.Migration(
            version: 8,
            sql: """
                ALTER TABLE conflicts ADD COLUMN restored_at INTEGER;
                """)

        /// What pulls changed here, for `brsync log` (the change log itself
        /// holds only this device's edits, numbered for push). `after_seq` is
        /// the newest local change when it came, so the two read as one
        /// history whatever the clock says. Only the newest entries are kept
        /// (see ``Replica/receivedLogLimit``).
        static let received = Migrator.Migration(
            version: 9,
            sql: """
                CREATE TABLE received (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    after_seq INTEGER NOT NULL,
                    device TEXT NOT NULL,
                    collection TEXT NOT NULL,
                    key TEXT NOT NULL,
                    fields TEXT NOT NULL,
                    recorded_at INTEGER NOT NULL
                );
                """)

        /// Records in a table with row ids (they were clustered by key):
        /// a pull of records whose keys come in no order (the normalised
        /// patterns of a person's rules) appends each new record instead of
        /// splitting and rewriting the key-ordered pages of whole records in
        /// every page's transaction; only the small key index is written
        /// out of order. 10,000 rules pulled wrote 112 MB and read 136 MB
        /// before, for a replica of about 12 MB.
        static let recordsByRow = Migrator.Migration(
            version: 10,
            sql: """
                CREATE TABLE records_by_row (
                    id INTEGER PRIMARY KEY,
                    collection TEXT NOT NULL CHECK (collection IN ('browsers', 'rules', 'settings')),
                    key TEXT NOT NULL,
                    fields TEXT NOT NULL,
                    versions TEXT NOT NULL,
                    deleted INTEGER NOT NULL DEFAULT 0,
                    index_key TEXT,
                    priority INTEGER,
                    UNIQUE (collection, key)
                );
                INSERT INTO records_by_row (collection, key, fields, versions, deleted, index_key, priority)
                    SELECT collection, key, fields, versions, deleted, index_key, priority FROM records ORDER BY collection, key;
                DROP TABLE records;
                ALTER TABLE records_by_row RENAME TO records;
                CREATE INDEX records_by_index_key ON records (collection, index_key);
                """)

        /// Records a reconcile dropped because the server no longer has them
        /// (deleted elsewhere, the deletion since purged): kept whole, so
        /// `brsync log --removed` names them and `brsync restore --removed ID`
        /// writes one back. Nothing leaves a replica unrecorded.
        static let removed = Migrator.Migration(
            version: 11,
            sql: """
                CREATE TABLE removed (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    collection TEXT NOT NULL,
                    key TEXT NOT NULL,
                    fields TEXT NOT NULL,
                    versions TEXT NOT NULL,
                    removed_at INTEGER NOT NULL,
                    restored_at INTEGER
                );
                """)

        /// Each local change's manifest (`RecordManifest`, its text at the
        /// change's stamp, as it is sealed): the record as it was just after
        /// the edit, fixed then, so a push sent again seals the same bytes. A
        /// re-stamp writes it again. NULL for changes logged before (their
        /// manifest is made from the change itself).
        /// And the stamps of the registers each local change replaced
        /// (`{"field": "stamp"}`): a value the server reports as overwritten by
        /// this device's push is a conflict only if this device had not seen
        /// it (`replacedStamps(ofChange:)`).
        /// A replica of an encrypted account sends every record it holds again
        /// at its next sync, each with a manifest: machines refuse records
        /// without one (Deploy/SECURITY.md), and records written before have none.
        static let manifests = Migrator.Migration(
            version: 12,
            sql: """
                ALTER TABLE changes ADD COLUMN manifest TEXT;
                ALTER TABLE changes ADD COLUMN replaced TEXT;
                INSERT OR IGNORE INTO meta (key, value) SELECT 'relay_all', '1' WHERE EXISTS (SELECT 1 FROM meta WHERE key = 'e2e_key');
                """)

        /// Records set aside rather than applied sit beside those a reconcile
        /// removed, with why (NULL for a removed one): records written with an
        /// account key the account had moved on from, found when a server
        /// restored from before the rotation is moved forward. Restorable the same way.
        static let setAside = Migrator.Migration(
            version: 14,
            sql: """
                ALTER TABLE removed ADD COLUMN why TEXT;
                """)

        /// Profiles whose arguments this machine's user approved
        /// (`brsync browsers approve`): synced data alone passes only what
        /// `ProfileArguments` lists. Device-local, never synced. Each approval
        /// holds the exact base and arguments, as SQLite's `json_extract`
        /// writes them, so a later change of the synced record needs
        /// approving again. Profiles made here before keep working here: those
        /// whose current base and arguments this machine wrote itself (its
        /// own edits in the change log).
        static let profileApprovals = Migrator.Migration(
            version: 13,
            sql: """
                CREATE TABLE IF NOT EXISTS profile_approvals (
                    id TEXT PRIMARY KEY,
                    base TEXT NOT NULL,
                    arguments TEXT NOT NULL
                ) WITHOUT ROWID;
                INSERT OR IGNORE INTO profile_approvals (id, base, arguments)
                    SELECT r.key, json_extract(r.fields, '$.profileOf.v'), json_extract(r.fields, '$.profileArgs.v')
                    FROM (SELECT key, CASE WHEN json_valid(fields) THEN fields END AS fields FROM records
                          WHERE collection = 'browsers' AND deleted = 0) r
                    WHERE json_type(r.fields, '$.profileOf.v') = 'text' AND json_type(r.fields, '$.profileArgs.v') = 'array'
                      AND EXISTS (SELECT 1 FROM (SELECT CASE WHEN json_valid(fields) THEN fields END AS fields FROM changes
                                                 WHERE kind = 'local' AND collection = 'browsers' AND key = r.key) c
                                  WHERE json_extract(c.fields, '$.profileArgs.v') = json_extract(r.fields, '$.profileArgs.v'))
                      AND EXISTS (SELECT 1 FROM (SELECT CASE WHEN json_valid(fields) THEN fields END AS fields FROM changes
                                                 WHERE kind = 'local' AND collection = 'browsers' AND key = r.key) c
                                  WHERE json_extract(c.fields, '$.profileOf.v') = json_extract(r.fields, '$.profileOf.v'));
                """)

        /// Each live rule's place in the order rules decide
        /// (`RulePrecedence.SortKey.collationText`; "2" and the key for a
        /// pattern this version cannot parse, so it comes last), NULL for a
        /// deletion, with an index (dropped at 17, below): listing sorts by
        /// it instead of parsing every pattern. Filled for the rules
        /// already stored by the next migration, with every other rule column
        /// (a replica at 14 takes both); a later change to the order's text
        /// must recompute it the same way.
        static let precedence = Migrator.Migration(
            version: 15,
            sql: """
                ALTER TABLE records ADD COLUMN precedence TEXT;
                CREATE INDEX records_by_precedence ON records (collection, deleted, precedence);
                """)

        /// Each live rule as listing shows it (`rule_pattern`, `rule_browser`,
        /// `rule_created`, and `rule_rest`: its other fields as a JSON object,
        /// NULL when none), written with its fields (`RuleColumns`): listing
        /// 20,000 rules reads these instead of 120,000 stamped fields. Filled
        /// here, with every rule column (`precedence` too), for the rules
        /// already stored; a damaged record keeps NULLs and is read from its
        /// fields, which says what is wrong.
        static let ruleColumns = Migrator.Migration(
            version: 16,
            sql: """
                ALTER TABLE records ADD COLUMN rule_pattern TEXT;
                ALTER TABLE records ADD COLUMN rule_browser TEXT;
                ALTER TABLE records ADD COLUMN rule_created INTEGER;
                ALTER TABLE records ADD COLUMN rule_rest TEXT;
                """,
            fill: { database in
                let rows = try database.query(
                    "SELECT key, fields FROM records WHERE collection = 'rules' AND deleted = 0"
                ) { row in
                    (row.string(0) ?? "", row.string(1) ?? "{}")
                }
                let names = RuleColumns.names
                for (key, fields) in rows {
                    guard let state = try? RecordState(fieldsJSON: fields, versionsJSON: "{}") else { continue }
                    try database.run(
                        "UPDATE records SET \(names.map { "\($0) = ?" }.joined(separator: ", ")) WHERE collection = 'rules' AND key = ?",
                        RuleColumns(key: key, state: state).values + [.text(key)])
                }
            })

        /// The `precedence` index costs more than it saves: a pull that
        /// stores 10,000 rules spent ~7 µs a rule keeping it (its ~70-byte
        /// keys arrive in no order), and listing 20,000 rules read them
        /// sooner by scanning the table and sorting (60–69 ms against
        /// 85–92 ms walking the index, which reads each row out of order).
        static let noPrecedenceIndex = Migrator.Migration(
            version: 17,
            sql: """
                DROP INDEX IF EXISTS records_by_precedence;
                """)

        /// Why the server refused a change of this device (NULL: taken, or
        /// not answered yet), as its push answer, or a retry's, named it
        /// (the server keeps refusals and names them again on retries). A
        /// refused change was never applied: `brsync log` says so, and only
        /// applied changes count as this device's acknowledged writes.
        /// And, for each device, the newest stamp of any value of it that a
        /// pull brought here, and when (only ever raised: a later overwrite
        /// does not lower it): `brsync status` shows when each device was
        /// last heard from, which that device's own status can confirm.
        static let refusals = Migrator.Migration(
            version: 18,
            sql: """
                ALTER TABLE changes ADD COLUMN refused TEXT;
                CREATE TABLE device_writes (
                    device TEXT PRIMARY KEY,
                    newest TEXT NOT NULL,
                    seen_at INTEGER NOT NULL
                ) WITHOUT ROWID;
                """)

        /// Records a pull set aside rather than applied (one that does not
        /// open, fails its manifest, or holds what this machine cannot use),
        /// by the key the server files it under, with the key as the user
        /// knows it when it opened that far, why, when it was first and last
        /// seen, and when it was last asked for again (NULL: never). An entry
        /// leaves when a pull applies the record; `brsync status` shows them.
        static let pulledAside = Migrator.Migration(
            version: 19,
            sql: """
                CREATE TABLE pulled_aside (
                    collection TEXT NOT NULL,
                    filed_key TEXT NOT NULL,
                    shown_key TEXT,
                    sequence INTEGER NOT NULL,
                    why TEXT NOT NULL,
                    first_at INTEGER NOT NULL,
                    last_at INTEGER NOT NULL,
                    asked_at INTEGER,
                    PRIMARY KEY (collection, filed_key)
                ) WITHOUT ROWID;
                """)

        /// Records by tag, the first 8 bytes of their hidden key, under the
        /// account key `tags_key` names (``Replica/tagRecords(keyID:tag:)``):
        /// how a device's ledger names them. Filled when a check needs it,
        /// not when a record is written; a row whose record is gone names
        /// nothing (looked up joined with `records`).
        static let recordTags = Migrator.Migration(
            version: 20,
            sql: """
                CREATE TABLE record_tags (
                    collection TEXT NOT NULL,
                    key TEXT NOT NULL,
                    tag INTEGER NOT NULL,
                    PRIMARY KEY (collection, key)
                ) WITHOUT ROWID;
                CREATE INDEX record_tags_by_tag ON record_tags (tag);
                """)

        /// Devices' ledgers (the `ledger` collection) are records too, kept
        /// and relayed like the others, never listed: the collection check
        /// takes them. SQLite changes a check only by building the table
        /// again: every row keeps its id, so the record order and the rule
        /// columns stay as they were.
        static let ledgerRecords = Migrator.Migration(
            version: 21,
            sql: """
                CREATE TABLE records_with_ledgers (
                    id INTEGER PRIMARY KEY,
                    collection TEXT NOT NULL CHECK (collection IN ('browsers', 'rules', 'settings', 'ledger')),
                    key TEXT NOT NULL,
                    fields TEXT NOT NULL,
                    versions TEXT NOT NULL,
                    deleted INTEGER NOT NULL DEFAULT 0,
                    index_key TEXT,
                    priority INTEGER,
                    precedence TEXT,
                    rule_pattern TEXT,
                    rule_browser TEXT,
                    rule_created INTEGER,
                    rule_rest TEXT,
                    UNIQUE (collection, key)
                );
                INSERT INTO records_with_ledgers (
                    id, collection, key, fields, versions, deleted, index_key, priority, precedence,
                    rule_pattern, rule_browser, rule_created, rule_rest)
                SELECT id, collection, key, fields, versions, deleted, index_key, priority, precedence,
                    rule_pattern, rule_browser, rule_created, rule_rest FROM records ORDER BY id;
                DROP TABLE records;
                ALTER TABLE records_with_ledgers RENAME TO records;
                CREATE INDEX records_by_index_key ON records (collection, index_key);
                """)

        /// This machine's own ledger as it writes it (``LedgerBook``), under
        /// the device id it belongs to: the small state packed, and one row
        /// an entry (`changed`: since the last head the server confirmed).
        /// A new device id starts an empty book. And the other devices'
        /// ledgers that failed their checks, held before they alarm
        /// (``Replica/noteLedgerChecks(_:now:)``).
        static let ledgerBook = Migrator.Migration(
            version: 22,
            sql: """
                CREATE TABLE ledger_book (
                    device TEXT PRIMARY KEY,
                    state BLOB NOT NULL
                ) WITHOUT ROWID;
                CREATE TABLE ledger_entries (
                    device TEXT NOT NULL,
                    tag INTEGER NOT NULL,
                    entry BLOB NOT NULL,
                    changed INTEGER NOT NULL,
                    PRIMARY KEY (device, tag)
                ) WITHOUT ROWID;
                CREATE TABLE ledger_failures (
                    device TEXT PRIMARY KEY,
                    first_at INTEGER NOT NULL,
                    pulls INTEGER NOT NULL,
                    what TEXT NOT NULL
                ) WITHOUT ROWID;
                """)

        /// Records' tags without an index by tag: tagging the 10,000
        /// records of a first pull wrote their random tags all over it, a
        /// third of the ledger checks' time, for lookups made only when a
        /// check fails (``Replica/records(tagged:)``, one pass for all).
        static let noTagIndex = Migrator.Migration(
            version: 23,
            sql: """
                DROP INDEX IF EXISTS record_tags_by_tag;
                """)

        /// What the last ledger check a device passed read of its ledger
        /// (``Replica/LedgerChecked``): the next check reads only the entries
        /// of shards written since, and its pending records.
        static let ledgerChecked = Migrator.Migration(
            version: 24,
            sql: """
                CREATE TABLE ledger_checked (
                    device TEXT PRIMARY KEY,
                    head INTEGER NOT NULL,
                    shards TEXT NOT NULL
                ) WITHOUT ROWID;
                """)

        /// Records' tags kept by tag (one table, no index): a ledger check
        /// that reads only what changed looks its few tags up instead of
        /// passing over every record's, and tagging writes one tree as
        /// before. Which records are tagged is known by row id
        /// (``Replica/tagRecords(keyID:tag:)``), not by looking each up.
        static let tagsByTag = Migrator.Migration(
            version: 25,
            sql: """
                CREATE TABLE record_tags_by_tag (
                    tag INTEGER NOT NULL,
                    collection TEXT NOT NULL,
                    key TEXT NOT NULL,
                    PRIMARY KEY (tag, collection, key)
                ) WITHOUT ROWID;
                INSERT INTO record_tags_by_tag (tag, collection, key) SELECT tag, collection, key FROM record_tags;
                DROP TABLE record_tags;
                ALTER TABLE record_tags_by_tag RENAME TO record_tags;
                """)

        /// Devices whose ledger this machine no longer checks (`brsync
        /// device forget`): each with the newest stamps of its ledger records
        /// and of its writes held then (a newer one of either arriving ends
        /// it; ``ForgottenDevice``), and the failure it ended.
        static let forgottenDevices = Migrator.Migration(
            version: 26,
            sql: """
                CREATE TABLE forgotten_devices (
                    device TEXT PRIMARY KEY,
                    ledger_high TEXT NOT NULL,
                    writes_high TEXT,
                    what TEXT NOT NULL,
                    at INTEGER NOT NULL
                ) WITHOUT ROWID;
                """)

        /// Writes under this device's id that a pull brought and this
        /// replica did not hold (``Replica/writesFromElsewhere()``): another
        /// home's, whatever their stamps. Each field keeps the newest one
        /// heard until this device's ledger names it.
        static let writesFromElsewhere = Migrator.Migration(
            version: 27,
            sql: """
                CREATE TABLE writes_from_elsewhere (
                    collection TEXT NOT NULL,
                    key TEXT NOT NULL,
                    field TEXT NOT NULL,
                    stamp TEXT NOT NULL,
                    PRIMARY KEY (collection, key, field)
                ) WITHOUT ROWID;
                """)

        /// Writes a device's ledger named that this machine did not hold
        /// (``Replica/ledgerUnmet()``): kept until they are held, so a newer
        /// head of the device that stops naming them does not end the failure.
        static let ledgerUnmet = Migrator.Migration(
            version: 28,
            sql: """
                CREATE TABLE ledger_unmet (
                    device TEXT NOT NULL,
                    tag INTEGER NOT NULL,
                    field TEXT NOT NULL,
                    stamp TEXT NOT NULL,
                    PRIMARY KEY (device, tag, field)
                ) WITHOUT ROWID;
                """)

        /// Whether this replica has every withdrawal its pulls passed
        /// (``Replica/withdrawalsMayBeMissed()``): so when it has pulled
        /// nothing yet; one an older brsync pulled asks for them once.
        static let withdrawalsRead = Migrator.Migration(
            version: 29,
            sql: """
                INSERT OR IGNORE INTO meta (key, value) SELECT 'withdrawals_read', '1'
                WHERE COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'pull_cursor'), 0) = 0;
                """)
    }
}
