/// A database's own settings (a replica's device id and clock, a store's
/// timeline and file identity, …): one text value per key, in the `meta`
/// table each brsync database makes in its first migration.
extension Database {
    /// The table, as the first migration makes it.
    public static let metaTable = """
        CREATE TABLE meta (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        ) WITHOUT ROWID;

        """

    /// The value kept under `key`, or nil.
    public func meta(_ key: String) throws -> String? {
        try scalar("SELECT value FROM meta WHERE key = ?", [.text(key)])?.stringValue
    }

    /// Keeps `value` under `key`; nil removes it.
    public func setMeta(_ key: String, _ value: String?) throws(DatabaseError) {
        if let value {
            try run(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [.text(key), .text(value)])
        } else {
            try run("DELETE FROM meta WHERE key = ?", [.text(key)])
        }
    }
}
