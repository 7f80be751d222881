import JSON
import Model
import Storage
import SyncCore

/// Pulling: a page's records merged into the replica (conflicts kept, what
/// cannot be used set aside, what each device was last heard to write), and
/// how a received record is checked before it is used.
extension Replica {
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

    /// What storing a pulled record as it came writes beside its fields,
    /// made before the page is applied, on another thread (the one that
    /// fetches and opens the next page): its rule columns, its versions'
    /// text, and its received-log entry were it new here. They are used
    /// only when the record is stored exactly as it came (that entry, only
    /// when nothing of it was here); made on the applying thread they took
    /// about a sixth of a pull of 10,000 new rules.
    public struct PreparedRow: Sendable {
        let columns: RuleColumns
        let versionsText: String
        let newEntry: Entry?
        /// The record's fields as stored text: the page's when it carried
        /// them, written here for a record opened from a sealed page (so
        /// the applying thread does not write it).
        let fieldsText: String

        /// A received-log entry: the newest stamp, and the one-stamp text
        /// (``Replica/oneStampEntry(_:stamp:)``) when it has one.
        struct Entry: Sendable {
            let newest: HLCTimestamp
            let text: String?
        }

        /// What storing `change` writes beside its fields.
        public init(_ change: ChangeRecord) {
            let state = change.state
            columns = change.collection == .rules ? RuleColumns(key: change.key, state: state) : .none
            versionsText = RecordState.encodeVersions(state.versions)
            newEntry = state.newestStamp.map { Entry(newest: $0, text: Replica.oneStampEntry(state.fields, stamp: $0)) }
            fieldsText = change.fieldsText ?? RecordState.encodeFields(state.fields)
        }
    }

    /// - Parameter aside: records of the page set aside before they came
    ///   here (they did not open, or failed their manifest): kept with the
    ///   page (``pulledAside(limit:)``), as those this replica sets aside are.
    /// - Parameter prepared: a ``PreparedRow`` of each of `changes`, in their order, when made.
    @discardableResult
    public func applyPulled(
        _ changes: [ChangeRecord], cursor: Int64, epoch: String, aside: [PulledAside] = [],
        prepared: [PreparedRow]? = nil, skipped: inout [String]
    ) throws -> AppliedPage {
        var setAside: [String] = []
        defer { skipped += setAside }
        return try transaction {
            let clearing = try anyPulledAside()
            if try meta("reconcile") != nil {
                for change in changes {
                    try database.run(
                        "INSERT OR IGNORE INTO reconcile_seen (collection, key) VALUES (?, ?)",
                        [.text(change.collection.rawValue), .text(change.key)])
                }
            }
            try loadPersistedClock()
            var page = PageProgress(
                kept: aside, clearing: clearing, wall: try serverTimeMillis(),
                pulledHigh: Int64(try meta("pulled_high") ?? "") ?? 0,
                newestLocal: try database.scalar("SELECT COALESCE(MAX(seq), 0) FROM changes")?.int64Value ?? 0)
            // The records with a lost value not written back: one whose value
            // comes back in a pull (restored on another machine) is marked so.
            page.openConflicts = Set(
                try database.query(
                    "SELECT DISTINCT collection, key FROM conflicts WHERE restored_at IS NULL", []
                ) { "\($0.string(0) ?? "")/\($0.string(1) ?? "")" })
            let prepared = prepared?.count == changes.count ? prepared : nil
            for (index, change) in changes.enumerated() {
                try applyPulledChange(change, prepared: prepared?[index], to: &page, setAside: &setAside)
            }
            try finishPulledPage(page, cursor: cursor, epoch: epoch)
            return AppliedPage(
                changed: page.changed, conflicts: page.conflicts, awaitingApproval: page.awaitingApproval)
        }
    }

    /// A pulled page while it is applied: what it did so far.
    private struct PageProgress {
        /// Records of the page set aside, to keep with it.
        var kept: [PulledAside]
        /// Records of the page that passed: a second copy of one that did
        /// not (a lying page holding both) does not list it as set aside.
        var passed = Set<String>()
        /// Whether records set aside before may be cleared as they pass.
        let clearing: Bool
        let wall: Int64
        var pulledHigh: Int64
        /// The newest change number of this replica's log before the page.
        let newestLocal: Int64
        var changed = 0
        var conflicts = 0
        /// Whether a record was stored (the ledger checks are then due).
        var stored = false
        var awaitingApproval: [(id: String, reason: String)] = []
        var heard = HeardWriters()
        /// "collection/key" of each record with a conflict not written back.
        var openConflicts: Set<String> = []

        init(kept: [PulledAside], clearing: Bool, wall: Int64, pulledHigh: Int64, newestLocal: Int64) {
            self.kept = kept
            self.clearing = clearing
            self.wall = wall
            self.pulledHigh = pulledHigh
            self.newestLocal = newestLocal
        }
    }

    /// The newest value of each device a page brings (``deviceWrites()``);
    /// the device of the values just seen is kept apart (a page's values
    /// mostly come from one device: no hashing for each).
    private struct HeardWriters {
        private var heard: [String: HLCTimestamp] = [:]
        private var current: HLCTimestamp?

        mutating func hear(_ stamp: HLCTimestamp) {
            if let newest = current, newest.device == stamp.device {
                if stamp > newest { current = stamp }
                return
            }
            settleCurrent()
            current = stamp
        }

        private mutating func settleCurrent() {
            if let newest = current, heard[newest.device].map({ newest > $0 }) ?? true {
                heard[newest.device] = newest
            }
        }

        /// Each device heard from, with its newest stamp.
        var newest: [String: HLCTimestamp] {
            var all = self
            all.settleCurrent()
            return all.heard
        }
    }

    /// Merges one pulled record into the replica, or sets it aside.
    private func applyPulledChange(
        _ change: ChangeRecord, prepared: PreparedRow?, to page: inout PageProgress, setAside: inout [String]
    ) throws {
        let local = try record(change.collection, key: change.key) ?? RecordState()
        // The server's register wins a tie (one stamp, two texts): every
        // machine ends with the server's choice (docs/sealed-format-v2.md).
        let (merged, lost) = local.merged(with: change.state, tiesToOther: true)
        if let newest = change.state.newestStamp {
            clockObserve(newest, wallMillis: page.wall)
            page.pulledHigh = max(page.pulledHigh, newest.wallMillis)
        }
        if let problem = Wire.problem(state: merged)
            ?? Self.problem(of: change.collection, key: change.key, state: merged)
        {
            setAside.append("\(change.collection.rawValue) '\(change.key)': \(problem)")
            page.kept.append(
                PulledAside(
                    collection: change.collection.rawValue, filedKey: change.filedKey ?? change.key,
                    shownKey: change.key, sequence: change.sequence, why: problem))
            return
        }
        if page.clearing { try clearPulledAside(change) }
        if !page.kept.isEmpty { page.passed.insert("\(change.collection.rawValue)/\(change.filedKey ?? change.key)") }
        page.conflicts += try keepLosses(lost, of: change, local: local, merged: merged)
        try keepBoxes(of: change, local: local, merged: merged)
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
        guard merged != local else { return }
        // Written once: a new record's log entry holds all its fields.
        // A record taken as it came keeps the page's text, or the one
        // written when it was opened (not written again).
        let fieldsText =
            (takenAsItCame ? change.fieldsText ?? prepared?.fieldsText : nil) ?? RecordState.encodeFields(merged.fields)
        try storeMerged(
            change.collection, key: change.key, state: merged, fieldsText: fieldsText, filedKey: change.filedKey,
            prepared: takenAsItCame ? prepared : nil)
        // The ledger checks are due (cleared once they ran: ``noteLedgerChecks(_:now:)``).
        page.stored = true
        // A ledger record is kept and relayed like any other, but it
        // is no one's rule: no conflict, log entry or count, and its
        // stamps are not the writes `device_writes` keeps.
        if change.collection == .ledger { return }
        if page.openConflicts.contains("\(change.collection.rawValue)/\(change.key)") {
            try markWrittenBack(change.collection, key: change.key, local: local, merged: merged)
        }
        try noteStoredChange(
            change, local: local, merged: merged, fieldsText: fieldsText,
            newEntry: takenAsItCame ? prepared?.newEntry : nil,
            page: &page)
    }

    /// Marks a lost value written back when a pull brings it back as the
    /// field's value (another machine restored it, or wrote it again):
    /// `log --conflicts` says so on every machine, not only on the one that
    /// restored it, and restoring it here too is refused as done.
    private func markWrittenBack(
        _ collection: RecordCollection, key: String, local: RecordState, merged: RecordState
    ) throws {
        for (name, register) in merged.fields where local.fields[name]?.value != register.value {
            try markRestored(collection, key: key, field: name, value: register.value)
        }
    }

    /// Keeps the values that lost to the pulled record as conflicts; how many
    /// were newly kept.
    private func keepLosses(
        _ lost: [RecordState.LostValue], of change: ChangeRecord, local: RecordState, merged: RecordState
    ) throws -> Int {
        var losses = lost
        if change.writerVersions != nil || !change.fieldWriters.isEmpty {
            // This machine's own values that lost to a write that had
            // not seen them: the merged vector covers this machine's
            // writes, the writer's does not (a delete here lost to a
            // later edit made elsewhere without it). The writer of each
            // field where the record says it, else the newest one's.
            losses += try ownValuesUnseen(
                by: { change.fieldWriters[$0] ?? change.writerVersions }, local: local, merged: merged,
                collection: change.collection, key: change.key
            )
            .filter { own in !lost.contains { $0.field == own.field } }
        }
        // A ledger record is no one's rule: its losses are no conflicts.
        guard change.collection != .ledger else { return 0 }
        var kept = 0
        // Nor is a record's provenance (when and where it was first made),
        // nor a pulled value this machine's own edit, which won, replaced
        // here (a whole record relayed after a key change carries fields
        // its writer never changed).
        for value in losses where !RecordState.provenanceFields.contains(value.field) {
            if local.fields[value.field] == value.winner,
                try ownEdit(
                    value.winner, of: change.collection, key: change.key, field: value.field, replaced: value.lost)
            {
                continue
            }
            if try recordConflict(
                collection: change.collection, key: change.key, field: value.field, lost: value.lost,
                winner: value.winner)
            {
                kept += 1
            }
        }
        return kept
    }

    /// What a stored rule or browser record tells: who wrote it, the log
    /// entry and count of a changed value, a profile awaiting approval.
    private func noteStoredChange(
        _ change: ChangeRecord, local: RecordState, merged: RecordState, fieldsText: String,
        newEntry: PreparedRow.Entry?, page: inout PageProgress
    ) throws {
        let fresh = local.fields.isEmpty
        for (name, register) in merged.fields where fresh || local.fields[name] != register {
            page.heard.hear(register.stamp)
            // A value under this device's id that it did not hold:
            // another home's (``writesFromElsewhere()``).
            if register.stamp.device == deviceID {
                try noteWriteFromElsewhere(change.collection, key: change.key, field: name, stamp: register.stamp)
            }
        }
        // Only a value counts as a change here: a version vector that
        // grew alone is merged, but neither logged nor counted (a pull
        // whose pages only do that is not making progress).
        // Nor does a value of a record deleted here and still deleted:
        // nothing anyone sees changed.
        guard merged.fields != local.fields, !(local.isDeleted && merged.isDeleted) else { return }
        try logReceived(
            change.collection, key: change.key, before: local, after: merged, afterFieldsText: fieldsText,
            afterSequence: page.newestLocal, newEntry: newEntry)
        page.changed += 1
        // A profile whose arguments synced data may not choose: kept, never launched with them until approved here.
        if change.collection == .browsers, !merged.isDeleted,
            let profile = Self.browser(key: change.key, state: merged).profile,
            try record(.browsers, key: profile.base).map({
                Self.browser(key: profile.base, state: $0).profile == nil
            }) ?? true,
            let reason = try Self.approvalProblem(
                Self.browser(key: change.key, state: merged), approved: approvedProfiles)
        {
            page.awaitingApproval.append((change.key, reason))
        }
    }

    /// What a page leaves besides its records: the received log trimmed,
    /// the devices heard from, the cursor and epoch, the clock, the records
    /// set aside.
    private func finishPulledPage(_ page: PageProgress, cursor: Int64, epoch: String) throws {
        if page.changed > 0 { try trimReceivedLog() }
        for (device, newest) in page.heard.newest {
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
        if page.pulledHigh > 0 { try setMeta("pulled_high", String(page.pulledHigh)) }
        try persistClock()
        try keepPulledAside(page.kept.filter { !page.passed.contains("\($0.collection)/\($0.filedKey)") })
        if page.stored { try setMeta("ledger_check_due", "1") }
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

    /// The stamp of this device's latest change (a device's changes are
    /// stamped in order, re-stamped ones too), nil before its first.
    public func lastOwnChangeStamp() throws -> HLCTimestamp? {
        try refreshDeviceID()
        return try read {
            try database.queryFirst(
                "SELECT fields FROM changes WHERE device = ? AND kind = 'local' ORDER BY device_seq DESC LIMIT 1",
                [.text(deviceID)]
            ) { try RecordCoding.decodeState(fields: $0.string(0) ?? "{}", versions: "{}").newestStamp } ?? nil
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
}
