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
    /// The stable code of the refusal or stop the last sync ended with
    /// (docs/protocol.md's error codes: `key_rotated`, `encrypted`, …), when
    /// it ended with one (what a window offers to do about it);
    /// ``finishedCode`` when the sync finished and `problem` is what it said.
    public var problemCode: String?
    public static let finishedCode = "finished"
    /// Which part kept `problem` (the newest of ``problems``).
    public var problemIn: SyncPart = .sync
    /// Every problem kept, newest first: one a part at most (a push's, a
    /// pull's, a sync's own), each ended by the next push or pull that
    /// finishes without one (which ends the sync's own too: it ran what a
    /// sync runs besides) and all by a sync; `problem` is the first.
    public var problems: [KeptProblem] = []
    /// Whether the last sync stopped before it was done (not: finished, saying `problem`).
    public var stopped: Bool { !problem.isEmpty && problemCode != Self.finishedCode }
    /// Whether any answer (a refusal too) told this machine the server's time.
    public var clockKnown: Bool = false
}

/// What a kept problem came from: a push, a pull (alone, or a sync's
/// pushing or pulling), or the rest of a sync.
public enum SyncPart: String, Sendable, Equatable, CaseIterable {
    case sync, push, pull

    /// Its meta keys: the message, when, the code (a sync's are the keys
    /// every problem was kept under before parts were).
    var keys: (problem: String, at: String, code: String) {
        ("\(rawValue)_problem", "\(rawValue)_problem_at", "\(rawValue)_problem_code")
    }
}

/// One problem kept for `brsync status` (``SyncState/problems``).
public struct KeptProblem: Sendable, Equatable {
    public let part: SyncPart
    public let message: String
    public let atMillis: Int64?
    /// The refusal's or stop's code, or ``SyncState/finishedCode``.
    public let code: String?
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
        let problems = try keptProblems()
        return SyncState(
            remoteURL: try meta("remote_url"), caFile: try meta("remote_ca"), epoch: try meta("epoch"),
            pullCursor: Int64(try meta("pull_cursor") ?? "") ?? 0,
            pushedThrough: Int64(try meta("pushed_through") ?? "") ?? 0,
            lastSyncMillis: Int64(try meta("last_sync") ?? ""), clockOffsetMilliseconds: try clockOffset(),
            account: try meta("account"), problem: problems.first?.message ?? "",
            problemAtMillis: problems.first?.atMillis, problemCode: problems.first?.code,
            problemIn: problems.first?.part ?? .sync, problems: problems,
            clockKnown: try pendingClockOffset != nil || meta("clock_offset") != nil)
    }

    /// The problems kept, newest first.
    private func keptProblems() throws -> [KeptProblem] {
        try SyncPart.allCases.compactMap { part in
            guard let message = try meta(part.keys.problem) else { return nil }
            return KeptProblem(
                part: part, message: message, atMillis: Int64(try meta(part.keys.at) ?? ""),
                code: try meta(part.keys.code))
        }
        .sorted { ($0.atMillis ?? 0) > ($1.atMillis ?? 0) }
    }

    /// Remembers why a push, a pull or the rest of a sync (`part`) did not
    /// finish, or what it said when it did (nil: nothing), for `brsync
    /// status`, with the code of the refusal or stop it ended with, if any.
    /// Only that part's problem is replaced.
    public func recordSyncProblem(_ problem: String?, code: String? = nil, in part: SyncPart = .sync) throws {
        try transaction {
            try setMeta(part.keys.problem, problem)
            try setMeta(part.keys.at, problem.map { _ in String(currentMillis) })
            try setMeta(part.keys.code, problem == nil ? nil : code)
        }
    }

    /// A push or pull (`part`) that finished ends its own problem and the
    /// sync's own (it ran what a sync runs besides pushing or pulling); a
    /// sync ends every one.
    public func clearSyncProblems(after part: SyncPart) throws {
        try transaction {
            for kept in SyncPart.allCases where part == .sync || kept == part || kept == .sync {
                try recordSyncProblem(nil, in: kept)
            }
        }
    }

    /// Points the replica at a server. A different server starts sync afresh
    /// (cursor, epoch and acknowledged pushes are the old server's).
    public func setRemote(url: String, caFile: String?) throws {
        try transaction {
            if try meta("remote_url") != url {
                for key in [
                    "epoch", "pull_cursor", "pushed_through", "last_sync", "account", "server_device_name",
                    "sealed_format",
                ] {
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
                "server_device_name", "sealed_format",
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
                SELECT device_seq, collection, key, fields, versions, manifest, sealed_format FROM changes
                WHERE device = ? AND kind = 'local' AND device_seq > ? ORDER BY device_seq LIMIT ?
                """, [.text(deviceID), .integer(sequence), .integer(Int64(limit))]
            ) { try ownChange($0) }
        }
    }

    /// Every write this machine made of the record `key` of `collection`,
    /// under whichever device id it had then, oldest first: what its pushes
    /// sealed (a relay sends each write it still holds in the same whole box).
    public func ownWrites(_ collection: RecordCollection, key: String) throws -> [ChangeRecord] {
        try read {
            try database.query(
                """
                SELECT device_seq, collection, key, fields, versions, manifest, sealed_format FROM changes
                WHERE collection = ? AND key = ? AND kind = 'local' ORDER BY seq
                """, [.text(collection.rawValue), .text(key)]
            ) { try? ownChange($0) } // an entry that does not read is no box: the relay seals anew
        }.compactMap { $0 }
    }

    /// A change-log row of this machine's own (`device_seq, collection, key,
    /// fields, versions, manifest, sealed_format`) as the push sends it.
    private func ownChange(_ row: Row) throws -> ChangeRecord {
        guard let collection = row.string(1).flatMap(RecordCollection.init(rawValue:)) else {
            throw ReplicaError.notAReplica(path: path, reason: "a change-log entry has an unknown collection")
        }
        var change = ChangeRecord(
            sequence: row.int64(0) ?? 0, collection: collection, key: row.string(2) ?? "",
            state: try RecordCoding.decodeState(fields: row.string(3) ?? "{}", versions: row.string(4) ?? "{}"),
            manifestText: row.string(5))
        // A format this brsync does not know (a later one's) is sent as the newest it knows.
        change.sealedFormat = row.int64(6).map { $0 >= 2 ? .two : .one }
        return change
    }

    /// Pins the sealed format of this device's changes numbered
    /// `sequences` (through the highest of them) that have none yet (never
    /// sent) to `format`, before they are first sent: one statement. A
    /// change logged while the account was marked format 2 was pinned to
    /// it then (``sealedFormat()``; the mark never turns back).
    public func pinSealedFormat(_ format: Wire.SealedFormat, of sequences: [Int64]) throws {
        guard let first = sequences.min(), let last = sequences.max() else { return }
        try refreshDeviceID()
        try transaction {
            try database.run(
                """
                UPDATE changes SET sealed_format = ?
                WHERE device = ? AND kind = 'local' AND device_seq BETWEEN ? AND ? AND sealed_format IS NULL
                """, [.integer(Int64(format.rawValue)), .text(deviceID), .integer(first), .integer(last)])
        }
    }

    /// How this machine seals its changes in an encrypted account: `.two`
    /// once a pull said the server marked the account (never taken back by
    /// a server's word; a new server starts over).
    public func sealedFormat() throws -> Wire.SealedFormat {
        try read { try meta("sealed_format") } == "2" ? .two : .one
    }

    /// Keeps that the account is marked format 2 (``sealedFormat()``).
    public func noteSealedFormat(_ format: Wire.SealedFormat) throws {
        guard format == .two, try sealedFormat() != .two else { return }
        try transaction { try setMeta("sealed_format", "2") }
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
    /// - Parameter epoch: the answer's epoch, taken with another account
    ///   (that account's timeline is the replica's from here on: it is not
    ///   a second start-over, and its records go up once).
    public func checkAccount(_ account: String, epoch: String? = nil) throws -> Bool {
        guard !account.isEmpty else { return false }
        // The account of the last answer (every answer after the first): nothing to write.
        if try meta("account") == account { return false }
        return try transaction {
            let known = try meta("account")
            try setMeta("account", account)
            guard let known, known != account else { return false }
            try setMeta("pull_cursor", "0")
            try setMeta("pushed_through", "0")
            try setMeta("relay_all", Self.accountRelay)
            if let epoch, !epoch.isEmpty, SessionRules.isPlainEpoch(epoch) { try setMeta("epoch", epoch) }
            // What the last syncs said was of the other account, and so
            // were the machines its pulls were heard from (`status`'s `heard:`).
            for part in SyncPart.allCases { try recordSyncProblem(nil, in: part) }
            try database.run("DELETE FROM device_writes")
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
            // A restored server: what it lost comes back by relays, or is lost for everyone.
            try database.run("DELETE FROM ledger_unmet")
        }
    }

    /// Remembers the first epoch this replica sees (nothing to redo).
    public func startNewEpochIfFirst(_ epoch: String) throws {
        try transaction {
            if try meta("epoch") == nil { try setMeta("epoch", epoch) }
        }
    }

    public func recordSync() throws {
        try transaction { try setMeta("last_sync", String(currentMillis)) }
    }
}
