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
            let through = try tagsThrough(keyID: keyID)
            let candidates = try database.query(
                "SELECT id, collection, key FROM records WHERE id > ?", [.integer(through)]
            ) { row in (row.int64(0) ?? 0, row.string(1) ?? "", row.string(2) ?? "") }
            var untagged: [(tag: UInt64, collection: String, key: String)] = []
            for (_, collectionName, key) in candidates {
                guard let collection = RecordCollection(rawValue: collectionName) else { continue }
                untagged.append((tag(collection, key), collectionName, key))
            }
            return try insertTags(untagged, through: through, newest: candidates.map(\.0).max() ?? through)
        }
    }

    /// Tags every record (``tagRecords(keyID:tag:)``) and returns every
    /// record held (not ledgers) by its tag: each field's stamp (read
    /// without the values: the checks compare stamps only;
    /// ``records(tagged:)`` says which record a tag names). One pass over
    /// the records.
    /// A record this object stored while its stamps were kept
    /// (``keepStoredStamps(keyID:)``: a pull that just wrote it) is not read back;
    /// any other is read as stored.
    /// - Parameter tagOfFiledKey: a record's tag from the key the server
    ///   files it under, when a pull stored it opened under `keyID`.
    public func tagAndReadRegisters(
        keyID: String, tag: (RecordCollection, String) -> UInt64, tagOfFiledKey: (String) -> UInt64? = { _ in nil }
    ) throws -> [UInt64: [String: HLCTimestamp]] {
        try transaction {
            let through = try tagsThrough(keyID: keyID)
            let kept = try storedStampsIfCurrent()
            let stored = kept?.records
            let filedKeysTag = kept?.keyID == keyID
            var untagged: [(tag: UInt64, collection: String, key: String)] = []
            var newest = through
            var result: [UInt64: [String: HLCTimestamp]] = [:]
            result.reserveCapacity(stored?.count ?? 0)
            // The keys from the (collection, key) index, without reading the
            // rows: a pull's check holds the stamps of what it stored, and the
            // rows (their fields' text) are most of the file.
            var unread: [Int64: UInt64] = [:]
            try database.forEachRow("SELECT id, collection, key FROM records") { row in
                let id = row.int64(0) ?? 0
                guard let collectionName = row.string(1), let collection = RecordCollection(rawValue: collectionName),
                    let key = row.string(2)
                else { return true }
                let held = stored?[StoredStamps.Key(collection: collection, key: key)]
                let recordTag =
                    (filedKeysTag ? held?.filedKey.flatMap(tagOfFiledKey) : nil) ?? tag(collection, key)
                if id > through {
                    untagged.append((recordTag, collectionName, key))
                    newest = max(newest, id)
                }
                guard collection != .ledger else { return true }
                if let held {
                    Self.add(held.stamps, tag: recordTag, into: &result)
                } else {
                    unread[id] = recordTag
                }
                return true
            }
            try readStamps(of: unread, into: &result)
            try insertTags(untagged, through: through, newest: newest)
            return result
        }
    }

    /// Adds the stamps of the records `unread` names (row id → tag), read
    /// from their fields' text: one by one when they are few, else in one
    /// pass over the table. In the caller's transaction.
    private func readStamps(of unread: [Int64: UInt64], into result: inout [UInt64: [String: HLCTimestamp]]) throws {
        guard !unread.isEmpty else { return }
        var reader = HLCTimestamp.Reader()
        if unread.count <= 512 {
            for (id, tag) in unread.sorted(by: { $0.key < $1.key }) {
                try database.forEachRow("SELECT fields FROM records WHERE id = ?", [.integer(id)]) { row in
                    Self.add(try Self.fieldStamps(of: row, column: 0, reader: &reader), tag: tag, into: &result)
                    return false
                }
            }
            return
        }
        try database.forEachRow("SELECT id, fields FROM records") { row in
            guard let tag = unread[row.int64(0) ?? 0] else { return true }
            Self.add(try Self.fieldStamps(of: row, column: 1, reader: &reader), tag: tag, into: &result)
            return true
        }
    }

    /// The newest row id tagged under `keyID` (0: none); every tag dropped
    /// first when they were made under another key. In the caller's transaction.
    private func tagsThrough(keyID: String) throws -> Int64 {
        if try meta("tags_key") != keyID {
            try database.run("DELETE FROM record_tags")
            try setMeta("tags_key", keyID)
            try setMeta("tags_through", nil)
        }
        return Int64(try meta("tags_through") ?? "") ?? 0
    }

    /// Adds `tags` (in tag order: the table's own, so each goes in beside
    /// the one before) and keeps the newest row id looked at; returns how
    /// many were new. In the caller's transaction.
    @discardableResult
    private func insertTags(
        _ tags: [(tag: UInt64, collection: String, key: String)], through: Int64, newest: Int64
    ) throws -> Int {
        var tagged = 0
        // Tagged before (all records are looked at after a removal): kept.
        for item in tags.sorted(by: { Int64(bitPattern: $0.tag) < Int64(bitPattern: $1.tag) }) {
            try database.run(
                "INSERT OR IGNORE INTO record_tags (tag, collection, key) VALUES (?, ?, ?)",
                [.integer(Int64(bitPattern: item.tag)), .text(item.collection), .text(item.key)])
            tagged += database.changes
        }
        let last = try database.scalar("SELECT MAX(id) FROM records")?.int64Value ?? 0
        if max(newest, last) != through { try setMeta("tags_through", String(max(newest, last))) }
        return tagged
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
