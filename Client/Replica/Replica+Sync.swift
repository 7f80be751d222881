import JSON
import Model
import Storage
import SyncCore

/// Where this replica syncs, and how far it got.
public struct SyncState: Sendable, Equatable {
    public var remoteURL: String?
    public var caFile: String?
    /// The server's epoch at the last sync; a different one means a full re-sync.
    public var epoch: String?
    /// The account sequence up to which pulled records are applied.
    public var pullCursor: Int64
    /// The last device sequence the server acknowledged.
    public var pushedThrough: Int64
    public var lastSyncMillis: Int64?
    /// Server clock minus this machine's clock, learned from every answer (ms).
    public var clockOffsetMilliseconds: Int64
    /// The account's identity at the last sync (another account resets the cursor).
    public var account: String?
    /// Why the last sync did not finish, or records it had to set aside ("" when it did).
    public var problem: String
    public var problemAtMillis: Int64?
    /// Whether any answer (a refusal too) told this machine the server's time.
    public var clockKnown: Bool = false
}

/// A value that lost a merge, kept so nothing is lost silently.
/// The newest value of one device that pulls brought to this machine
/// (``Replica/deviceWrites()``).
public struct DeviceWrites: Sendable, Equatable {
    public let device: String
    public let newest: HLCTimestamp
    /// When it came, by this machine's clock.
    public let seenAtMillis: Int64
}

public struct Conflict: Sendable, Equatable {
    public let id: Int64
    public let collection: String
    public let key: String
    public let field: String
    public let lost: StampedValue
    public let winner: StampedValue
    public let recordedAtMillis: Int64
    /// When the lost value was written back, or nil.
    public var restoredAtMillis: Int64? = nil
}

extension Replica {
    func meta(_ key: String) throws -> String? {
        try read { try database.meta(key) }
    }

    func setMeta(_ key: String, _ value: String?) throws {
        try database.setMeta(key, value)
    }

    public func syncState() throws -> SyncState {
        SyncState(
            remoteURL: try meta("remote_url"), caFile: try meta("remote_ca"), epoch: try meta("epoch"),
            pullCursor: Int64(try meta("pull_cursor") ?? "") ?? 0,
            pushedThrough: Int64(try meta("pushed_through") ?? "") ?? 0,
            lastSyncMillis: Int64(try meta("last_sync") ?? ""), clockOffsetMilliseconds: try clockOffset(),
            account: try meta("account"), problem: try meta("sync_problem") ?? "",
            problemAtMillis: Int64(try meta("sync_problem_at") ?? ""),
            clockKnown: try pendingClockOffset != nil || meta("clock_offset") != nil)
    }

    /// Remembers why a sync did not finish (nil: it did), for `brsync status`.
    public func recordSyncProblem(_ problem: String?) throws {
        try transaction {
            try setMeta("sync_problem", problem)
            try setMeta("sync_problem_at", problem.map { _ in String(currentMillis) })
        }
    }

    /// Points the replica at a server. A different server starts sync afresh
    /// (cursor, epoch and acknowledged pushes are the old server's).
    public func setRemote(url: String, caFile: String?) throws {
        try transaction {
            if try meta("remote_url") != url {
                for key in ["epoch", "pull_cursor", "pushed_through", "last_sync", "account", "server_device_name"] {
                    try setMeta(key, nil)
                }
            }
            try setMeta("remote_url", url)
            try setMeta("remote_ca", caFile)
        }
        WatchWake.poke(home: home) // a watch waiting for a server, or watching the old one
    }

    /// The name the server gave this device at `brsync join` (what
    /// `brsyncd device list` shows; this device's own name may differ), or
    /// nil (not joined with a code).
    public func serverDeviceName() throws -> String? { try read { try meta("server_device_name") } }

    /// Keeps the name the server gave this device (``serverDeviceName()``).
    public func setServerDeviceName(_ name: String?) throws { try setMeta("server_device_name", name) }

    public func removeRemote() throws {
        try transaction {
            for key in [
                "remote_url", "remote_ca", "epoch", "pull_cursor", "pushed_through", "last_sync", "account",
                "server_device_name",
            ] {
                try setMeta(key, nil)
            }
        }
        WatchWake.poke(home: home)
    }

    /// This device's change-log entries after `sequence`, in order, at most `limit`.
    public func unpushedChanges(after sequence: Int64, limit: Int) throws -> [ChangeRecord] {
        try refreshDeviceID()
        return try read {
            try database.query(
                """
                SELECT device_seq, collection, key, fields, versions, manifest FROM changes
                WHERE device = ? AND kind = 'local' AND device_seq > ? ORDER BY device_seq LIMIT ?
                """, [.text(deviceID), .integer(sequence), .integer(Int64(limit))]
            ) { row in
                guard let collection = row.string(1).flatMap(RecordCollection.init(rawValue:)) else {
                    throw ReplicaError.notAReplica(path: path, reason: "a change-log entry has an unknown collection")
                }
                return ChangeRecord(
                    sequence: row.int64(0) ?? 0, collection: collection, key: row.string(2) ?? "",
                    state: try RecordCoding.decodeState(fields: row.string(3) ?? "{}", versions: row.string(4) ?? "{}"),
                    manifestText: row.string(5))
            }
        }
    }

    /// The stamps of the registers this device's change `sequence` replaced
    /// (field → stamp), as it was made; empty when the log does not say
    /// (a change logged before they were kept).
    public func replacedStamps(ofChange sequence: Int64) throws -> [String: HLCTimestamp] {
        try refreshDeviceID()
        let text = try read {
            try database.scalar(
                "SELECT replaced FROM changes WHERE device = ? AND kind = 'local' AND device_seq = ?",
                [.text(deviceID), .integer(sequence)])?.stringValue
        }
        guard let text, case .object(let object)? = try? JSONValue.parse(text) else { return [:] }
        return object.compactMapValues { $0.stringValue.flatMap(HLCTimestamp.init(text:)) }
    }

    public func unpushedCount() throws -> Int {
        try refreshDeviceID()
        let pushed = try syncState().pushedThrough
        return try read {
            try database.scalar(
                "SELECT COUNT(*) FROM changes WHERE device = ? AND kind = 'local' AND device_seq > ?",
                [.text(deviceID), .integer(pushed)])?.intValue ?? 0
        }
    }

    public func markPushed(through sequence: Int64) throws {
        try transaction {
            let current = Int64(try meta("pushed_through") ?? "") ?? 0
            try setMeta("pushed_through", String(max(current, sequence)))
            // The highest change the server ever acknowledged under this id:
            // a rewind (the server was restored) does not lower it.
            let acknowledged = Int64(try meta("acknowledged_high") ?? "") ?? 0
            try setMeta("acknowledged_high", String(max(acknowledged, sequence)))
        }
    }

    /// Notes which of this device's changes `first` through `last`, all
    /// answered by one push answer, the server refused, and why; the others
    /// were taken (a change pushed again after a rewind is answered anew).
    /// Call it inside the transaction that marks them pushed.
    public func noteRefusals(first: Int64, last: Int64, _ refused: [Int64: String]) throws {
        guard first <= last else { return }
        try database.run(
            "UPDATE changes SET refused = NULL WHERE device = ? AND device_seq BETWEEN ? AND ? AND refused IS NOT NULL",
            [.text(deviceID), .integer(first), .integer(last)])
        for (sequence, reason) in refused where sequence >= first && sequence <= last {
            try database.run(
                "UPDATE changes SET refused = ? WHERE device = ? AND device_seq = ?",
                [.text(reason), .text(deviceID), .integer(sequence)])
        }
    }

    /// Sets how far the server has this device's changes, lower than before
    /// too: the server said where it stands (a `gap`), and the digest matched.
    public func rewindPushed(to sequence: Int64) throws {
        try transaction { try setMeta("pushed_through", String(max(0, sequence))) }
    }

    /// What the log holds of the chain of this device's changes through
    /// `sequence` (what the server knows this device's history by). Chains
    /// are computed by the sync client over the changes as sent (sealed in an
    /// encrypted account) and kept here with ``keepChains(_:)``; a re-stamp
    /// clears them.
    public enum StoredChain: Equatable {
        /// The log has no such change, or its numbers have a hole before it.
        case none
        case known(String)
        /// Not computed yet: the chain through the change before `changes`
        /// is `base`, and `changes` run on to `sequence` (in order, no hole).
        case missing(base: String, changes: [ChangeRecord])
    }

    /// See ``StoredChain``.
    public func storedChain(_ sequence: Int64) throws -> StoredChain {
        guard sequence > 0 else { return .none }
        try refreshDeviceID()
        return try read {
            let stored = try database.queryFirst(
                "SELECT chain FROM changes WHERE device = ? AND kind = 'local' AND device_seq = ?",
                [.text(deviceID), .integer(sequence)]
            ) { $0.string(0) }
            switch stored {
            case nil: return .none // no such change
            case let chain??: return .known(chain)
            case .some(nil): break // not computed yet
            }
            // From the latest change before it that has its chain.
            let (start, base) =
                try database.queryFirst(
                    """
                    SELECT device_seq, chain FROM changes
                    WHERE device = ? AND kind = 'local' AND device_seq < ? AND chain IS NOT NULL ORDER BY device_seq DESC LIMIT 1
                    """, [.text(deviceID), .integer(sequence)]
                ) { ($0.int64(0) ?? 0, $0.string(1) ?? "") } ?? (0, "")
            let changes = try unpushedChanges(after: start, limit: Int(sequence - start))
            // Numbers with a hole have no chain.
            guard changes.count == Int(sequence - start),
                changes.enumerated().allSatisfy({ $0.element.sequence == start + 1 + Int64($0.offset) })
            else { return .none }
            return .missing(base: base, changes: changes)
        }
    }

    /// Keeps chains computed while pushing (see ``changeDigest(_:)``), for
    /// changes of this device that have none yet.
    public func keepChains(_ chains: [(sequence: Int64, chain: String)]) throws {
        guard !chains.isEmpty else { return }
        try refreshDeviceID()
        try transaction {
            for (sequence, chain) in chains {
                try database.run(
                    "UPDATE changes SET chain = ? WHERE device = ? AND kind = 'local' AND device_seq = ? AND chain IS NULL",
                    [.text(chain), .text(deviceID), .integer(sequence)])
            }
        }
    }

    /// Learns the offset of this machine's clock from the server's wall clock
    /// in an answer (every answer, so a clock that was fixed, or a server
    /// that was fast for a moment, is forgotten at the next contact). Only the
    /// offset: the server's time never enters this replica's clock, which moves
    /// only past stamps of edits.
    public func observeServerClock(_ stamp: HLCTimestamp) throws {
        try observeServerTime(stamp.wallMillis)
    }

    /// - Parameter ageMilliseconds: how long ago the server's time arrived
    ///   (a page fetched while the page before was applied is taken in later).
    /// The offset is kept in memory and written with the next write
    /// transaction (a pulled page, an acknowledged batch, the sync's end:
    /// ``persistServerTime()``), so an answer costs no commit of its own; a
    /// process stopped before that learns it again at its next contact.
    public func observeServerTime(_ serverMillis: Int64, ageMilliseconds: Int64 = 0) throws {
        // A time no honest server has (before 2020, after 2200) is not a
        // clock: ignored, so no answer can push this machine's stamps to the
        // end of time, nor overflow the arithmetic.
        guard Self.plausibleServerTime.contains(serverMillis), (0...86_400_000).contains(ageMilliseconds) else {
            return
        }
        pendingClockOffset = serverMillis - (currentMillis - ageMilliseconds)
    }

    /// The server times taken as clocks: 2020-01-01 to 2200-01-01 (ms).
    static let plausibleServerTime: ClosedRange<Int64> = 1_577_836_800_000...7_258_118_400_000

    /// Writes the clock offset learned from the last answer, if not written yet.
    public func persistServerTime() throws {
        if pendingClockOffset != nil { try transaction {} }
    }

    /// The last clock offset learned: the one not yet written, else the stored one.
    func clockOffset() throws -> Int64 {
        if let pendingClockOffset { return pendingClockOffset }
        // A stored offset is at most the span of plausible server times (a
        // damaged or older replica's is bounded too).
        let span = Self.plausibleServerTime.upperBound
        return min(max(Int64(try meta("clock_offset") ?? "") ?? 0, -span), span)
    }

    /// Another account (or a server that forgot this one): the cursor and the
    /// acknowledged change numbers are of another timeline, and every record
    /// held goes up to the new one (see ``requireFullRelay()``).
    /// - Returns: whether the account differs from the last one seen.
    public func checkAccount(_ account: String) throws -> Bool {
        guard !account.isEmpty else { return false }
        // The account of the last answer (every answer after the first): nothing to write.
        if try meta("account") == account { return false }
        return try transaction {
            let known = try meta("account")
            try setMeta("account", account)
            guard let known, known != account else { return false }
            try setMeta("pull_cursor", "0")
            try setMeta("pushed_through", "0")
            try setMeta("relay_all", "1")
            return true
        }
    }

    /// A server with another epoch (restored or reset): pull everything again,
    /// push every local change again and relay every record held (kept as
    /// pending until done, see ``requireFullRelay()``); nothing local is
    /// lost, and the server applies what it already had idempotently.
    public func startNewEpoch(_ epoch: String) throws {
        try transaction {
            try setMeta("epoch", epoch)
            try setMeta("pull_cursor", "0")
            try setMeta("pushed_through", "0")
            try setMeta("relay_all", "1")
        }
    }

    /// Remembers the first epoch this replica sees (nothing to redo).
    public func startNewEpochIfFirst(_ epoch: String) throws {
        try transaction {
            if try meta("epoch") == nil { try setMeta("epoch", epoch) }
        }
    }

    /// Applies one pulled page and its cursor in one transaction: each record
    /// is merged with the local one (the same merge as everywhere); values that
    /// lost to a concurrent edit go to the conflicts table.
    /// - Returns: how many records changed here (a value; a version vector
    ///   that only grew is merged but not counted).
    /// A pulled record that would make an unusable record here (see
    /// ``Wire/problem(state:)``) is not applied; its key and reason are added
    /// to `skipped`, and the rest of the page is applied.
    @discardableResult
    public func applyPulled(_ changes: [ChangeRecord], cursor: Int64, epoch: String) throws -> Int {
        var skipped: [String] = []
        return try applyPulled(changes, cursor: cursor, epoch: epoch, skipped: &skipped).changed
    }

    /// What applying a pulled page did.
    public struct AppliedPage: Sendable, Equatable {
        /// Records whose values changed here.
        public var changed = 0
        /// Values that lost to a concurrent edit, newly kept for `brsync log --conflicts`.
        public var conflicts = 0
        /// Profiles this page changed whose arguments wait for this
        /// machine's approval (never launched with them until then), with why.
        public var awaitingApproval: [(id: String, reason: String)] = []

        public static func == (first: AppliedPage, second: AppliedPage) -> Bool {
            first.changed == second.changed && first.conflicts == second.conflicts
                && first.awaitingApproval.map(\.id) == second.awaitingApproval.map(\.id)
        }
    }

    /// - Parameter aside: records of the page set aside before they came
    ///   here (they did not open, or failed their manifest): kept with the
    ///   page (``pulledAside(limit:)``), as those this replica sets aside are.
    @discardableResult
    public func applyPulled(
        _ changes: [ChangeRecord], cursor: Int64, epoch: String, aside: [PulledAside] = [], skipped: inout [String]
    ) throws -> AppliedPage {
        var setAside: [String] = []
        defer { skipped += setAside }
        return try transaction {
            var kept = aside
            // Records of the page that passed: a second copy of one that did
            // not (a lying page holding both) does not list it as set aside.
            var passed = Set<String>()
            let clearing = try anyPulledAside()
            var changed = 0
            var conflicts = 0
            var stored = false
            var awaitingApproval: [(id: String, reason: String)] = []
            if try meta("reconcile") != nil {
                for change in changes {
                    try database.run(
                        "INSERT OR IGNORE INTO reconcile_seen (collection, key) VALUES (?, ?)",
                        [.text(change.collection.rawValue), .text(change.key)])
                }
            }
            try loadPersistedClock()
            let wall = try serverTimeMillis()
            var pulledHigh = Int64(try meta("pulled_high") ?? "") ?? 0
            // The newest value of each device this page brings (``deviceWrites()``);
            // the device of the values just seen is kept apart (a page's values
            // mostly come from one device: no hashing for each).
            var heard: [String: HLCTimestamp] = [:]
            var current: HLCTimestamp?
            func hear(_ stamp: HLCTimestamp) {
                if let newest = current, newest.device == stamp.device {
                    if stamp > newest { current = stamp }
                    return
                }
                if let newest = current, heard[newest.device].map({ newest > $0 }) ?? true {
                    heard[newest.device] = newest
                }
                current = stamp
            }
            let newestLocal = try database.scalar("SELECT COALESCE(MAX(seq), 0) FROM changes")?.int64Value ?? 0
            for change in changes {
                let local = try record(change.collection, key: change.key) ?? RecordState()
                let (merged, lost) = local.merged(with: change.state)
                if let newest = change.state.newestStamp {
                    clockObserve(newest, wallMillis: wall)
                    pulledHigh = max(pulledHigh, newest.wallMillis)
                }
                if let problem = Wire.problem(state: merged)
                    ?? Self.problem(of: change.collection, key: change.key, state: merged)
                {
                    setAside.append("\(change.collection.rawValue) '\(change.key)': \(problem)")
                    kept.append(
                        PulledAside(
                            collection: change.collection.rawValue, filedKey: change.filedKey ?? change.key,
                            shownKey: change.key, sequence: change.sequence, why: problem))
                    continue
                }
                if clearing { try clearPulledAside(change) }
                if !kept.isEmpty { passed.insert("\(change.collection.rawValue)/\(change.filedKey ?? change.key)") }
                var losses = lost
                if let writer = change.writerVersions {
                    // This machine's own values that lost to a write that had
                    // not seen them: the merged vector covers this machine's
                    // writes, the writer's does not (a delete here lost to a
                    // later edit made elsewhere without it).
                    losses += try ownValuesUnseen(
                        by: writer, local: local, merged: merged, collection: change.collection, key: change.key
                    )
                    .filter { own in !lost.contains { $0.field == own.field } }
                }
                // A ledger record is kept and relayed like any other, but it
                // is no one's rule: no conflict, log entry or count, and its
                // stamps are not the writes `device_writes` keeps.
                let isLedger = change.collection == .ledger
                for value in losses
                where try !isLedger
                    && recordConflict(
                        collection: change.collection, key: change.key, field: value.field, lost: value.lost,
                        winner: value.winner)
                {
                    conflicts += 1
                }
                // The server's version lacks something this replica holds and
                // will not push (no unpushed edit of the record): the server
                // lost it (a restore, a purged tombstone brought back by an old
                // copy). The whole record goes up at the next push.
                let takenAsItCame = merged == change.state
                if !takenAsItCame, try !hasUnpushedChange(change.collection, key: change.key) {
                    try database.run(
                        "INSERT OR IGNORE INTO undelivered (collection, key) VALUES (?, ?)",
                        [.text(change.collection.rawValue), .text(change.key)])
                }
                guard merged != local else { continue }
                // Written once: a new record's log entry holds all its fields.
                // A record taken as it came keeps the page's text (not written again).
                let fieldsText =
                    (takenAsItCame ? change.fieldsText : nil) ?? RecordState.encodeFields(merged.fields)
                try storeMerged(change.collection, key: change.key, state: merged, fieldsText: fieldsText)
                // The ledger checks are due (cleared once they ran: ``noteLedgerChecks(_:now:)``).
                stored = true
                if isLedger { continue }
                let fresh = local.fields.isEmpty
                for (name, register) in merged.fields where fresh || local.fields[name] != register {
                    hear(register.stamp)
                }
                // Only a value counts as a change here: a version vector that
                // grew alone is merged, but neither logged nor counted (a pull
                // whose pages only do that is not making progress).
                // Nor does a value of a record deleted here and still deleted:
                // nothing anyone sees changed.
                guard merged.fields != local.fields, !(local.isDeleted && merged.isDeleted) else { continue }
                try logReceived(
                    change.collection, key: change.key, before: local, after: merged, afterFieldsText: fieldsText,
                    afterSequence: newestLocal)
                changed += 1
                // A profile whose arguments synced data may not choose: kept, never launched with them until approved here.
                if change.collection == .browsers, !merged.isDeleted,
                    let profile = Self.browser(key: change.key, state: merged).profile,
                    try record(.browsers, key: profile.base).map({
                        Self.browser(key: profile.base, state: $0).profile == nil
                    }) ?? true,
                    let reason = try Self.approvalProblem(
                        Self.browser(key: change.key, state: merged), approved: approvedProfiles)
                {
                    awaitingApproval.append((change.key, reason))
                }
            }
            if changed > 0 { try trimReceivedLog() }
            if let newest = current, heard[newest.device].map({ newest > $0 }) ?? true {
                heard[newest.device] = newest
            }
            for (device, newest) in heard {
                try database.run(
                    """
                    INSERT INTO device_writes (device, newest, seen_at) VALUES (?, ?, ?)
                    ON CONFLICT (device) DO UPDATE SET newest = excluded.newest, seen_at = excluded.seen_at
                    WHERE excluded.newest > device_writes.newest
                    """, [.text(device), .text(newest.description), .integer(currentMillis)])
            }
            try setMeta("pull_cursor", String(cursor))
            try setMeta("epoch", epoch)
            // The newest stamp the server has handed out: one it took.
            if pulledHigh > 0 { try setMeta("pulled_high", String(pulledHigh)) }
            try persistClock()
            try keepPulledAside(kept.filter { !passed.contains("\($0.collection)/\($0.filedKey)") })
            if stored { try setMeta("ledger_check_due", "1") }
            return AppliedPage(changed: changed, conflicts: conflicts, awaitingApproval: awaitingApproval)
        }
    }

    /// Each device whose values pulls brought here: the newest stamp of
    /// them, and when it came (this machine's clock), newest first. A device
    /// whose writes stop arriving while its own status shows later ones is
    /// being withheld (Deploy/SECURITY.md, "Fork and rejoin").
    public func deviceWrites() throws -> [DeviceWrites] {
        try read {
            try database.query("SELECT device, newest, seen_at FROM device_writes ORDER BY newest DESC") { row in
                guard let device = row.string(0), let newest = row.string(1).flatMap(HLCTimestamp.init(text:)) else {
                    throw ReplicaError.notAReplica(path: path, reason: "a device's newest write is damaged")
                }
                return DeviceWrites(device: device, newest: newest, seenAtMillis: row.int64(2) ?? 0)
            }
        }
    }

    /// Whether this replica has an edit of the record that it has not pushed.
    func hasUnpushedChange(_ collection: RecordCollection, key: String) throws -> Bool {
        let pushed = Int64(try meta("pushed_through") ?? "") ?? 0
        return try database.scalar(
            "SELECT 1 FROM changes WHERE device = ? AND kind = 'local' AND device_seq > ? AND collection = ? AND key = ? LIMIT 1",
            [.text(deviceID), .integer(pushed), .text(collection.rawValue), .text(key)]) != nil
    }

    /// Why a record received from elsewhere cannot be used here, checked as
    /// strictly as local input (browser ids, URL formats, the types of known
    /// fields), or nil. Unknown fields are kept (a newer client's); a pattern
    /// this version cannot parse is kept and set aside at resolve time.
    static func problem(of collection: RecordCollection, key: String, state: RecordState) -> String? {
        if collection == .ledger { return ledgerProblem(key: key, state: state) }
        guard !state.isDeleted else { return nil }
        let values = state.values
        func expect(_ field: String, _ isValid: (JSONValue) -> Bool, _ what: String) -> String? {
            guard let value = values[field], !isValid(value) else { return nil }
            return "\"\(field)\" must be \(what)"
        }
        let isString: (JSONValue) -> Bool = { $0.stringValue != nil }
        switch collection {
        case .browsers:
            if let problem = Browser.problem(withID: key) { return problem }
            if let format = values["urlFormat"]?.stringValue, let problem = URLFormat.problem(with: format) {
                return problem
            }
            return expect("name", isString, "a string") ?? expect("urlScheme", isString, "a string")
                ?? expect("urlFormat", isString, "a string") ?? expect(
                    "enabled", { $0.boolValue != nil }, "true or false")
                ?? expect(RecordState.deletedField, { $0.boolValue != nil }, "true or false")
        case .rules:
            return expect("pattern", isString, "a string") ?? expect("browser", isString, "a string")
                ?? expect("priority", { $0.intValue != nil }, "a whole number")
                ?? expect("createdAt", { $0.intValue != nil }, "a whole number")
        case .settings:
            if key == SettingName.defaultBrowser { return expect("value", isString, "a browser id") }
            return key.hasPrefix(deviceNamePrefix) ? expect("value", isString, "a string") : nil
        case .ledger:
            return ledgerProblem(key: key, state: state)
        }
    }

    /// Why a ledger record (opened) cannot be kept, or nil: its key names a
    /// device's shard, head or pending slot, and it holds its packed bytes
    /// (base64url text, as the cipher opens them) only: never a deletion.
    static func ledgerProblem(key: String, state: RecordState) -> String? {
        guard Ledger.Key(key) != nil else { return "not a ledger record's key" }
        for (name, register) in state.fields {
            switch name {
            case RecordState.deletedField:
                return "a ledger record is never deleted"
            case Wire.ledgerField:
                guard case .string(let text) = register.value, Self.isBase64URL(text) else {
                    return "its ledger is not packed bytes"
                }
            default:
                return "a ledger record holds a field \"\(DisplayText.printable(name.prefix(60)))\""
            }
        }
        return nil
    }

    /// Whether `text` is unpadded base64url (the packed bytes of a ledger record).
    static func isBase64URL(_ text: String) -> Bool {
        text.utf8.count % 4 != 1 && text.utf8.allSatisfy(Wire.isBase64URL)
    }

    public func recordSync() throws {
        try transaction { try setMeta("last_sync", String(currentMillis)) }
    }
}
