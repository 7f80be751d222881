import Storage
import SyncCore

/// Records by tag: the first 8 bytes of the key the server files a record
/// under in an encrypted account (an HMAC under the account key), which is
/// how a device's ledger names the records it wrote (Deploy/SECURITY.md,
/// "A device's own writes, counted"). A table of its own, filled only when
/// a check needs it (``tagRecords(keyID:tag:)``), so writing a record pays
/// nothing for it; the tags of one key only (a key change empties it).
extension Replica {
    /// Tags every record that has none yet under the key `keyID` (all of
    /// them, after a key change), with `tag` giving a record's tag; returns
    /// how many were tagged. One transaction: a process killed half-way
    /// leaves the tags of the records it reached, or none.
    ///
    /// Only records stored after the newest one tagged are looked at (a
    /// record keeps its row id when it changes; a new one takes a higher
    /// id), unless records were removed since (``noteRecordsRemoved()``: a
    /// row id may then be used again), when every record is.
    @discardableResult
    public func tagRecords(keyID: String, tag: (RecordCollection, String) -> UInt64) throws -> Int {
        try transaction {
            if try meta("tags_key") != keyID {
                try database.run("DELETE FROM record_tags")
                try setMeta("tags_key", keyID)
                try setMeta("tags_through", nil)
            }
            let through = Int64(try meta("tags_through") ?? "") ?? 0
            var newest = through
            let candidates = try database.query(
                "SELECT id, collection, key FROM records WHERE id > ?", [.integer(through)]
            ) { row in (row.int64(0) ?? 0, row.string(1) ?? "", row.string(2) ?? "") }
            var tagged = 0
            for (id, collectionName, key) in candidates {
                newest = max(newest, id)
                guard let collection = RecordCollection(rawValue: collectionName) else { continue }
                // Tagged before (all records are looked at after a removal): kept.
                try database.run(
                    "INSERT OR IGNORE INTO record_tags (tag, collection, key) VALUES (?, ?, ?)",
                    [.integer(Int64(bitPattern: tag(collection, key))), .text(collectionName), .text(key)])
                tagged += database.changes
            }
            let last = try database.scalar("SELECT MAX(id) FROM records")?.int64Value ?? 0
            if max(newest, last) != through { try setMeta("tags_through", String(max(newest, last))) }
            return tagged
        }
    }

    /// The records held that are tagged `tag` under the key the tags were
    /// made with (``tagRecords(keyID:tag:)``): one, or none; two only when
    /// two keys' HMACs share their first 8 bytes. A tag whose record left
    /// (a record the server removed) names nothing, and names it again if
    /// it comes back (its key, hence its tag, is the same).
    public func records(tagged tag: UInt64) throws -> [(collection: RecordCollection, key: String)] {
        try records(tagged: [tag])[tag] ?? []
    }

    /// ``records(tagged:)`` for several tags, each looked up by its tag.
    public func records(
        tagged tags: Set<UInt64>
    ) throws -> [UInt64: [(collection: RecordCollection, key: String)]] {
        guard !tags.isEmpty else { return [:] }
        return try read {
            var found: [UInt64: [(collection: RecordCollection, key: String)]] = [:]
            for tag in tags {
                try database.forEachRow(
                    """
                    SELECT t.collection, t.key FROM record_tags t JOIN records r USING (collection, key)
                    WHERE t.tag = ? ORDER BY t.collection, t.key
                    """, [.integer(Int64(bitPattern: tag))]
                ) { row in
                    guard let collection = RecordCollection(rawValue: row.string(0) ?? "") else { return true }
                    found[tag, default: []].append((collection, row.string(1) ?? ""))
                    return true
                }
            }
            return found
        }
    }

    /// The key id the records' tags were made under, or nil before any.
    public func tagsKeyID() throws -> String? { try meta("tags_key") }
}
