import JSON
import Storage
import SyncCore

/// This machine's own ledger as it writes it (Deploy/SECURITY.md, "A
/// device's own writes, counted"): the book (``LedgerBook``) kept under the
/// device id it belongs to, so that a new id (a copied home, a key change)
/// starts an empty one; and the stamps its ledger records are written with.
extension Replica {
    /// The book of `device` as it was last kept: its packed state and its
    /// entries (each packed, and whether it changed since the last head the
    /// server confirmed); nil before any.
    public func ledgerBookRows(device: String) throws -> (state: [UInt8], entries: [(bytes: [UInt8], changed: Bool)])? {
        try read {
            guard
                case .blob(let state)? = try database.queryFirst(
                    "SELECT state FROM ledger_book WHERE device = ?", [.text(device)], { $0[0] })
            else { return nil }
            let entries = try database.query(
                "SELECT entry, changed FROM ledger_entries WHERE device = ? ORDER BY tag", [.text(device)]
            ) { row -> (bytes: [UInt8], changed: Bool) in
                guard case .blob(let bytes) = row[0] else { return ([], false) }
                return (bytes, row.int(1) == 1)
            }
            return (state, entries)
        }
    }

    /// Keeps the book of `device`: its packed state and the entries that
    /// changed since it was last kept (`changed`: since the last head the
    /// server confirmed); `confirmed` when the server confirmed a head (no
    /// entry has changed since). Books of other ids are dropped: they belong
    /// to an id this replica no longer writes under. In the caller's
    /// transaction when there is one.
    public func keepLedgerBook(
        device: String, state: [UInt8], entries: [(tag: UInt64, bytes: [UInt8], changed: Bool)], confirmed: Bool
    ) throws {
        try transaction {
            // Two ranges of the primary key, not `<>`: that read every entry
            // (10,000 after a push of 10,000 rules) at every batch's answer.
            try database.run("DELETE FROM ledger_book WHERE device < ?1 OR device > ?1", [.text(device)])
            try database.run("DELETE FROM ledger_entries WHERE device < ?1 OR device > ?1", [.text(device)])
            try database.run(
                "INSERT INTO ledger_book (device, state) VALUES (?, ?) ON CONFLICT (device) DO UPDATE SET state = excluded.state",
                [.text(device), .blob(state)])
            if confirmed {
                try database.run(
                    "UPDATE ledger_entries SET changed = 0 WHERE device = ? AND changed = 1", [.text(device)])
            }
            for entry in entries {
                try database.run(
                    """
                    INSERT INTO ledger_entries (device, tag, entry, changed) VALUES (?, ?, ?, ?)
                    ON CONFLICT (device, tag) DO UPDATE SET entry = excluded.entry, changed = excluded.changed
                    """,
                    [.text(device), .integer(Int64(bitPattern: entry.tag)), .blob(entry.bytes), .init(entry.changed)])
            }
        }
    }

    /// Keeps ledger records of this device's that the server took (a
    /// confirmed ledger request, a relay's pending records; a batch's are
    /// not kept: its ledger request folds them) as
    /// pulled ones are kept, merged by stamp: a relay after a restore then
    /// carries them as they were written, and the records they count with
    /// them. In the caller's transaction when there is one.
    public func keepOwnLedgerRecords(_ records: [ChangeRecord]) throws {
        try transaction {
            for record in records where record.collection == .ledger {
                let local = try self.record(.ledger, key: record.key) ?? RecordState()
                let merged = local.merged(with: record.state).state
                guard merged != local, Wire.problem(state: merged) == nil else { continue }
                try storeMerged(.ledger, key: record.key, state: merged)
            }
        }
    }

    /// A stamp for a ledger record of this device: the clock's next tick,
    /// kept at once, so that a slot or shard written again after a restart
    /// always carries a newer stamp than the one the server may hold.
    /// - Parameters:
    /// - Parameter ceiling: when given (ms; the server refused a stamp for
    ///   its clock), no further ahead than that (the clock may run fast),
    ///   and above every stamp held back so before, so that no two ledger
    ///   records share a stamp (the clock's own ticks never repeat).
    public func ledgerStamp(ceiling: Int64? = nil) throws -> HLCTimestamp {
        try transaction {
            try loadPersistedClock()
            var stamp = try tickClock()
            try persistClock()
            guard let ceiling, stamp.wallMillis > ceiling else { return stamp }
            // Every stamp held back takes a counter of its own: two never
            // meet, whichever way the ceiling (the server's clock) moves.
            let counter = (UInt32(try meta("ledger_held_back") ?? "") ?? 0) &+ 1
            try setMeta("ledger_held_back", String(counter))
            stamp = HLCTimestamp(wallMillis: ceiling, counter: counter, device: deviceID)
            return stamp
        }
    }

    /// The stamps of this device's ledger requests the server refused since
    /// it last confirmed one (newest last; at most 4,096): a head or shard
    /// held at one was written here, though the server said it did not
    /// take it, and not by another home under this id.
    public func abandonedLedgerStamps() throws -> [Ledger.Stamp] {
        (try meta(Self.abandonedLedgerMeta) ?? "").split(separator: "\n").compactMap { line in
            HLCTimestamp(text: "\(line)-\(deviceID)").map(Ledger.Stamp.init)
        }
    }

    /// Notes a ledger request's stamp the server refused (``abandonedLedgerStamps()``).
    public func noteAbandonedLedgerStamp(_ stamp: Ledger.Stamp) throws {
        let kept = try abandonedLedgerStamps().filter { $0 != stamp }.suffix(4_095) + [stamp]
        try setMeta(Self.abandonedLedgerMeta, kept.map(\.description).joined(separator: "\n"))
    }

    /// The server confirmed a ledger request at `stamp`: the refused ones
    /// before it no longer matter (a head held at one is older than the
    /// book's).
    public func forgetAbandonedLedgerStamps(through stamp: Ledger.Stamp) throws {
        let kept = try abandonedLedgerStamps().filter { $0 > stamp }
        try setMeta(Self.abandonedLedgerMeta, kept.isEmpty ? nil : kept.map(\.description).joined(separator: "\n"))
    }

    static let abandonedLedgerMeta = "ledger_abandoned_stamps"

    /// The newest stamp of this device's own ledger records held here (the
    /// ones the server confirmed), or nil.
    public func ownLedgerStampHigh() throws -> HLCTimestamp? {
        try read {
            var newest: HLCTimestamp?
            var reader = HLCTimestamp.Reader()
            try database.forEachRow(
                "SELECT fields FROM records WHERE collection = 'ledger' AND key >= ? AND key < ?",
                [.text(deviceID + "/"), .text(deviceID + "0")]
            ) { row in
                let stamps = try? row.withText(0) { bytes throws(Wire.Problem) in
                    try RecordState.fieldStamps(fieldsUTF8: bytes, reader: &reader)
                }
                for stamp in (stamps ?? [:]).values where newest.map({ stamp > $0 }) ?? true { newest = stamp }
                return true
            }
            return newest
        }
    }

    /// Every ledger record held, as the checks read them: one pass over the
    /// rows, no record built (a live pull's check read every ledger record
    /// of every device into records, a fifth of its time).
    /// - Throws: ``ReplicaError/notAReplica(path:reason:)`` for a stored
    ///   record that does not read, as reading it as a record does.
    public func ledgerRows() throws -> [LedgerRow] {
        try read {
            var rows: [LedgerRow] = []
            var reader = HLCTimestamp.Reader()
            try database.forEachRow(
                "SELECT key, fields FROM records WHERE collection = 'ledger' ORDER BY key", []
            ) { row in
                do {
                    let fields = try row.withText(1) { bytes throws(Wire.Problem) in
                        try Ledger.StoredFields(fieldsUTF8: bytes, reader: &reader)
                    }
                    rows.append(LedgerRow(key: row.string(0) ?? "", fields: fields))
                } catch {
                    throw ReplicaError.notAReplica(path: "replica", reason: "a stored record is damaged: \(error)")
                }
                return true
            }
            return rows
        }
    }

    /// Every ledger of the key generation this replica leaves (a key
    /// change starts every ledger over): the ledger records it holds, its
    /// own book and the records' tags. In the caller's transaction.
    func dropLedgers() throws {
        try keepFailuresEndedByKeyChange()
        try database.run("DELETE FROM records WHERE collection = 'ledger'")
        try setMeta("tags_through", nil)
        try database.run("DELETE FROM undelivered WHERE collection = 'ledger'")
        try database.run("DELETE FROM ledger_book")
        try database.run("DELETE FROM ledger_entries")
        try database.run("DELETE FROM record_tags")
        try database.run("DELETE FROM ledger_failures")
        try database.run("DELETE FROM ledger_unmet")
        try database.run("DELETE FROM ledger_checked")
        try database.run("DELETE FROM forgotten_devices")
        try setMeta(Self.formerIDsMeta, nil)
        try setMeta(Self.abandonedLedgerMeta, nil)
        try forgetWithdrawalSetbacks()
        try setMeta("tags_key", nil)
        try forgetOwnLedgerNotTaken()
    }
}

/// A ledger failure that a key change ended (its ledger went with the old
/// key): kept for `brsync status` to say, since nothing checks it any more.
public struct EndedLedgerFailure: Sendable, Equatable {
    public var failure: LedgerFailure
    /// When the key change ended it (this machine's clock).
    public var endedAtMillis: Int64
}

extension Replica {
    /// How long `brsync status` shows a failure a key change ended (30 days).
    public static let endedFailuresShownMillis: Int64 = 30 * 86_400_000

    /// The ledger failures key changes ended (``EndedLedgerFailure``) in the
    /// last ``endedFailuresShownMillis``, oldest first; what does not read
    /// is left out.
    public func ledgerFailuresEnded(now: Int64? = nil) throws -> [EndedLedgerFailure] {
        let now = now ?? currentMillis
        return try read { try keptEndedFailures() }.filter {
            now >= $0.endedAtMillis && now - $0.endedAtMillis < Self.endedFailuresShownMillis
        }
    }

    /// Every ended failure kept (`ledger_failures_ended`), as written.
    private func keptEndedFailures() throws -> [EndedLedgerFailure] {
        guard let text = try meta("ledger_failures_ended"), case .array(let items)? = try? JSONValue.parse(text)
        else { return [] }
        return items.compactMap { item in
            guard case .object(let failure) = item, case .string(let device)? = failure["device"],
                case .string(let what)? = failure["what"], case .int(let since)? = failure["since"],
                case .int(let pulls)? = failure["pulls"], case .bool(let alarming)? = failure["alarm"],
                case .int(let ended)? = failure["ended"]
            else { return nil }
            return EndedLedgerFailure(
                failure: LedgerFailure(
                    device: device, what: what, firstAtMillis: since, pulls: Int(pulls), alarming: alarming),
                endedAtMillis: ended)
        }
    }

    /// Keeps the failures held now as ended by a key change (inside the
    /// caller's transaction, before the ledgers are dropped), after those
    /// ended before that are still shown (the newest 64 in all).
    private func keepFailuresEndedByKeyChange() throws {
        let failures = try ledgerFailures()
        guard !failures.isEmpty else { return }
        let now = currentMillis
        let earlier = try keptEndedFailures().filter {
            now >= $0.endedAtMillis && now - $0.endedAtMillis < Self.endedFailuresShownMillis
        }
        let all = earlier + failures.map { EndedLedgerFailure(failure: $0, endedAtMillis: now) }
        let items = all.suffix(64).map { ended in
            JSONValue.object([
                "device": .string(ended.failure.device), "what": .string(String(ended.failure.what.prefix(1_000))),
                "since": .int(ended.failure.firstAtMillis), "pulls": .int(Int64(ended.failure.pulls)),
                "alarm": .bool(ended.failure.alarming), "ended": .int(ended.endedAtMillis),
            ])
        }
        try setMeta("ledger_failures_ended", JSONValue.array(Array(items)).jsonText)
    }
}

/// Another device's ledger that failed its checks at the end of a pull
/// (Deploy/SECURITY.md, "What fails, and how it ends"): held first, an
/// alarm once it still fails at least ``Replica/ledgerAlarmAfterMillis``
/// after it was first seen and at a second pull; it clears at the first
/// pull after which it passes.
public struct LedgerFailure: Sendable, Equatable {
    public var device: String
    /// What failed, in words (the records, the fields).
    public var what: String
    /// When a pull first saw it fail (this machine's clock), and how many pulls did.
    public var firstAtMillis: Int64
    public var pulls: Int
    /// Whether it alarms now (else it is held).
    public var alarming: Bool
}

extension Replica {
    /// How long a failure is held before it alarms (15 minutes).
    public static let ledgerAlarmAfterMillis: Int64 = 15 * 60 * 1000

    /// ``tagAndReadRegisters(keyID:tag:tagOfFiledKey:)``'s registers of the records tagged `tags` only, each looked up by its tag.
    public func registers(tagged tags: Set<UInt64>) throws -> [UInt64: [String: HLCTimestamp]] {
        guard !tags.isEmpty else { return [:] }
        return try read {
            var result: [UInt64: [String: HLCTimestamp]] = [:]
            var reader = HLCTimestamp.Reader()
            for tag in tags {
                try database.forEachRow(
                    """
                    SELECT t.tag, r.fields FROM record_tags t JOIN records r USING (collection, key)
                    WHERE t.tag = ? AND r.collection <> 'ledger'
                    """, [.integer(Int64(bitPattern: tag))]
                ) { row in
                    try Self.addRegisters(row, into: &result, reader: &reader)
                    return true
                }
            }
            return result
        }
    }

    /// Adds a row of (tag, fields) to registers by tag.
    private static func addRegisters(
        _ row: Row, into result: inout [UInt64: [String: HLCTimestamp]], reader: inout HLCTimestamp.Reader
    ) throws {
        add(
            try fieldStamps(of: row, column: 1, reader: &reader), tag: UInt64(bitPattern: row.int64(0) ?? 0),
            into: &result)
    }

    /// Each field's stamp of a stored record's fields text in `column` of `row`.
    static func fieldStamps(
        of row: Row, column: Int, reader: inout HLCTimestamp.Reader
    ) throws -> [String: HLCTimestamp] {
        do {
            return try row.withText(column) { bytes throws(Wire.Problem) in
                try RecordState.fieldStamps(fieldsUTF8: bytes, reader: &reader)
            }
        } catch {
            throw ReplicaError.notAReplica(path: "replica", reason: "a stored record is damaged: \(error)")
        }
    }

    /// Adds a record's stamps to registers by tag: two records of one tag
    /// (8 bytes of an HMAC alike) give each field's newest.
    static func add(
        _ stamps: [String: HLCTimestamp], tag: UInt64, into result: inout [UInt64: [String: HLCTimestamp]]
    ) {
        guard var fields = result[tag] else {
            result[tag] = stamps
            return
        }
        for (name, stamp) in stamps where fields[name].map({ $0 < stamp }) ?? true { fields[name] = stamp }
        result[tag] = fields
    }

    /// What the last ledger check a device passed read of its ledger: the
    /// identity of its head's meaning (the ids and field names its entries
    /// refer to, its shard count) and a digest of each shard (its stamp and
    /// its bytes: two shards under one stamp still differ). An entry of a
    /// shard held the same under the same identity was met then and stays
    /// met: what a machine holds of a record only moves forward, except
    /// where it sets records aside (which makes the next check whole,
    /// ``ledgerCheckMustBeWhole(now:)``).
    public struct LedgerChecked: Sendable, Equatable {
        public var head: UInt64
        public var shards: [Int: UInt64]

        public init(head: UInt64, shards: [Int: UInt64]) {
            self.head = head
            self.shards = shards
        }
    }

    /// How long the checks may go on reading only what changed before one
    /// reads every ledger whole again (a day, this machine's clock).
    public static let ledgerWholeCheckEveryMillis: Int64 = 86_400_000

    /// What each device's last passing check read (``LedgerChecked``); a
    /// row that does not read is left out (its device is checked whole).
    public func ledgerChecked() throws -> [String: LedgerChecked] {
        try read {
            var result: [String: LedgerChecked] = [:]
            try database.forEachRow("SELECT device, head, shards FROM ledger_checked") { row in
                var shards: [Int: UInt64] = [:]
                for item in (row.string(2) ?? "").split(separator: " ") {
                    let parts = item.split(separator: "=", maxSplits: 1)
                    guard parts.count == 2, let index = Int(parts[0]), let digest = UInt64(parts[1], radix: 16)
                    else { return true }
                    shards[index] = digest
                }
                result[row.string(0) ?? ""] = LedgerChecked(
                    head: UInt64(bitPattern: row.int64(1) ?? 0), shards: shards)
                return true
            }
            return result
        }
    }

    /// Whether the next ledger check reads every ledger whole: records were
    /// set aside since the last whole one (an entry met then may not be
    /// now), none ran yet, or the last ran a day ago or more (or the clock
    /// went back past it).
    public func ledgerCheckMustBeWhole(now: Int64) throws -> Bool {
        try read {
            guard try meta("ledger_check_whole") == nil, let last = Int64(try meta("ledger_whole_at") ?? "") else {
                return true
            }
            return now < last || now - last >= Self.ledgerWholeCheckEveryMillis
        }
    }

    /// Notes that records were set aside or removed: an entry met before may
    /// not be met now, so the next ledger check reads every ledger whole, and
    /// a removed record's row id may be used again, so the next tagging
    /// looks at every record (``tagRecords(keyID:tag:)``). In the caller's
    /// transaction.
    func noteRecordsRemoved() throws {
        try setMeta("ledger_check_whole", "1")
        try setMeta("tags_through", nil)
    }

    /// Keeps what the ledger checks of a pull found, by device (nil: it
    /// passed): a failure seen again keeps when it was first seen and
    /// counts the pull; one that passed, or of a device no longer checked,
    /// is gone. A clock set back starts a failure's wait again.
    /// - Returns: every failure standing, held or alarming.
    /// - Parameters:
    ///   - checked: what the check read of each device's ledger that passed
    ///     (the next check reads only what changed since); every other
    ///     device's is forgotten (it is checked whole).
    ///   - whole: whether this check read every ledger whole.
    ///   - unmet: the writes failing ledgers named and this machine lacks
    ///     (``LedgerUnmet``); a device that passed forgets its own.
    @discardableResult
    public func noteLedgerChecks(
        _ results: [String: String?], checked: [String: LedgerChecked] = [:], whole: Bool = true,
        unmet: [String: [LedgerUnmet]] = [:], now: Int64
    ) throws -> [LedgerFailure] {
        try transaction {
            try keepLedgerUnmet(unmet, met: results.filter { $0.value == nil }.keys)
            try setMeta("ledger_check_due", nil)
            if whole {
                try setMeta("ledger_check_whole", nil)
                try setMeta("ledger_whole_at", String(now))
            }
            try database.run("DELETE FROM ledger_checked")
            for (device, read) in checked {
                let shards = read.shards.sorted { $0.key < $1.key }.map { "\($0.key)=\(String($0.value, radix: 16))" }
                try database.run(
                    "INSERT INTO ledger_checked (device, head, shards) VALUES (?, ?, ?)",
                    [.text(device), .integer(Int64(bitPattern: read.head)), .text(shards.joined(separator: " "))])
            }
            let failing = results.compactMapValues { $0 }
            for device in try database.query("SELECT device FROM ledger_failures", [], { $0.string(0) ?? "" })
            where failing[device] == nil {
                try database.run("DELETE FROM ledger_failures WHERE device = ?", [.text(device)])
            }
            for (device, what) in failing {
                try database.run(
                    """
                    INSERT INTO ledger_failures (device, first_at, pulls, what) VALUES (?, ?, 1, ?)
                    ON CONFLICT (device) DO UPDATE SET pulls = pulls + 1, what = excluded.what,
                        first_at = CASE WHEN first_at > excluded.first_at THEN excluded.first_at ELSE first_at END
                    """, [.text(device), .integer(now), .text(what)])
            }
            return try ledgerFailures(now: now)
        }
    }

    /// Whether a pull stored records since the ledger checks last ran: set
    /// in the page's own transaction, so neither a server that names no new
    /// cursor nor a process killed before the checks can skip them.
    public func ledgerChecksDue() throws -> Bool { try read { try meta("ledger_check_due") != nil } }

    /// The other devices' ledgers that fail their checks, held or alarming.
    public func ledgerFailures(now: Int64? = nil) throws -> [LedgerFailure] {
        let now = now ?? currentMillis
        return try read {
            try database.query("SELECT device, what, first_at, pulls FROM ledger_failures ORDER BY device") { row in
                let first = row.int64(2) ?? now
                let pulls = row.int(3) ?? 1
                return LedgerFailure(
                    device: row.string(0) ?? "", what: row.string(1) ?? "", firstAtMillis: first, pulls: pulls,
                    alarming: pulls >= 2 && now - first >= Self.ledgerAlarmAfterMillis)
            }
        }
    }
}

/// This device's own ledger not taken by the server (Deploy/SECURITY.md,
/// "What fails, and how it ends"): in how many syncs in a row, since when
/// (this machine's clock), and the server's last word.
public struct OwnLedgerNotTaken: Sendable, Equatable {
    public var syncs: Int
    public var firstAtMillis: Int64
    public var why: String
    /// Whether the device warns its own user: three syncs or more, over 15
    /// minutes or more (a clock set back starts the wait again).
    public var warns: Bool
}

extension Replica {
    /// Syncs in a row whose ledger the server did not take before the
    /// device warns its user (over ``ledgerAlarmAfterMillis`` at least).
    public static let ownLedgerWarnAfterSyncs = 3

    /// Notes a sync whose ledger the server did not take (`why`, its words).
    /// - Returns: where it stands now.
    @discardableResult
    public func noteOwnLedgerNotTaken(_ why: String, now: Int64) throws -> OwnLedgerNotTaken {
        try transaction {
            var syncs = (Int(try meta("own_ledger_refused_syncs") ?? "") ?? 0) + 1
            var first = Int64(try meta("own_ledger_refused_since") ?? "") ?? now
            // A clock set back past the first: the wait starts again.
            if now < first {
                syncs = 1
                first = now
            }
            try setMeta("own_ledger_refused_syncs", String(syncs))
            try setMeta("own_ledger_refused_since", String(first))
            try setMeta("own_ledger_refused_why", String(why.prefix(1_000)))
            return Self.ownLedgerNotTaken(syncs: syncs, first: first, why: why, now: now)
        }
    }

    /// Notes a sync whose ledger request the server took: no warning stands.
    public func noteOwnLedgerTaken() throws {
        try transaction { try forgetOwnLedgerNotTaken() }
    }

    /// Clears what ``noteOwnLedgerNotTaken(_:now:)`` noted (inside the caller's transaction).
    private func forgetOwnLedgerNotTaken() throws {
        for key in ["own_ledger_refused_syncs", "own_ledger_refused_since", "own_ledger_refused_why"] {
            try setMeta(key, nil)
        }
    }

    /// Where this device's own ledger stands, when the server did not take
    /// it at the last sync that sent it; nil when it did.
    public func ownLedgerNotTaken(now: Int64? = nil) throws -> OwnLedgerNotTaken? {
        let now = now ?? currentMillis
        return try read {
            guard let syncs = Int(try meta("own_ledger_refused_syncs") ?? ""),
                let first = Int64(try meta("own_ledger_refused_since") ?? "")
            else { return nil }
            return Self.ownLedgerNotTaken(
                syncs: syncs, first: first, why: try meta("own_ledger_refused_why") ?? "", now: now)
        }
    }

    private static func ownLedgerNotTaken(syncs: Int, first: Int64, why: String, now: Int64) -> OwnLedgerNotTaken {
        OwnLedgerNotTaken(
            syncs: syncs, firstAtMillis: first, why: why,
            warns: syncs >= ownLedgerWarnAfterSyncs && now >= first && now - first >= ledgerAlarmAfterMillis)
    }
}

/// A ledger record as the ledger checks read it (``Replica/ledgerRows()``).
public struct LedgerRow: Sendable, Equatable {
    public var key: String
    public var fields: Ledger.StoredFields

    public init(key: String, fields: Ledger.StoredFields) {
        self.key = key
        self.fields = fields
    }
}
