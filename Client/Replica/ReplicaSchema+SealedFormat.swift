import Storage

/// The replica's tables for sealed format 2 (docs/sealed-format-v2.md): the
/// format each change was first sent in, the boxes pulls brought, and how
/// a relay finds this machine's own writes of a record.
extension ReplicaSchema.Migration4 {
    /// The sealed format each change of the log was first sent in
    /// (``ChangeRecord/sealedFormat``; NULL: never sent): a retry sends
    /// the same bytes, whatever the account turned to since. Every
    /// change logged before this version may have been sent, in format 1.
    static let sealedFormats = Migrator.Migration(
        version: 30,
        sql: """
            ALTER TABLE changes ADD COLUMN sealed_format INTEGER;
            UPDATE changes SET sealed_format = 1;
            """)

    /// The boxes of sealed format 2 a pull brought (``Replica/keptBoxes(_:key:)``):
    /// one per record and stamp a field of it holds, as the writer sealed
    /// it, so a relay sends the write whole and never seals it again.
    static let keptBoxes = Migrator.Migration(
        version: 31,
        sql: """
            CREATE TABLE boxes (
                collection TEXT NOT NULL,
                key TEXT NOT NULL,
                stamp TEXT NOT NULL,
                sealed TEXT NOT NULL,
                PRIMARY KEY (collection, key, stamp)
            ) WITHOUT ROWID;
            """)

    /// The kept boxes in a table with row ids and an index of their
    /// records and stamps: a pull appends each box (hundreds of bytes)
    /// at the end instead of inserting it among the others in the order
    /// of its key (a WITHOUT ROWID table), which rewrote pages all over
    /// the table and spilled them from the cache mid-transaction (a pull
    /// of 10,000 sealed rules applied in twice the time it took without boxes).
    static let boxesInOrder = Migrator.Migration(
        version: 32,
        sql: """
            CREATE TABLE boxes_kept (
                id INTEGER PRIMARY KEY,
                collection TEXT NOT NULL,
                key TEXT NOT NULL,
                stamp TEXT NOT NULL,
                sealed TEXT NOT NULL,
                UNIQUE (collection, key, stamp)
            );
            INSERT INTO boxes_kept (collection, key, stamp, sealed)
            SELECT collection, key, stamp, sealed FROM boxes ORDER BY collection, key, stamp;
            DROP TABLE boxes;
            ALTER TABLE boxes_kept RENAME TO boxes;
            """)

    /// How much of its write each kept box holds
    /// (``ChangeRecord/PulledBox/weight``): a pull keeps the heavier of
    /// two boxes of one stamp, never a relay's part of a write over the
    /// writer's whole box. A box kept before weighs 0 (any box of its
    /// stamp may take its place, as before).
    static let boxWeights = Migrator.Migration(
        version: 33,
        sql: """
            ALTER TABLE boxes ADD COLUMN weight INTEGER NOT NULL DEFAULT 0;
            """)

    /// This machine's own writes of a record, found by the record
    /// (``Replica/ownWrites(_:key:)``): a relay sends each of them in
    /// the whole box its push sealed, never a part of it. And whether
    /// boxes kept before schema 33 (weight 0) wait to be weighed
    /// (``Replica/unweighedBoxes(limit:)``: the client opens them, with the key).
    static let ownWritesByRecord = Migrator.Migration(
        version: 34,
        sql: """
            CREATE INDEX changes_by_record ON changes (collection, key) WHERE kind = 'local';
            INSERT OR REPLACE INTO meta (key, value) SELECT 'boxes_unweighed', '1'
            WHERE EXISTS (SELECT 1 FROM boxes WHERE weight = 0);
            """)
}
