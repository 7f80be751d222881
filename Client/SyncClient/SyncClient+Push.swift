import Cryptography
import JSON
import Replica
import SyncCore

/// The push: this replica's unpushed changes to the server in batches,
/// each answer checked (its acknowledgement against this device's chain,
/// the conflicts and refusals it reports against the batch sent) and the
/// repairs a refusal asks for carried out.
extension SyncClient {
    /// Sends every unpushed change, in batches of at most ``Options/pushBatch``
    /// changes and ``Options/pushBatchBytes`` bytes; a retry after a lost
    /// answer is safe. What the server says about this device's numbers is
    /// checked against the change log: a `gap` rewinds to where the server
    /// stands, reused numbers (`diverged`, or an acknowledgement whose digest
    /// is not ours) give this replica a new device id, a stamp refused as too
    /// far ahead re-stamps the unpushed changes. Each repair is tried once per
    /// push, so a server that keeps refusing cannot make this loop.
    @discardableResult
    public func push() throws -> Summary {
        try locked {
            try pushEverything()
            try noteOwnLedger()
            return summary
        }
    }

    /// Brings the server in line (see ``prepareSync()``) and sends every
    /// unpushed change, then this device's name. Holding the lock.
    func pushEverything() throws {
        try checkCopied()
        try retryingAfterMovingForward {
            try prepareSync()
            try pushLocked()
        }
        // Once the server has taken this device's edits, its name goes up
        // too (the first push, a replica made before names synced, a copy
        // that took a new id). Not counted: `pushed` counts edits.
        if try replica.publishDeviceName() {
            let edits = summary.pushed
            try pushLocked()
            summary.pushed = max(edits, summary.pushed - 1)
        }
        // Every batch answered: the ledger's shards and head, in one request.
        try finishLedger()
    }

    @discardableResult
    private func pushLocked() throws -> Summary {
        pushingBatches = true
        defer { pushingBatches = false }
        // The decisions; this function carries them out.
        var machine = PushMachine()
        var state = try replica.syncState()
        let total = try replica.unpushedCount()
        var done = 0
        // Whole records the server still needs from an earlier sync go first.
        let undelivered = try replica.undeliveredRecords()
        if !undelivered.isEmpty { try relay(undelivered, needed: true) }
        // A ledger request whose answer was lost goes again, the same,
        // before any batch builds a pending record on the head it writes.
        if var book = try ledgerBook(), book.unconfirmed != nil { try sendLedgerRequest(&book) }
        // The chain through the last change the server acknowledged, carried
        // from batch to batch (the log's stored chains are the fallback).
        var carried: (sequence: Int64, chain: String)?
        // The batch after the one in flight, prepared while the server works
        // on it (reading, sealing and writing 1,000 changes takes about as
        // long as the server's merge); used only when the server took the
        // whole batch in flight and nothing was repaired.
        var upcoming: Batch?
        // An honest server moves the acknowledgement on at almost every
        // answer, by a batch (or up to the records it asks for whole); what
        // does not is a stall: a refusal and its repair (a rewind, a fork, a
        // re-stamp), a new epoch or account, an answer that takes nothing.
        // Each answer that is no stall moves the mark on by a change at
        // least, and the mark goes back only with a repair (each bounded by
        // ``PushMachine``), so the push ends; answers that never let it
        // finish (an acknowledgement always one short) stop it here, however
        // many batches or records the work takes.
        var requests = 0
        var stalls = 0
        var mark = state.pushedThrough
        func stalled() throws {
            stalls += 1
            state = try replica.syncState()
            mark = state.pushedThrough
        }
        while true {
            requests += 1
            if stalls > Self.maxPushStalls {
                throw SyncError.badAnswer(
                    """
                    the server's answers never let this push finish (\(requests - 1) requests for \(total) change(s)): \
                    stopped; every edit is kept for the next sync
                    """)
            }
            let batch = try upcoming.take() ?? nextBatch(after: state.pushedThrough)
            let (plain, changes, texts, digests) = (batch.plain, batch.wire, batch.texts, batch.digests)
            guard let first = changes.first, let last = changes.last else { break }
            // What the server answers about is named by hidden keys when sealed.
            let readable = Self.readableKeys(wire: changes, plain: plain)
            func shown(_ collection: RecordCollection, _ key: String) -> String {
                readable["\(collection.rawValue)/\(key)"] ?? key
            }
            let base = carried?.sequence == first.sequence - 1 ? carried?.chain : try storedChain(first.sequence - 1)
            carried = nil // a repair below rewrites what follows it
            let chains = (base ?? (first.sequence == 1 ? "" : nil)).map {
                ChangeRecord.chain(digests: digests, after: $0)
            }
            /// Our chain through `sequence`: the base or this batch's when they hold it, else the log's.
            func ourChain(_ sequence: Int64) throws -> String? {
                if sequence == first.sequence - 1, let base { return base }
                if let chains, sequence >= first.sequence, sequence <= last.sequence {
                    return chains[Int(sequence - first.sequence)]
                }
                return try storedChain(sequence)
            }
            var request = PushRequest(
                device: replica.deviceID, from: first.sequence, to: last.sequence, changes: changes,
                base: base, since: state.pullCursor, epoch: state.epoch, keyID: keyID)
            // The batch's pending record, made now (not while the batch
            // before was in flight). The book this client keeps changes only
            // with an accepted answer: a refusal (or an error) leaves it as
            // it was, and the record made again takes the same slot with a
            // newer stamp, over whatever was committed.
            var book = try ledgerBook()
            // Each change's write as the ledger names it (its record's tag,
            // an HMAC), made once for the pending record and the answer.
            let writes = book == nil ? [] : ledgerWrites(plain, sealed: changes)
            if book != nil { request.ledger = try sealed(try pendingLedgerRecords(for: writes, book: &book!)) }
            let answer: JSONValue
            var prepared: Batch?
            do {
                answer = try sendRecords(to: "/v1/push", body: request.body(changeTexts: texts)) {
                    // A failure here is met again, and reported, when the batch is read for real.
                    prepared = try? self.nextBatch(after: last.sequence)
                }
            } catch SyncError.refused(let code, _) where PushMachine.repairable.contains(code) {
                // The exchange kept the refusal whole (with what the server has of this device).
                let refusal = lastRefusal ?? WireError(code: code, message: "")
                try carryOut(machine.refused(refusal, ourDigest: try storedChain(refusal.acknowledged ?? 0)))
                try stalled()
                continue
            }
            let response: PushResponse
            do { response = try PushResponse(json: answer) } catch { throw SyncError.badAnswer(error.message) }
            if try noteAccount(response.account) {
                summary.fullResync = true
                try prepareSync()
                try stalled()
                continue
            }
            if try handleEpoch(response.epoch) {
                try stalled()
                continue
            }
            let ours =
                response.acknowledged > 0 && !response.acknowledgedDigest.isEmpty
                ? try ourChain(response.acknowledged) : nil
            switch machine.checkAcknowledged(response, ourChain: ours, last: lastRefusal) {
            case .stop(let refusal)?:
                throw SyncError.stop(refusal, server: lastRefusal)
            case .fork?:
                try fork()
                try stalled()
                continue
            case nil:
                // The server's chain of this device is this replica's: its ledger may be written.
                if let ours, ours == response.acknowledgedDigest { ledgerChainConfirmed = true }
            }
            // What the answer reports, checked against the batch before any of it is believed.
            let review = try PushMachine.review(
                response, sent: changes, device: replica.deviceID, shown: shown,
                replacedStamp: { try replica.replacedStamps(ofChange: $0)[$1] })
            for finding in review.findings {
                switch finding {
                case .conflict(let lost): try recordConflict(lost, key: shown(lost.collection, lost.key))
                case .problem(let problem): summary.problems.append(problem)
                }
            }
            let refused = review.refused
            let needed: Set<Int64>
            switch machine.accept(response, last: lastRefusal) {
            case .accept(let relaying): needed = relaying
            case .stop(let refusal): throw SyncError.stop(refusal, server: lastRefusal)
            }
            if !needed.isEmpty {
                let keys = plain.filter { needed.contains($0.sequence) }.map { ($0.collection, $0.key) }
                try replica.markUndelivered(keys, true)
                try relay(try replica.wholeRecords(keys), needed: true)
            }
            if needed.isEmpty && response.acknowledged == last.sequence, let prepared,
                prepared.wire.first.map({ $0.sequence == last.sequence + 1 }) ?? true
            {
                upcoming = prepared
            }
            let delivered = changes.lazy.filter {
                $0.sequence <= response.acknowledged && $0.sequence > state.pushedThrough
            }.count
            // The writes the server applied go into this device's ledger (a
            // refused change never does), kept with the acknowledgement.
            var ledgerWrites = zip(plain, writes).filter { change, _ in
                change.sequence <= response.acknowledged && refused[change.sequence] == nil
            }.map(\.1)
            // Changes past the batch the server says it applied (an earlier
            // try of them whose answer was not taken: the account's epoch
            // changed in it, a restore was found): applied, and no batch of
            // this push sends them again to fold them.
            if book != nil, response.acknowledged > last.sequence {
                ledgerWrites += self.ledgerWrites(
                    try replica.unpushedChanges(
                        after: last.sequence, limit: Int(min(response.acknowledged - last.sequence, 100_000))))
            }
            // The batch's pending records stay in the chain even when a retry
            // of applied changes did not take them: the first try did, and the
            // head that folds the chain must fold them.
            // With this device's writes relayed inside the push so far (records
            // the server asked for whole): taken, whatever the answer acknowledged.
            let relayed = book.map(takeRelayedInPush(into:)) ?? []
            if book != nil { book!.answered(acknowledging: ledgerWrites + relayed) }
            // One commit with what the acknowledgement moves (and the clock
            // offset of the answer): each commit waits for a disk flush.
            try replica.transaction {
                try replica.markPushed(through: response.acknowledged)
                try replica.noteRefusals(
                    first: first.sequence, last: min(last.sequence, response.acknowledged), refused)
                // The chain through the last change acknowledged is kept: the next
                // pull and push prove this replica's history by it without sealing
                // the batch again. One in between, if a `gap` ever asks for it, is
                // computed from the one kept before (one row written, not 1,000:
                // writing them all took a fifth of the time between batches).
                if let chains, response.acknowledged >= first.sequence {
                    let through = min(response.acknowledged, last.sequence)
                    try replica.keepChains([(through, chains[Int(through - first.sequence)])])
                }
                if let book { try keepLedgerBook(book, tags: (ledgerWrites + relayed).map(\.tag)) }
            }
            state.pushedThrough = response.acknowledged
            if response.acknowledged > mark { mark = response.acknowledged } else { stalls += 1 }
            if response.acknowledged > 0, let chain = try ourChain(response.acknowledged) {
                carried = (response.acknowledged, chain)
            }
            done += delivered
            summary.pushed += delivered
            progress?("pushed", min(done, total), total)
        }
        return summary
    }

    /// Answers of one push that do not move the acknowledgement on (a
    /// refusal and its repair, a new epoch, an answer that takes nothing)
    /// before it stops: an honest server needs a few.
    public static let maxPushStalls = 24

    /// Carries out the repair ``PushMachine`` chose for a refused batch;
    /// the push then goes on from where the repair left the log.
    private func carryOut(_ repair: PushMachine.Repair) throws {
        switch repair {
        case .encryptAgainAndRelayAll:
            try replica.requireFullRelay()
            try prepareSync()
        case .rewind(let sequence):
            try replica.rewindPushed(to: sequence)
        case .fork:
            try fork()
        case .restamp(let markPushedThrough, let relayStampedAhead):
            if let markPushedThrough { try replica.markPushed(through: markPushedThrough) }
            // Changes the server had acknowledged before it was restored
            // keep their stamps: their records go up whole first (a
            // relay takes stamps further ahead), so re-stamping them
            // below what others wrote since loses nothing.
            let accepted = try replica.onceAcknowledgedRecords()
            if !accepted.isEmpty { try relay(accepted) }
            // Refused again after re-stamping: the edits are above values
            // this replica holds that the server does not (stamped while
            // a clock ran fast, then lost to a restore). Those go up first.
            if relayStampedAhead {
                try relay(try replica.recordsStamped(after: try replica.serverTime() + 60_000))
            }
            summary.restamped += try replica.restampUnpushed()
        case .stop(let refusal):
            throw SyncError.stop(refusal, server: lastRefusal)
        }
    }

    /// The next unpushed changes, at most a batch by count and by bytes (one
    /// change alone may exceed the byte budget; the server's limits still hold).
    /// - Returns: the changes as the replica holds them and as they are sent
    ///   (sealed in an encrypted account), in the same order, with the JSON
    ///   text and the digest of each as sent.
    private func nextBatch(after sequence: Int64) throws -> Batch {
        let candidates = try replica.unpushedChanges(after: sequence, limit: options.pushBatch)
        let prepared = try Self.wireChanges(candidates, cipher: cipher)
        let batch = prepared.prefix(byteBatch(prepared.lazy.map(\.text.count)))
        return Batch(
            plain: Array(candidates.prefix(batch.count)), wire: batch.map(\.wire), texts: batch.map(\.text),
            digests: batch.map(\.digest))
    }

    /// Changes to push: as the replica holds them and as they are sent, with
    /// the text and the digest of each as sent.
    struct Batch {
        let plain: [ChangeRecord]
        let wire: [ChangeRecord]
        let texts: [[UInt8]]
        let digests: [String]
    }

    /// The readable key of each record as sent, by `collection/key` as the
    /// server names it in its answers (a hidden key when sealed).
    static func readableKeys(wire: [ChangeRecord], plain: [ChangeRecord]) -> [String: String] {
        Dictionary(
            zip(wire, plain).map { ("\($0.collection.rawValue)/\($0.key)", $1.key) },
            uniquingKeysWith: { first, _ in first })
    }

    /// A change as it is sent (sealed when the account is encrypted), with
    /// its JSON text and digest: the request is made of these texts, so each
    /// change is written once.
    struct WireChange: Sendable {
        let wire: ChangeRecord
        let text: [UInt8]
        let digest: String

        init(_ change: ChangeRecord, cipher: RecordCipher?) throws(RecordCipherError) {
            wire = try cipher?.seal(change) ?? change
            (text, digest) = wire.jsonBytesAndDigest
        }
    }

    /// Each change as it is sent (see ``WireChange``); a change the cipher
    /// refuses (a field named like its own) is a usage error.
    static func wireChanges(_ changes: [ChangeRecord], cipher: RecordCipher?) throws(SyncError) -> [WireChange] {
        do {
            return try changes.map { change throws(RecordCipherError) in try WireChange(change, cipher: cipher) }
        } catch { throw .usage("\(error)") }
    }

    /// How many texts of these sizes (at least one) fit in a request of
    /// ``Options/pushBatchBytes``.
    func byteBatch(_ sizes: some Sequence<Int>) -> Int {
        var bytes = 256
        var count = 0
        for size in sizes {
            if count > 0 && bytes + size + 1 > options.pushBatchBytes { break }
            bytes += size + 1
            count += 1
        }
        return count
    }

    /// The chain digest of this device's changes through `sequence`, as
    /// sent (sealed in an encrypted account): what the server knows this
    /// device's history by. Computed from the replica's log when it has
    /// none yet, and kept there. Nil when the log lacks the change.
    func storedChain(_ sequence: Int64) throws -> String? {
        switch try replica.storedChain(sequence) {
        case .none:
            return nil
        case .known(let chain):
            return chain
        case .missing(let base, let changes):
            let wire = try Self.wireChanges(changes, cipher: cipher)
            let chains = ChangeRecord.chain(digests: wire.map(\.digest), after: base)
            try replica.keepChains(zip(changes, chains).map { ($0.sequence, $1) })
            return chains.last
        }
    }
}
