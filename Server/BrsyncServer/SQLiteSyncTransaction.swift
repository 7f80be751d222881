import Net
import Storage
import SyncCore

/// The SQLite store's answers to ``SyncWriteTransaction`` and
/// ``SyncReadTransaction``, on a connection inside a transaction (a write
/// transaction is `BEGIN IMMEDIATE`: SQLite's one write lock serialises it).
struct SQLiteSyncTransaction: SyncWriteTransaction, SyncReadTransaction {
    let database: Database

    func deviceRevoked(_ device: Int64) throws -> Bool? {
        try database.queryFirst("SELECT revoked FROM devices WHERE id = ?", [.integer(device)]) { $0.int(0) == 1 }
    }

    func stream(account: Int64, clientDevice: String) throws -> (last: Int64, digest: String)? {
        try database.queryFirst(
            "SELECT last_seq, last_digest FROM device_streams WHERE account_id = ? AND client_device = ?",
            [.integer(account), .text(clientDevice)]) { (last: $0.int64(0) ?? 0, digest: $0.string(1) ?? "") }
    }

    func accountCounters(_ account: Int64) throws -> AccountCounters {
        try database.queryFirst("SELECT next_seq, stamp_high, encrypted, key_id FROM accounts WHERE id = ?", [.integer(account)]) {
            AccountCounters(nextSequence: $0.int64(0) ?? 1, stampHigh: $0.int64(1) ?? 0, encrypted: $0.int(2) == 1, keyID: $0.string(3) ?? "")
        } ?? AccountCounters()
    }

    func record(account: Int64, collection: RecordCollection, key: String) throws -> (state: RecordState, sequence: Int64)? {
        try database.queryFirst(
            "SELECT fields, versions, seq FROM records WHERE account_id = ? AND collection = ? AND key = ?",
            [.integer(account), .text(collection.rawValue), .text(key)]
        ) { row in (state: try StoredRecord.decode(fields: row.string(0) ?? "{}", versions: row.string(1) ?? "{}"), sequence: row.int64(2) ?? 0) }
    }

    func upsertRecord(account: Int64, collection: RecordCollection, key: String, state: RecordState, fieldsText: String?, sequence: Int64,
                      knownTo: String?, knownAfter: Int64, now: Int64) throws {
        try database.run(
            """
            INSERT INTO records (account_id, collection, key, fields, versions, seq, deleted, updated_at, known_to, known_after)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (account_id, collection, key) DO UPDATE SET
                fields = excluded.fields, versions = excluded.versions, seq = excluded.seq,
                deleted = excluded.deleted, updated_at = excluded.updated_at, known_to = excluded.known_to,
                known_after = excluded.known_after
            """,
            [.integer(account), .text(collection.rawValue), .text(key),
             .text(fieldsText ?? RecordState.encodeFields(state.fields)), .text(RecordState.encodeVersions(state.versions)),
             .integer(sequence), DatabaseValue(state.isDeleted), .integer(now), knownTo.map { .text($0) } ?? .null,
             .integer(knownAfter)])
    }

    func setAccountCounters(_ account: Int64, nextSequence: Int64, stampAtLeast: Int64) throws {
        try database.run("UPDATE accounts SET next_seq = ?, stamp_high = MAX(stamp_high, ?) WHERE id = ?",
                         [.integer(nextSequence), .integer(stampAtLeast), .integer(account)])
    }

    func setStream(account: Int64, clientDevice: String, last: Int64, digest: String) throws {
        try database.run(
            """
            INSERT INTO device_streams (account_id, client_device, last_seq, last_digest) VALUES (?, ?, ?, ?)
            ON CONFLICT (account_id, client_device) DO UPDATE SET last_seq = excluded.last_seq, last_digest = excluded.last_digest
            """, [.integer(account), .text(clientDevice), .integer(last), .text(digest)])
    }

    func notePush(device: Int64, lastDeviceSequence: Int64, clientDevice: String, now: Int64) throws {
        try database.run("UPDATE devices SET last_device_seq = ?, client_device = ?, last_seen = ? WHERE id = ?",
                         [.integer(lastDeviceSequence), .text(clientDevice), .integer(now), .integer(device)])
    }

    func startNewEpoch() throws -> String {
        try ServerStore.startNewEpoch(in: database)
    }

    func records(account: Int64, after cursor: Int64, limit: Int) throws -> [(row: ServerStore.PulledRow, knownTo: String?, knownAfter: Int64)] {
        try database.query(
            "SELECT seq, collection, key, fields, versions, known_to, known_after FROM records WHERE account_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            [.integer(account), .integer(cursor), .integer(Int64(limit))]
        ) { row in
            guard let collection = row.string(1).flatMap(RecordCollection.init(rawValue:)) else {
                throw ServerError.storeUnusable("a stored record has an unknown collection")
            }
            return (row: ServerStore.PulledRow(sequence: row.int64(0) ?? 0, collection: collection, key: row.string(2) ?? "",
                                               fields: row.string(3) ?? "{}", versions: row.string(4) ?? "{}"),
                    knownTo: row.string(5), knownAfter: row.int64(6) ?? 0)
        }
    }
}
