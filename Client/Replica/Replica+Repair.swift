import Glibc
import Model
import Storage
import SyncCore

/// How a replica repairs its side of sync: a copied file takes a new device id,
/// edits stamped by a fast clock are re-stamped, a reconciliation after a purge
/// drops what the server deleted, and whole records go up when the server
/// needs them (see "What each side remembers" in Deploy/OPERATIONS.md).
extension Replica {
    /// Checks, before a sync, whether this replica file is the one that synced
    /// last time; a copy takes a new device id at once (its unpushed changes
    /// minted again under it), before any change number can collide. The first
    /// sync just records where the file is.
    /// - Returns: the new device id when the replica was a copy.
    @discardableResult
    public func takeNewDeviceIDIfCopied() throws -> String? {
        // A copied home, or one restored from a backup, is a new file: a copy
        // of a replica that may still sync, which must not reuse its device id.
        guard let identity = FileIdentity.of(path) else { return nil }
        let known = try meta("instance")
        if let known, FileIdentity.matches(known, identity) {
            if known != identity { try transaction { try setMeta("instance", identity) } } // the newer form
            return nil
        }
        // Only a replica that has talked to a server can be a copy that matters.
        let forked = try known != nil && syncState().epoch != nil ? forkDeviceID() : nil
        try transaction { try setMeta("instance", identity) }
        return forked
    }

    /// Whether a reconciling pull is under way (see ``beginReconcile()``).
    public func isReconciling() throws -> Bool { try meta("reconcile") != nil }

    /// Starts pulling everything from zero because the server purged a
    /// tombstone this replica never pulled: every key the server still has is
    /// noted while pulling, and ``finishReconcile(keep:)`` drops the rest.
    public func beginReconcile() throws {
        try transaction {
            try database.run("DELETE FROM reconcile_seen")
            try setMeta("reconcile", "1")
            try setMeta("pull_cursor", "0")
        }
    }

    /// Ends a reconciling pull. Live records the server no longer has
    /// (deleted and purged there) are dropped here too, except those with a
    /// change not yet pushed (an edit made here is kept and goes up whole);
    /// each dropped record is kept in the `removed` list, restorable. With
    /// `keep` (an encrypted account: a record leaves only with a deletion a
    /// key holder sealed, never on the server's word), none is dropped: they
    /// are marked undelivered and go up whole at the next push. Tombstones
    /// stay: should the server be restored to a time before the deletion,
    /// the relay after it carries the deletion back.
    @discardableResult
    public func finishReconcile(keep: Bool = false) throws -> ReconcileOutcome {
        try transaction {
            let pushed = Int64(try meta("pushed_through") ?? "") ?? 0
            let unseen = """
                FROM records WHERE deleted = 0 AND NOT EXISTS (
                    SELECT 1 FROM reconcile_seen s WHERE s.collection = records.collection AND s.key = records.key
                ) AND NOT EXISTS (
                    SELECT 1 FROM changes c WHERE c.device = ? AND c.kind = 'local' AND c.device_seq > ?
                    AND c.collection = records.collection AND c.key = records.key
                ) AND NOT EXISTS (
                    SELECT 1 FROM undelivered u WHERE u.collection = records.collection AND u.key = records.key)
                """
            let parameters: [DatabaseValue] = [.text(deviceID), .integer(pushed)]
            var outcome = ReconcileOutcome()
            if keep {
                try database.run(
                    "INSERT OR IGNORE INTO undelivered (collection, key) SELECT collection, key " + unseen, parameters)
                outcome.kept = database.changes
            } else {
                let first = try database.scalar("SELECT COALESCE(MAX(id), 0) FROM removed")?.int64Value ?? 0
                try database.run(
                    "INSERT INTO removed (collection, key, fields, versions, removed_at) SELECT collection, key, fields, versions, ? "
                        + unseen + " ORDER BY collection, key", [.integer(currentMillis)] + parameters)
                try database.run("DELETE " + unseen, parameters)
                outcome.removed = try database.query(
                    "SELECT id, collection, key FROM removed WHERE id > ? ORDER BY id", [.integer(first)]
                ) { row in
                    RemovedRecord(id: row.int64(0) ?? 0, collection: row.string(1) ?? "", key: row.string(2) ?? "")
                }
                // What a device's ledger names may be gone from here now.
                if !outcome.removed.isEmpty { try noteRecordsRemoved() }
            }
            try database.run("DELETE FROM reconcile_seen")
            try setMeta("reconcile", nil)
            return outcome
        }
    }

    /// What ending a reconcile did (``finishReconcile(keep:)``).
    public struct ReconcileOutcome: Sendable, Equatable {
        /// Records dropped, each kept in the `removed` list.
        public var removed: [RemovedRecord] = []
        /// Records the server no longer had, kept and marked to go up whole.
        public var kept = 0
    }

    /// Whole records holding a stamp later than `wallMillis` (in the server's
    /// time): values from a clock that ran fast, which this replica's edits
    /// must be stamped above.
    public func recordsStamped(after wallMillis: Int64) throws -> [ChangeRecord] {
        var result: [ChangeRecord] = []
        for collection in RecordCollection.allCases {
            for (key, state) in try records(collection)
            where state.fields.values.contains(where: { $0.stamp.wallMillis > wallMillis }) {
                result.append(ChangeRecord(sequence: 0, collection: collection, key: key, state: state))
            }
        }
        return result
    }

    /// The whole records of this device's changes that the server once
    /// acknowledged and no longer has: it was restored from an older copy,
    /// and a `gap` rewound how far it has this device's changes. Their
    /// stamps were accepted once, maybe from a clock that was fast then;
    /// relayed as they are (the server takes relayed stamps further ahead)
    /// they keep them, where re-stamping would put an acknowledged edit
    /// below what other devices wrote since, and lose it.
    public func onceAcknowledgedRecords() throws -> [ChangeRecord] {
        try refreshDeviceID()
        let keys = try read { () -> [(RecordCollection, String)] in
            let pushed = Int64(try meta("pushed_through") ?? "") ?? 0
            let acknowledged = Int64(try meta("acknowledged_high") ?? "") ?? 0
            guard acknowledged > pushed else { return [] }
            return try database.query(
                """
                SELECT DISTINCT collection, key FROM changes
                WHERE device = ? AND kind = 'local' AND device_seq > ? AND device_seq <= ?
                """, [.text(deviceID), .integer(pushed), .integer(acknowledged)]
            ) { row in (row.string(0).flatMap(RecordCollection.init(rawValue:)), row.string(1) ?? "") }
            .compactMap { collection, key in collection.map { ($0, key) } }
        }
        return try wholeRecords(keys)
    }

    /// The stamps of this device's changes the server never acknowledged
    /// (past both what is marked pushed and the highest acknowledgement):
    /// writes only a push carries, with its pending ledger record.
    public func unacknowledgedOwnStamps() throws -> Set<HLCTimestamp> {
        try refreshDeviceID()
        let after = try read {
            max(Int64(try meta("pushed_through") ?? "") ?? 0, Int64(try meta("acknowledged_high") ?? "") ?? 0)
        }
        return Set(
            try unpushedChanges(after: after, limit: Int(Int32.max)).flatMap { $0.state.fields.values.map(\.stamp) })
    }

    /// Keeps `stamp` as a floor for a later ``restampUnpushed()`` (unless
    /// one as high is kept): a stamp of this device the server may hold
    /// (an edit a relay took with its pending records before the push did,
    /// changes left behind by a fork), which an edit re-stamped below would
    /// lose to.
    public func raiseRestampFloor(to stamp: HLCTimestamp) throws {
        try transaction {
            let kept = try meta("restamp_floor").flatMap(HLCTimestamp.init(text:))
            if kept.map({ stamp > $0 }) ?? true { try setMeta("restamp_floor", stamp.description) }
        }
    }

    /// This machine's clock in the server's time (the offset last learned).
    public func serverTime() throws -> Int64 { try serverTimeMillis() }

    /// The furthest wall time (ms) a stamp the server holds can have, as far
    /// as this machine can tell: `ahead` past the server's clock (four
    /// minutes: a push's stamps), or the newest stamp pulled from it. A stamp
    /// further ahead was made while a clock ran fast and never taken (the
    /// server refuses such stamps), or was lost to a restore: a new write
    /// need not go above it.
    public func stampCeiling(ahead: Int64 = 240_000) throws -> Int64 {
        max(try serverTimeMillis() + ahead, Int64(try meta("pulled_high") ?? "") ?? 0)
    }

    /// Notes whole records the server needs and has not taken (or has, now).
    public func markUndelivered(_ keys: [(RecordCollection, String)], _ undelivered: Bool) throws {
        guard !keys.isEmpty else { return }
        try transaction {
            for (collection, key) in keys {
                try database.run(
                    undelivered
                        ? "INSERT OR IGNORE INTO undelivered (collection, key) VALUES (?, ?)"
                        : "DELETE FROM undelivered WHERE collection = ? AND key = ?",
                    [.text(collection.rawValue), .text(key)])
            }
        }
    }

    /// The records the server still needs whole.
    public func undeliveredRecords() throws -> [ChangeRecord] {
        let keys = try read {
            try database.query("SELECT collection, key FROM undelivered ORDER BY collection, key") { row in
                (RecordCollection(rawValue: row.string(0) ?? "") ?? .rules, row.string(1) ?? "")
            }
        }
        return try wholeRecords(keys)
    }

    /// The whole local records for `keys`, for a relay.
    public func wholeRecords(_ keys: [(RecordCollection, String)]) throws -> [ChangeRecord] {
        try keys.compactMap { collection, key in
            try record(collection, key: key).map {
                ChangeRecord(sequence: 0, collection: collection, key: key, state: $0)
            }
        }
    }

    /// Takes the device id another process may have given this replica.
    func refreshDeviceID() throws {
        try read { try loadPersistedClock() }
    }

    /// Re-stamps the unpushed changes made while this machine's clock ran
    /// fast (the server refused a stamp as too far ahead): the first whose
    /// stamp is past what the server takes (``stampCeiling(ahead:)``) and
    /// every one after it (the clock ran on from there), or every unpushed
    /// change when none is (the server's allowance is its own). Nobody has
    /// seen them, so they get new stamps from the server-corrected clock, in
    /// their order, above every stamp this replica holds that is not theirs
    /// (``restampFloor(pending:pushed:)``); the records and the persisted
    /// clock are repaired with them. The changes before them were made in
    /// step and keep their time: stamped again, they would win over edits
    /// made on other machines since.
    /// - Returns: how many changes were re-stamped.
    @discardableResult
    public func restampUnpushed() throws -> Int {
        try transaction {
            try loadPersistedClock()
            let pushed = Int64(try meta("pushed_through") ?? "") ?? 0
            let unpushed = try unpushedChanges(after: pushed, limit: Int.max)
            let first = try firstRanAhead(unpushed) ?? unpushed.startIndex
            let pending = Array(unpushed[first...])
            try restampFromTheServersClock(pending, pushed: pushed)
            // Re-stamped, the changes a restored server once acknowledged
            // are new writes: none of their stamps was taken (a later repair
            // neither relays them as acknowledged nor keeps a floor above them).
            if let acknowledged = Int64(try meta("acknowledged_high") ?? ""), let restamped = pending.first?.sequence,
                acknowledged >= restamped
            {
                try setMeta("acknowledged_high", String(max(pushed, restamped - 1)))
            }
            return pending.count
        }
    }

    /// Gives `pending` (unpushed changes after `pushed`, in order) stamps
    /// from the clock set back to the server's time, above ``restampFloor(pending:pushed:)``.
    private func restampFromTheServersClock(_ pending: [ChangeRecord], pushed: Int64) throws {
        resetClock(to: try restampFloor(pending: pending, pushed: pushed))
        try restamp(pending, asDevice: nil)
        try persistClock()
    }

    /// The stamp re-stamped changes go above: the highest this replica holds
    /// that is not one of the unpushed changes' own (`pending`, after
    /// `pushed`), nor further ahead than the server could hold.
    private func restampFloor(pending: [ChangeRecord], pushed: Int64) throws -> HLCTimestamp {
        let pendingStamps = Set(pending.flatMap { $0.state.fields.values.map(\.stamp) })
        var seen = HLCTimestamp.zero(device: deviceID)
        for collection in RecordCollection.allCases {
            for (_, state) in try records(collection) {
                for register in state.fields.values
                where !pendingStamps.contains(register.stamp) && register.stamp > seen {
                    seen = register.stamp
                }
            }
        }
        for change in try database.query(
            "SELECT fields, versions FROM changes WHERE device = ? AND kind = 'local' AND device_seq <= ?",
            [.text(deviceID), .integer(pushed)],
            { try RecordCoding.decodeState(fields: $0.string(0) ?? "{}", versions: $0.string(1) ?? "{}") })
        {
            for register in change.fields.values where register.stamp > seen { seen = register.stamp }
        }
        // A stamp further ahead than the server's clock and everything pulled
        // from it was never the server's: nothing need (or could) go above it.
        let acceptable = try stampCeiling()
        // The unpushed changes' own stamps the server may hold (an account
        // that started over unpushes every change, and other machines may
        // hold them too): not that far ahead, or acknowledged (a server
        // takes stamps up to a day ahead of its clock). An edit is never
        // re-stamped below what it was then, or a write made between the two
        // stamps would win over it.
        if let taken = try stampsTheServerMayHold(pending) { seen = max(seen, taken) }
        // The same, for changes that took a new id since (``forkDeviceID()``).
        if let kept = try meta("restamp_floor").flatMap(HLCTimestamp.init(text:)), kept > seen,
            kept.wallMillis <= (try stampCeiling(ahead: Self.serverStampAllowance))
        {
            seen = kept
        }
        // What the unpushed edits overwrote: gone from the records, still
        // below the edits (unless it was one of them).
        for text in try database.query(
            "SELECT overwrote FROM changes WHERE device = ? AND kind = 'local' AND device_seq > ? AND overwrote IS NOT NULL",
            [.text(deviceID), .integer(pushed)], { $0.string(0) ?? "" })
        {
            if let stamp = HLCTimestamp(text: text), !pendingStamps.contains(stamp), stamp > seen,
                stamp.wallMillis <= acceptable
            {
                seen = stamp
            }
        }
        // Above every stamp pulled: an edit that won here over a write pulled
        // since stays above it (its register never moves back below what a
        // ledger check found met).
        if let pulled = Int64(try meta("pulled_high") ?? ""), pulled >= seen.wallMillis {
            seen = HLCTimestamp(wallMillis: pulled + 1, counter: 0, device: deviceID)
        }
        return seen
    }

    /// How far ahead of its clock a server takes a stamp (brsyncd's default).
    static let serverStampAllowance: Int64 = 86_400_000

    /// The highest of the stamps of `pending` (this device's unpushed
    /// changes) that the server may hold: no further ahead than a push's
    /// (``stampCeiling(ahead:)``), or of a change it acknowledged once and no
    /// further ahead than it takes; nil for none.
    private func stampsTheServerMayHold(_ pending: [ChangeRecord]) throws -> HLCTimestamp? {
        let acknowledged = Int64(try meta("acknowledged_high") ?? "") ?? 0
        let (near, day) = (try stampCeiling(), try stampCeiling(ahead: Self.serverStampAllowance))
        return pending.flatMap { change in
            change.state.fields.values.map(\.stamp).filter {
                $0.wallMillis <= near || (change.sequence <= acknowledged && $0.wallMillis <= day)
            }
        }.max()
    }

    /// Gives this replica a new device id, because the server has this
    /// device's change numbers with other content: the replica is a copy of
    /// another (a copied home) or was restored from an older copy. Its
    /// unpushed changes are minted again under the new id (numbered from 1,
    /// each stamped with the time it was made: ``stampUnderNewID(_:)``), so
    /// nothing either copy wrote is lost; the other copy keeps the old id.
    /// The changes' stamps that the server may hold are kept as a floor for
    /// a later ``restampUnpushed()``.
    /// - Returns: the new device id.
    @discardableResult
    public func forkDeviceID() throws -> String {
        let decidedAs = deviceID
        return try transaction {
            try loadPersistedClock()
            // Another process forked already: the server's answer was about the old id.
            guard deviceID == decidedAs else { return deviceID }
            let pushed = Int64(try meta("pushed_through") ?? "") ?? 0
            let pending = try unpushedChanges(after: pushed, limit: Int.max)
            // The changes' stamps the server may hold: should the server
            // refuse the changes under the new id (made while the clock ran
            // fast), the re-stamp from the clock goes above them.
            if let taken = try stampsTheServerMayHold(pending) { try raiseRestampFloor(to: taken) }
            let old = deviceID
            try adoptDeviceID(Self.makeDeviceID())
            try noteFormerID(old)
            try restamp(pending, asDevice: old)
            try persistClock()
            try setMeta("pushed_through", "0")
            try restampWhatRanAhead()
            return deviceID
        }
    }

    /// Gives `pending` (this device's unpushed changes, in order) new stamps;
    /// records whose field still holds an old stamp take the new one. A
    /// field the record holds with another stamp was overwritten since (by a
    /// later edit here or a value pulled): it leaves the change, so the new
    /// stamp cannot make an old edit win over what came after it. Without
    /// `oldDevice` (the clock ran fast), the stamps come from the clock. With
    /// it, the changes move to this (new) device id, keep the time they were
    /// made (``stampUnderNewID(_:)``), are numbered from 1, and their
    /// versions count for it.
    private func restamp(_ pending: [ChangeRecord], asDevice oldDevice: String?) throws {
        // Old stamp → new one: a later change that overwrote an earlier one
        // names the earlier one's new stamp as what it overwrote.
        var renamed: [HLCTimestamp: HLCTimestamp] = [:]
        // The old stamps of the changes not re-stamped yet: a manifest names
        // only what was sent before its change.
        var later: [HLCTimestamp: Int] = [:]
        // The records whose first unsent change was met (``VersionVector/lowering(_:to:)``).
        var firstOfRecord: Set<String> = []
        for change in pending { for register in change.state.fields.values { later[register.stamp, default: 0] += 1 } }
        for (index, change) in pending.enumerated() {
            for register in change.state.fields.values {
                later[register.stamp]! -= 1
                if later[register.stamp] == 0 { later[register.stamp] = nil }
            }
            let stamp = try oldDevice == nil ? tickClock() : stampUnderNewID(change)
            var state = try record(change.collection, key: change.key) ?? RecordState()
            var fields: [String: StampedValue] = [:]
            for (name, register) in change.state.fields {
                renamed[register.stamp] = stamp
                if let current = state.fields[name], current.stamp != register.stamp { continue } // overwritten since
                fields[name] = StampedValue(register.value, stamp: stamp)
                state.fields[name] = fields[name]
            }
            if let oldDevice {
                // The record counted this change (and any after it) under
                // the old id: a copy of this home counts its own edits with
                // the same numbers, so the record would say it had seen
                // that copy's edit, and a value of it this edit overwrote
                // would be kept as a conflict nowhere. The old id's count
                // goes back to what it was before this home's first unsent
                // change of the record (never up); the change counts for the new id.
                if firstOfRecord.insert("\(change.collection.rawValue)/\(change.key)").inserted {
                    state.versions = state.versions.lowering(
                        oldDevice, to: change.state.versions[oldDevice].subtractingReportingOverflow(1).partialValue)
                }
                state.versions.increment(deviceID)
                state.versions = state.versions.capped(keeping: [deviceID])
            }
            try storeMerged(change.collection, key: change.key, state: state)
            let device = oldDevice ?? deviceID
            let overwrote = try database.scalar(
                "SELECT overwrote FROM changes WHERE device = ? AND device_seq = ?",
                [.text(device), .integer(change.sequence)])?.stringValue
                .flatMap(HLCTimestamp.init(text:)).map { renamed[$0] ?? $0 }
            let manifest = RecordManifest(of: state, through: stamp, excluding: Set(later.keys))
            try database.run(
                """
                UPDATE changes SET device = ?, device_seq = ?, fields = ?, versions = ?, overwrote = ?, chain = NULL, manifest = ?
                WHERE device = ? AND device_seq = ?
                """,
                [
                    .text(deviceID), .integer(oldDevice != nil ? Int64(index + 1) : change.sequence),
                    .text(RecordState.encodeFields(fields)),
                    .text(RecordState.encodeVersions(oldDevice != nil ? state.versions : change.state.versions)),
                    overwrote.map { .text($0.description) } ?? .null, .text(manifest.text(at: stamp)), .text(device),
                    .integer(change.sequence),
                ])
        }
    }

    /// After ``forkDeviceID()``: the changes made while this machine's clock
    /// ran fast keep stamps no push may carry (the server refuses one more
    /// than minutes ahead, and the changes are then stamped again), yet the
    /// relay that follows a key change would carry them (relays are taken up
    /// to a day ahead) and every machine's clock would run on from there.
    /// Those changes, and every one after them (the clock went on from the
    /// first), are stamped again from the server's clock, as a refused
    /// push's are; the ones before keep the time they were made.
    private func restampWhatRanAhead() throws {
        let moved = try unpushedChanges(after: 0, limit: Int.max)
        guard let first = try firstRanAhead(moved) else { return }
        try restampFromTheServersClock(Array(moved[first...]), pushed: 0)
    }

    /// Where in `changes` (in order) the first stamped past what the server
    /// takes (``stampCeiling(ahead:)``) is: made while the clock ran fast;
    /// nil for none.
    private func firstRanAhead(_ changes: [ChangeRecord]) throws -> Int? {
        let ceiling = try stampCeiling()
        return changes.firstIndex { change in change.state.fields.values.contains { $0.stamp.wallMillis > ceiling } }
    }

    /// The stamp a change moved to a new device id (a copied home, a key
    /// change) takes: the time it was made, one counter step later, under
    /// the new id. An edit made on another machine after it still wins over
    /// it, as it would have had this machine sent it before the change of id
    /// (a stamp of when it is sent would win over every edit made
    /// meanwhile); the step keeps it above every stamp the edit won over
    /// here, whichever way the new id compares with the old. The clock moves
    /// past it. One the server refuses as too far ahead (made while the
    /// clock ran fast) is stamped again from the clock, like any other
    /// (``restampUnpushed()``).
    private func stampUnderNewID(_ change: ChangeRecord) throws -> HLCTimestamp {
        guard let made = change.state.fields.values.map(\.stamp).max(), made.counter < UInt32.max else {
            return try tickClock()
        }
        let stamp = HLCTimestamp(wallMillis: made.wallMillis, counter: made.counter + 1, device: deviceID)
        clockObserve(stamp, wallMillis: try serverTimeMillis())
        return stamp
    }

    /// Every record this replica holds, in batches, for a relay after a restore.
    public func allRecords(
        afterCollection collection: RecordCollection?, key: String, limit: Int
    ) throws -> [ChangeRecord] {
        let order = RecordCollection.allCases.map(\.rawValue)
        let position = collection.flatMap { order.firstIndex(of: $0.rawValue) } ?? -1
        var result: [ChangeRecord] = []
        for (index, name) in order.enumerated() where index >= position {
            let rows = try read {
                try database.query(
                    "SELECT key, fields, versions FROM records WHERE collection = ? AND key > ? ORDER BY key LIMIT ?",
                    [.text(name), .text(index == position ? key : ""), .integer(Int64(limit - result.count))]
                ) { row in
                    ChangeRecord(
                        sequence: 0, collection: RecordCollection(rawValue: name) ?? .rules, key: row.string(0) ?? "",
                        state: try RecordCoding.decodeState(
                            fields: row.string(1) ?? "{}", versions: row.string(2) ?? "{}"))
                }
            }
            result += rows
            if result.count >= limit { break }
        }
        return result
    }
}
