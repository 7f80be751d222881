import Storage
import SyncCore

/// A record a pull set aside rather than applied: it did not open, failed
/// its manifest (Deploy/SECURITY.md, "Records sealed as records"), or held
/// what this machine cannot use. Kept until a pull applies the record
/// (``Replica/pulledAside(limit:)``), so the sync's one message is not the
/// only trace of it.
public struct PulledAside: Sendable, Equatable {
    /// The collection, as the server named it.
    public var collection: String
    /// The key the server files it under (an encrypted account's hidden key).
    public var filedKey: String
    /// The key as the user knows it, when the record opened that far.
    public var shownKey: String?
    /// The account sequence it came with.
    public var sequence: Int64
    public var why: String
    /// When a pull first and last set it aside, by this machine's clock.
    public var firstAtMillis: Int64 = 0
    public var lastAtMillis: Int64 = 0

    public init(collection: String, filedKey: String, shownKey: String?, sequence: Int64, why: String) {
        self.collection = collection
        self.filedKey = filedKey
        self.shownKey = shownKey
        self.sequence = sequence
        self.why = why
    }

    /// How the record is named to the user: its key when it opened that
    /// far, else its number, as the sync named it ("set aside record #N").
    public var shown: String {
        shownKey.map { "\(collection) '\($0)'" } ?? "\(collection) record #\(sequence)"
    }
}

extension Replica {
    /// The most records kept set aside: past it the oldest leave (a hostile
    /// server could otherwise fill the replica with made-up records).
    static let pulledAsideKept = 1_000
    /// The longest reason kept for one.
    static let pulledAsideWhyBytes = 500

    /// The records pulls set aside and no pull applied since, newest first.
    public func pulledAside(limit: Int = 1_000) throws -> [PulledAside] {
        try read {
            try database.query(
                """
                SELECT collection, filed_key, shown_key, sequence, why, first_at, last_at
                FROM pulled_aside ORDER BY last_at DESC, collection, filed_key LIMIT ?
                """, [.integer(Int64(limit))], Self.pulledAsideEntry)
        }
    }

    /// A row of `SELECT collection, filed_key, shown_key, sequence, why, first_at, last_at`.
    private static func pulledAsideEntry(_ row: Row) -> PulledAside {
        var entry = PulledAside(
            collection: row.string(0) ?? "", filedKey: row.string(1) ?? "", shownKey: row.string(2),
            sequence: row.int64(3) ?? 0, why: row.string(4) ?? "")
        entry.firstAtMillis = row.int64(5) ?? 0
        entry.lastAtMillis = row.int64(6) ?? 0
        return entry
    }

    /// How many records are set aside (``pulledAside(limit:)``).
    public func pulledAsideCount() throws -> Int {
        try read { Int(try database.scalar("SELECT COUNT(*) FROM pulled_aside")?.int64Value ?? 0) }
    }

    /// The records set aside whose turn to be asked for again has come:
    /// `every` after they were first set aside, or after they were last
    /// asked for (either way: a clock set back by more than that does not
    /// hold them off), longest waiting first; none while the last ask of any
    /// is less than `every` ago, so a server that sets aside many records
    /// adds one request in that time, not one a sync.
    public func pulledAsideDue(every milliseconds: Int64, limit: Int) throws -> [PulledAside] {
        try read {
            if let last = Int64(try meta("pulled_aside_asked") ?? ""), abs(currentMillis - last) < milliseconds {
                return []
            }
            return try database.query(
                """
                SELECT collection, filed_key, shown_key, sequence, why, first_at, last_at
                FROM pulled_aside WHERE abs(? - COALESCE(asked_at, first_at)) >= ?
                ORDER BY COALESCE(asked_at, first_at), collection, filed_key LIMIT ?
                """, [.integer(currentMillis), .integer(milliseconds), .integer(Int64(limit))], Self.pulledAsideEntry)
        }
    }

    /// Notes that `entries` were asked for again now.
    public func noteAskedAgain(_ entries: [PulledAside]) throws {
        try transaction {
            try setMeta("pulled_aside_asked", String(currentMillis))
            for entry in entries {
                try database.run(
                    "UPDATE pulled_aside SET asked_at = ? WHERE collection = ? AND filed_key = ?",
                    [.integer(currentMillis), .text(entry.collection), .text(entry.filedKey)])
            }
        }
    }

    /// Keeps `entries` set aside (inside the transaction of the page that
    /// brought them, so the cursor never passes a record without its entry):
    /// a record set aside again keeps when it was first.
    func keepPulledAside(_ entries: [PulledAside]) throws {
        guard !entries.isEmpty else { return }
        let now = currentMillis
        for entry in entries {
            try database.run(
                """
                INSERT INTO pulled_aside (collection, filed_key, shown_key, sequence, why, first_at, last_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (collection, filed_key) DO UPDATE SET
                    shown_key = COALESCE(excluded.shown_key, shown_key), sequence = excluded.sequence,
                    why = excluded.why, last_at = excluded.last_at
                """,
                [
                    .text(entry.collection), .text(entry.filedKey), entry.shownKey.map { .text($0) } ?? .null,
                    .integer(entry.sequence),
                    .text(String(decoding: entry.why.utf8.prefix(Self.pulledAsideWhyBytes), as: UTF8.self)),
                    .integer(now), .integer(now),
                ])
        }
        try database.run(
            """
            DELETE FROM pulled_aside WHERE (collection, filed_key) IN (
                SELECT collection, filed_key FROM pulled_aside ORDER BY last_at DESC, collection, filed_key
                LIMIT -1 OFFSET ?)
            """, [.integer(Int64(Self.pulledAsideKept))])
    }

    /// Whether any record is set aside: a page clears entries only then.
    func anyPulledAside() throws -> Bool {
        try database.scalar("SELECT 1 FROM pulled_aside LIMIT 1") != nil
    }

    /// The record `change` was applied (or held already): it is no longer set aside.
    func clearPulledAside(_ change: ChangeRecord) throws {
        try database.run(
            "DELETE FROM pulled_aside WHERE collection = ? AND filed_key = ?",
            [.text(change.collection.rawValue), .text(change.filedKey ?? change.key)])
    }
}
