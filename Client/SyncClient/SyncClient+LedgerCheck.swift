import Cryptography
import JSON
import Replica
import SyncCore
import SystemServices

/// What a run of the ledger checks read: whether every entry of every
/// ledger (else, of some devices, only what changed since their last
/// passing check), how many devices' ledgers, and how many records' registers.
public struct LedgerCheckRead: Sendable, Equatable {
    public var whole = true
    public var ledgers = 0
    public var registers = 0
    /// How long the checks took, asking again included (ms).
    public var milliseconds: Int64 = 0
}

/// The ledger checks at the end of a pull (Deploy/SECURITY.md, "A device's
/// own writes, counted"): for every other device whose ledger this machine
/// holds, checks 0–3 (``LedgerCheck``) against what it holds; a failure is
/// held, then alarms, and clears at the first pull after which it passes.
/// They change nothing held and block nothing: the sync goes on, and
/// `brsync status` says what stands and what to do.
extension SyncClient {
    /// Runs the checks when a pull stored anything since they last ran
    /// (``Replica/ledgerChecksDue()``: kept with the pages, whatever cursor
    /// the server names) or a failure is held (it may clear, or come of
    /// age); an idle sync reads nothing more. A failure that alarms is said
    /// in the sync's problems.
    func checkLedgers() throws {
        guard options.checksLedgers, let cipher, let keyID else { return }
        let standing = try replica.ledgerFailures(now: replica.currentMillis)
        guard try replica.ledgerChecksDue() || !standing.isEmpty else { return }
        let started = Clock.monotonicMillis()
        let whole = try replica.ledgerCheckMustBeWhole(now: replica.currentMillis)
        var run = try ledgerResults(cipher: cipher, keyID: keyID, whole: whole)
        // What a failing ledger names and this machine lacks (the pull's
        // cursor passed it), asked for again and checked again with what
        // came: twice at most a sync (a ledger that came may name records
        // to ask for), and only while something fails.
        var asked: Set<PullRequest.Asked> = []
        for _ in 0..<2 {
            let next = Self.askedPart(run.missing.filter { !asked.contains($0) })
            guard !next.isEmpty else { break }
            asked.formUnion(next)
            do {
                try askAgain(next, for: "records a device's ledger names")
                run = try ledgerResults(cipher: cipher, keyID: keyID, whole: whole)
            } catch {
                summary.problems.append("asking the server again for records a device's ledger names: \(error)")
                break
            }
        }
        // This machine's clock, not the server's: a server cannot hold its
        // failures off by saying the time.
        summary.ledgerCheck = run.read
        summary.ledgerCheck?.milliseconds = Clock.monotonicMillis() - started
        let failures = try replica.noteLedgerChecks(
            run.results, checked: run.checked, whole: run.read.whole, unmet: run.unmet, now: replica.currentMillis)
        let names = try replica.deviceNames()
        for failure in failures where failure.alarming {
            summary.problems.append(Self.alarm(failure, names: names))
        }
        try noteWrittenElsewhere(run.own, rows: run.ownRows, fromElsewhere: run.fromElsewhere)
        try sendWithdrawals(run.withdrawals, failingBefore: Set(standing.map(\.device)))
    }

    /// Whether another home writes under this device's id: a record held
    /// under it that this device's book did not write; if so, where the
    /// server holds the id's stream (one request more), noted in the
    /// summary, and the other home's ledger taken in (Deploy/SECURITY.md,
    /// "Two live homes under one id", steps 2 and 3).
    private func noteWrittenElsewhere(
        _ held: LedgerBook.Held, rows: [(row: LedgerRow, key: Ledger.Key)], fromElsewhere: [WriteFromElsewhere]
    ) throws {
        guard let book = try ledgerBook() else { return }
        guard
            let reason = book.notWrittenHere(
                held, ownNewest: try replica.lastOwnChangeStamp().map(Ledger.Stamp.init),
                refused: try replica.abandonedLedgerStamps())
        else {
            // This device's ledger names every write of its id pulls brought.
            try replica.forgetWritesFromElsewhere(fromElsewhere)
            return
        }
        let standing: ChainEcho.Standing
        do { standing = try chainStanding() } catch { standing = .unknown }
        summary.writtenElsewhere = Summary.WrittenElsewhere(reason: reason, standing: standing)
        // The server says where the id's chain stands: the home whose chain
        // it is not forks at its next push; either mends the id's ledger,
        // the first to see the other's writes writing a ledger of both, the
        // other taking that one as its own (so two homes write once each).
        if standing != .unknown, standing != .otherAccount, options.takesInOtherHomes,
            try takeInWrittenElsewhere(book, rows: rows, fromElsewhere: held.fromElsewhere)
        {
            try replica.forgetWritesFromElsewhere(fromElsewhere)
        }
    }

    /// Step 3: what the other home's ledger names and this machine holds
    /// goes into this device's book, and its next ledger request (sent now)
    /// writes every shard again and a head above every record held under
    /// the id. Nothing is written when that cannot be done safely; the
    /// sync says why.
    /// - Parameter fromElsewhere: writes of the id that pulls brought (``LedgerBook/Held/fromElsewhere``).
    /// - Returns: whether this device's book names all of them now.
    private func takeInWrittenElsewhere(
        _ book: LedgerBook, rows: [(row: LedgerRow, key: Ledger.Key)],
        fromElsewhere: [UInt64: [String: Ledger.Stamp]]
    ) throws -> Bool {
        guard let cipher, let keyID else { return false }
        let device = replica.deviceID
        var other = LedgerCheck.Ledgers()
        var packed: [Int: [UInt8]] = [:]
        for (row, key) in rows {
            do throws(Ledger.Problem) {
                if let shard = try Self.place(row, key, into: &other) { packed[shard.index] = shard.packed }
            } catch {
                summary.problems.append(
                    "this machine's id holds a damaged ledger record '\(row.key)' (\(error.reason)): its ledger is not written again"
                )
                return false
            }
        }
        var tags: Set<UInt64> = []
        for shard in other.shards.values { for entry in shard.value.entries { tags.insert(entry.tag) } }
        for pending in other.pending.values { for entry in pending.value.entries { tags.insert(entry.tag) } }
        tags.formUnion(fromElsewhere.keys)
        try replica.tagRecords(keyID: keyID) { cipher.tag(collection: $0.rawValue, key: $1) }
        let registers = try replica.registers(tagged: tags)
        // Whole (its shards the ones its head counts) and covering this
        // book: it is this book's head from now on, and nothing is written.
        let whole = !LedgerCheck.failures(
            device: device, ledgers: other, register: { _ in nil }, newestRegister: nil,
            shardsHash: { Ledger.shardsHash($0, packed: packed) }
        ).contains { if case .shardsDiffer = $0 { true } else { false } }
        if whole, book.isCovered(by: other, fromElsewhere: fromElsewhere) {
            var adopted = book
            adopted.adopt(other)
            try keepLedgerBook(adopted, tags: adopted.entries.keys, confirmed: true)
            return true
        }
        var union = book
        if let why = union.takeIn(other, fromElsewhere: fromElsewhere, held: { registers[$0] }) {
            summary.problems.append(
                "another home wrote under this machine's id and its ledger cannot be taken in yet: \(why)")
            return false
        }
        try keepLedgerBook(union, tags: union.changedTags)
        let high = try replica.ownLedgerStampHigh().map(Ledger.Stamp.init)
        try sendLedgerRequest(&union, above: high)
        return true
    }

    /// Checks 0–3 on every other device's ledger held. Check 1 reads, of a
    /// device whose last check passed under the same head identity
    /// (``LedgerCheck/identity(of:)``), only the entries of shards written
    /// since, of its pending records, and of records set aside here; of
    /// every other device, every entry (all of them when `whole`).
    private func ledgerResults(cipher: RecordCipher, keyID: String, whole: Bool) throws -> LedgerRun {
        let heldRows = try replica.ledgerRows()
        var held = readLedgers(heldRows)
        // The newest stamp among each device's ledger records (a device forgotten here is checked again past it).
        let high = Replica.ledgerHighs(heldRows, except: replica.deviceID)
        let newest = Dictionary(
            try replica.deviceWrites().map { ($0.device, $0.newest) }, uniquingKeysWith: { max($0, $1) })
        try leaveOutForgotten(&held, ledgerHighs: high, writesHighs: newest)
        var run = LedgerRun()
        held.own.newestWrite = newest[replica.deviceID].map(Ledger.Stamp.init)
        run.fromElsewhere = try replica.writesFromElsewhere()
        for write in run.fromElsewhere {
            held.own.fromElsewhere[cipher.tag(collection: write.collection.rawValue, key: write.key), default: [:]][
                write.field] = Ledger.Stamp(write.stamp)
        }
        run.own = held.own
        run.ownRows = held.ownRows
        let ledgers = held.ledgers
        guard !ledgers.isEmpty || !held.damaged.isEmpty else { return run }
        // Every record set aside when a withdrawal is held (a flood of
        // unreadable records must not push one out, to be excused as held
        // nowhere); the newest 1,000 otherwise.
        let setAside = Set(
            try replica.pulledAside(limit: held.withdrawals.isEmpty ? 1_000 : 1_000_000).compactMap {
                Self.tag(ofHiddenKey: $0.filedKey)
            })
        let plan = try readingPlan(held, setAside: setAside, whole: whole)
        let tag: (RecordCollection, String) -> UInt64 = { cipher.tag(collection: $0.rawValue, key: $1) }
        let registers = try registers(for: plan, ledgers: ledgers.count, keyID: keyID, tag: tag)
        run.read = LedgerCheckRead(whole: plan.reading.isEmpty, ledgers: ledgers.count, registers: registers.count)
        // Writes earlier checks found missing: a ledger that passes now
        // must not have passed by no longer naming them.
        let formerIDs = Set(try replica.formerDeviceIDs().map(\.id))
        var formerFailures: [String: [LedgerCheck.Failure]] = [:]
        let stored = try replica.ledgerUnmet()
        let storedRegisters = try replica.registers(tagged: Set(stored.values.flatMap { $0.map(\.tag) }))
        var asking = AskingAgain(cipher: cipher)
        for (device, ledger) in ledgers {
            let failures = LedgerCheck.failures(
                device: device, ledgers: ledger,
                register: { tag in
                    setAside.contains(tag) ? .setAside : registers[tag].map { .applied($0) }
                },
                newestRegister: newest[device],
                shardsHash: { Ledger.shardsHash($0, packed: held.packed[device] ?? [:]) },
                reading: plan.reading[device],
                withdrawn: Self.withdrawn(held.withdrawals[device] ?? [], from: ledger))
            if formerIDs.contains(device) { formerFailures[device] = failures }
            // Still unmet: an earlier failure's write neither held here now
            // (nor a newer value of its field) nor set aside here.
            let dropped = (stored[device] ?? []).filter { write in
                !setAside.contains(write.tag)
                    && storedRegisters[write.tag]?[write.field].map { $0 >= write.stamp } != true
            }
            if failures.isEmpty, held.damaged[device] == nil, !dropped.isEmpty {
                try noteDropped(device, dropped, run: &run, asking: &asking)
                continue
            }
            if failures.isEmpty, held.damaged[device] == nil {
                run.checked[device] = Replica.LedgerChecked(
                    head: LedgerCheck.identity(of: ledger.head?.value), shards: plan.digests[device] ?? [:])
            }
            try noteResult(device, ledger, failures, registers: registers, run: &run, asking: &asking)
        }
        for (device, what) in held.damaged { run.results[device] = what }
        run.withdrawals = try withdrawalDecisions(
            ledgers.filter { formerIDs.contains($0.key) && held.damaged[$0.key] == nil }, failures: formerFailures,
            kept: held.ownWithdrawals, registers: registers, setAside: setAside, tag: tag)
        // Records first (they are what the user holds), then each failing
        // ledger's head and pending records before its shards.
        run.missing =
            asking.records.sorted { ($0.collection.rawValue, $0.key) < ($1.collection.rawValue, $1.key) }
            + asking.ledgerKeys
        return run
    }

    /// A ledger row's packed bytes (its register's text, base64url), nil for none.
    static func packedBytes(_ row: LedgerRow) -> [UInt8]? {
        row.fields.text?.withUnsafeBufferPointer { Crypto.base64URLDecode(utf8: $0) }
    }

    /// Reads one ledger row into `ledgers` (a head, a shard or a pending
    /// record of one device). - Returns: a shard's index and packed bytes.
    static func place(
        _ row: LedgerRow, _ key: Ledger.Key, into ledgers: inout LedgerCheck.Ledgers
    ) throws(Ledger.Problem) -> (index: Int, packed: [UInt8])? {
        guard let stamp = row.fields.stamp, let bytes = packedBytes(row) else {
            throw Ledger.Problem("it holds no packed ledger")
        }
        switch key {
        case .head:
            ledgers.head = .init(try Ledger.Head(bytes: bytes), stamp: stamp)
        case .shard(_, let index):
            let shard = try Ledger.Shard(bytes: bytes)
            guard shard.index == index else { throw Ledger.Problem("shard \(shard.index) under key \(index)") }
            ledgers.shards[index] = .init(shard, stamp: stamp)
            return (index, bytes)
        case .pending(_, let slot):
            ledgers.pending[slot] = .init(try Ledger.Pending(bytes: bytes), stamp: stamp)
        case .withdrawal:
            break
        }
        return nil
    }

    /// Each shard's digest (``Replica/LedgerChecked``): FNV-1a over its
    /// stamp and its bytes as held (packed again where not given). Not a
    /// secret: the shard is sealed by its device, so a server cannot choose
    /// bytes to collide.
    static func shardDigests(_ ledger: LedgerCheck.Ledgers, packed: [Int: [UInt8]]) -> [Int: UInt64] {
        ledger.shards.reduce(into: [:]) { digests, item in
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in Array(item.value.stamp.description.utf8) + [0] + (packed[item.key] ?? item.value.value.bytes) {
                hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
            }
            digests[item.key] = hash
        }
    }

    /// What an alarm says: whose writes, which, what it can mean, what to do.
    static func alarm(_ failure: LedgerFailure, names: DeviceNames) -> String {
        """
        the server may be withholding writes of \(names.display(failure.device)): \(failure.what). \
        Its last push may have been cut short: run 'brsync sync' on that device; if this still stands, \
        the server withholds its writes (ask its operator, or use another server). Everything here is kept.
        """
    }

    /// The failures of one device in words: the first few, by record where it is held.
    static func describe(
        _ failures: [LedgerCheck.Failure], named: [UInt64: (collection: RecordCollection, key: String)]
    ) -> String {
        func word(_ failure: LedgerCheck.Failure) -> String {
            guard case .unmet(let tag, let fields, let stamp, let setAside) = failure else {
                return failure.description
            }
            let what =
                fields == [RecordState.deletedField] ? "its deletion" : "its write of \(fields.joined(separator: ", "))"
            guard let record = named[tag] else {
                return "\(what) (\(Timestamp.iso8601(millis: stamp.wallMillis))) of a record not held here"
            }
            let named = "\(record.collection.rawValue) '\(record.key)'"
            return setAside
                ? "\(named) is set aside here"
                : "\(what) of \(named) (\(Timestamp.iso8601(millis: stamp.wallMillis))) is missing here"
        }
        let shown = failures.prefix(3).map(word).joined(separator: "; ")
        return failures.count > 3 ? "\(shown), and \(failures.count - 3) more" : shown
    }

    /// A record's tag from the hidden key the server files it under (`h1.` and base64url), or nil.
    static func tag(ofHiddenKey key: String) -> UInt64? {
        guard key.hasPrefix("h1."), let bytes = Crypto.base64URLDecode(String(key.dropFirst(3))), bytes.count >= 8
        else { return nil }
        return bytes.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }
}
