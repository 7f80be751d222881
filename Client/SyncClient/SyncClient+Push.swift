import Cryptography
import JSON
import Net
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
        try locked { try runAlone(.push) }
    }

    /// Sends every unpushed change, then this device's name, then the
    /// ledger request; the server brought in line before (``prepareSync()``).
    /// Holding the lock.
    func pushPhase() throws {
        try pushLocked()
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

    /// The push's driver: ``PushSession`` decides, this carries out each
    /// action and feeds back what came of it.
    private func pushLocked() throws {
        pushingBatches = true
        defer { pushingBatches = false }
        let total = try replica.unpushedCount()
        var done = 0
        // Whole records the server still needs from an earlier sync go first.
        let undelivered = try replica.undeliveredRecords()
        if !undelivered.isEmpty { try betweenBatches { try relay(undelivered, needed: true) } }
        // A ledger request whose answer was lost goes again, the same,
        // before any batch builds a pending record on the head it writes.
        if var book = try ledgerBook(), book.unconfirmed != nil { try sendLedgerRequest(&book) }
        var session = PushSession(pushedThrough: try replica.syncState().pushedThrough, unpushed: total)
        var input = PushSession.Input.begin
        // The batch after the one in flight, prepared while the server works
        // on it (reading, sealing and writing 1,000 changes takes about as
        // long as the server's merge); used only when the server took the
        // whole batch in flight and nothing was repaired.
        var upcoming: Batch?
        var flight: InFlight?
        // The batch answered before the one in flight, freed while the server works on the next.
        var retired: InFlight?
        // An answer settled and not committed yet is committed on every way
        // out (``commitAnswerWaiting()``; each path below commits it first).
        defer { try? commitAnswerWaiting() }
        while true {
            let action = session.next(input)
            // An answer waiting to be committed is, before anything but the
            // batch that carries it (``committing(_:)``).
            if case .send = action {} else { try commitAnswerWaiting() }
            switch action {
            case .send(let after, let carried):
                var sent: InFlight?
                input = try committing { whileWaiting in
                    // The push's first batch is small (``Options/firstBatch``).
                    let batch = try upcoming.take() ?? nextBatch(after: after, first: flight == nil)
                    guard !batch.wire.isEmpty else { return .nothingLeft }
                    sent = try InFlight(batch, carried: carried, client: self)
                    return try send(&sent!) {
                        _ = retired.take()
                        whileWaiting()
                    }
                }
                if sent != nil { (retired, flight) = (flight, sent) }
            case .repair(let repair):
                try carryOut(repair)
                input = .repaired(pushedThrough: try replica.syncState().pushedThrough)
            case .review:
                guard var sent = flight else { throw Self.pushOutOfStep }
                try review(&sent)
                flight = sent
                input = .reviewed
            case .keep(let acknowledged, let relaying):
                guard let sent = flight else { throw Self.pushOutOfStep }
                let (kept, next) = try keepAnswer(sent, through: acknowledged, relaying: relaying)
                if let next { upcoming = next }
                let delivered = sent.batch.wire.lazy.filter {
                    $0.sequence <= acknowledged && $0.sequence > session.pushedThrough
                }.count
                done += delivered
                summary.pushed += delivered
                progress?("pushed", min(done, total), total)
                let chain = acknowledged > 0 ? try sent.chain(through: acknowledged, client: self) : nil
                input = .kept(chain: chain, relayed: kept.relayedWhole)
            case .stop(let refusal):
                throw SyncError.stop(refusal, server: lastRefusal)
            case .giveUp(let message):
                throw SyncError.badAnswer(message)
            case .finished:
                // Records the server asked for whole that held an edit not
                // pushed yet: every edit is acknowledged now.
                if relaysHeldBack {
                    relaysHeldBack = false
                    let waiting = try replica.undeliveredRecords()
                    if !waiting.isEmpty { try betweenBatches { try relay(waiting, needed: true) } }
                }
                return
            }
        }
    }

    /// The session asked about an answer the driver does not hold (never: a bug here).
    static let pushOutOfStep = SyncError.badAnswer("the push lost track of the batch in flight (a bug in brsync)")

    /// Answers of one push that do not move the acknowledgement on and
    /// come with no work the push decided, before it stops (``PushSession/maxStalls``).
    public static let maxPushStalls = PushSession.maxStalls

    /// A batch sent, and what its answer is checked and kept with.
    struct InFlight {
        let batch: Batch
        var first: Int64 { batch.wire[0].sequence }
        var last: Int64 { batch.wire[batch.wire.count - 1].sequence }
        /// The chain through the change before the batch (nil when unknown).
        let base: String?
        /// The chain through each change of the batch, when the base is known.
        let chains: [String]?
        /// What the server answers about is named by hidden keys when sealed.
        let readable: [String: String]
        /// This device's ledger book, with the batch's pending record (nil
        /// in a readable account).
        var book: LedgerBook?
        /// Each change's write as the ledger names it (its record's tag, an
        /// HMAC), made once for the pending record and the answer.
        var writes: [LedgerBook.Write] = []
        /// The batch after this one, read while the server worked.
        var prepared: Batch?
        var response: PushResponse?
        /// The changes the server refused, by sequence, with why.
        var refused: [Int64: String] = [:]

        init(_ batch: Batch, carried: PushSession.Carried?, client: SyncClient) throws {
            self.batch = batch
            let first = batch.wire[0].sequence
            readable = batch.readable
            base = carried?.sequence == first - 1 ? carried?.chain : try client.storedChain(first - 1)
            chains = (base ?? (first == 1 ? "" : nil)).map { base in
                batch.ahead.flatMap { $0.base == base ? $0.chains : nil }
                    ?? ChangeRecord.chain(digests: batch.digests, after: base)
            }
        }

        func shown(_ collection: RecordCollection, _ key: String) -> String {
            readable["\(collection.rawValue)/\(key)"] ?? key
        }

        /// This replica's chain through `sequence`: the base or this batch's
        /// when they hold it, else the log's.
        func chain(through sequence: Int64, client: SyncClient) throws -> String? {
            if sequence == first - 1, let base { return base }
            if let chains, sequence >= first, sequence <= last { return chains[Int(sequence - first)] }
            return try client.storedChain(sequence)
        }
    }

    /// Sends the batch in flight (reading the next one meanwhile).
    /// - Parameter beforePreparing: run once the batch is written, before
    ///   the next one is read (an answer waiting to be committed).
    /// - Returns: what came of it: refused, on another timeline, or answered.
    private func send(_ flight: inout InFlight, beforePreparing: @escaping () -> Void) throws -> PushSession.Input {
        let (batch, last) = (flight.batch, flight.last)
        // Read for each batch: a repair or a new timeline moves the cursor and the epoch.
        let state = try replica.syncState()
        var request = PushRequest(
            device: replica.deviceID, from: flight.first, to: last, changes: batch.wire, base: flight.base,
            since: state.pullCursor, epoch: state.epoch, keyID: keyID)
        request.account = state.account.flatMap { CursorOrigin.isAccountID($0) ? $0 : nil }
        // The batch's pending record, made now (not while the batch before
        // was in flight). The book this client keeps changes only with an
        // accepted answer: a refusal (or an error) leaves it as it was, and
        // the record made again takes the same slot with a newer stamp, over
        // whatever was committed.
        flight.book = try ledgerBook()
        if flight.book != nil {
            flight.writes = ledgerWrites(batch.plain, sealed: batch.wire)
            request.ledger = try sealed(try pendingLedgerRecords(for: flight.writes, book: &flight.book!))
        }
        let answer: JSONValue
        var prepared: Batch?
        let sentFlight = flight
        do {
            // The body written while the batch before was in flight, when this is the request it was written for.
            let body =
                batch.ahead?.written.flatMap { $0.request == request ? $0.body : nil }
                ?? request.body(changeTexts: batch.texts)
            answer = try sendRecords(to: "/v1/push", body: body) {
                beforePreparing()
                // A failure here is met again, and reported, when the batch is read for real.
                prepared = try? self.nextBatch(after: last)
                if prepared != nil { self.writeAhead(&prepared!, after: sentFlight, request: request) }
            }
        } catch SyncError.refused(let code, _) where PushMachine.repairable.contains(code) {
            // The exchange kept the refusal whole (with what the server has of this device).
            let refusal = lastRefusal ?? WireError(code: code, message: "")
            let ours = try storedChain(refusal.acknowledged ?? 0)
            // A clock refusal that stands where this replica's chain does
            // confirms it, as an answer would (the repair's relays may then
            // carry pending records); not one behind it (a restored server:
            // a ledger written now would count writes it lost).
            if code == .clockSkew, let ours, !ours.isEmpty, refusal.digest == ours,
                let acknowledged = refusal.acknowledged, acknowledged >= (try replica.syncState().pushedThrough)
            {
                ledgerChainConfirmed = true
            }
            return .refused(refusal, ourDigest: ours)
        }
        flight.prepared = prepared
        let response: PushResponse
        do { response = try PushResponse(json: answer) } catch { throw SyncError.badAnswer(error.message) }
        flight.response = response
        if try noteAccount(response.account, epoch: response.epoch) {
            summary.fullResync = true
            summary.accountChanged = true
            try prepareSync()
            return .timelineChanged(pushedThrough: try replica.syncState().pushedThrough)
        }
        if try handleEpoch(response.epoch) {
            return .timelineChanged(pushedThrough: try replica.syncState().pushedThrough)
        }
        let ours =
            response.acknowledged > 0 && !response.acknowledgedDigest.isEmpty
            ? try flight.chain(through: response.acknowledged, client: self) : nil
        // The server's chain of this device is this replica's: its ledger may be written.
        if let ours, ours == response.acknowledgedDigest { ledgerChainConfirmed = true }
        return .answered(response, ourChain: ours, last: lastRefusal)
    }

    /// What the answer reports, checked against the batch before any of it
    /// is believed (``PushMachine/review``); what it finds is recorded in
    /// the answer's order.
    private func review(_ flight: inout InFlight) throws {
        guard let response = flight.response else { throw Self.pushOutOfStep }
        let sent = flight
        let review = try PushMachine.review(
            response, sent: sent.batch.wire, device: replica.deviceID, shown: sent.shown,
            replacedStamp: { try replica.replacedStamps(ofChange: $0)[$1] })
        for finding in review.findings {
            switch finding {
            case .conflict(let lost):
                // A lost deletion flag counts with its sealed twin (an encrypted account's).
                let twin = response.lost.first {
                    $0.field == RecordState.deletedTwinField && $0.sequence == lost.sequence
                        && $0.collection == lost.collection && $0.key == lost.key
                }
                try recordConflict(lost, key: sent.shown(lost.collection, lost.key), twin: twin)
            case .problem(let problem): summary.problems.append(problem)
            }
        }
        flight.refused = review.refused
    }

    /// What the answer to a batch acknowledged, settled (its relays made,
    /// the book folded) and ready to be committed in one transaction.
    struct Kept {
        let first: Int64
        let last: Int64
        let acknowledged: Int64
        let refused: [Int64: String]
        /// The chain through the last change of the batch acknowledged, kept.
        let chain: (sequence: Int64, chain: String)?
        /// This device's ledger book with the writes acknowledged folded
        /// (nil in a readable account), and the entries they touched.
        let book: LedgerBook?
        let tags: [UInt64]
        /// How many records went up whole.
        let relayedWhole: Int
    }

    /// Settles what the answer to the batch in flight acknowledged, after
    /// relaying whole the records of the changes in `relaying` (edits of
    /// records the server no longer has); ``commit(_:)`` keeps it.
    private func settle(_ flight: InFlight, through acknowledged: Int64, relaying: Set<Int64>) throws -> Kept {
        let (plain, first, last) = (flight.batch.plain, flight.first, flight.last)
        var relayedWhole = 0
        if !relaying.isEmpty {
            let keys = plain.filter { relaying.contains($0.sequence) }.map { ($0.collection, $0.key) }
            try replica.markUndelivered(keys, true)
            let records = try replica.wholeRecords(keys)
            relayedWhole = records.count
            try relay(records, needed: true)
        }
        // The writes the server applied go into this device's ledger (a
        // refused change never does), kept with the acknowledgement.
        var ledgerWrites = zip(plain, flight.writes).filter { change, _ in
            change.sequence <= acknowledged && flight.refused[change.sequence] == nil
        }.map(\.1)
        // Changes past the batch the server says it applied (an earlier try
        // of them whose answer was not taken: the account's epoch changed in
        // it, a restore was found): applied, and no batch of this push sends
        // them again to fold them.
        if flight.book != nil, acknowledged > last {
            ledgerWrites += self.ledgerWrites(
                try replica.unpushedChanges(after: last, limit: Int(min(acknowledged - last, 100_000))))
        }
        // The batch's pending records stay in the chain even when a retry of
        // applied changes did not take them: the first try did, and the head
        // that folds the chain must fold them.
        // With this device's writes relayed inside the push so far (records
        // the server asked for whole): taken, whatever the answer acknowledged.
        var book = flight.book
        let relayed = book.map(takeRelayedInPush(into:)) ?? []
        if book != nil { book!.answered(acknowledging: ledgerWrites + relayed) }
        // The chain through the last change acknowledged is kept: the next
        // pull and push prove this replica's history by it without sealing
        // the batch again. One in between, if a `gap` ever asks for it, is
        // computed from the one kept before (one row written, not 1,000:
        // writing them all took a fifth of the time between batches).
        var chain: (sequence: Int64, chain: String)?
        if let chains = flight.chains, acknowledged >= first {
            let through = min(acknowledged, last)
            chain = (through, chains[Int(through - first)])
        }
        return Kept(
            first: first, last: last, acknowledged: acknowledged, refused: flight.refused, chain: chain, book: book,
            tags: (ledgerWrites + relayed).map(\.tag), relayedWhole: relayedWhole)
    }

    /// Keeps a settled answer in one commit, with what the acknowledgement
    /// moves (and the clock offset of the answer): each commit waits for a
    /// disk flush.
    private func commit(_ kept: Kept) throws {
        do {
            try replica.transaction {
                try replica.markPushed(through: kept.acknowledged)
                try replica.noteRefusals(first: kept.first, last: min(kept.last, kept.acknowledged), kept.refused)
                if let chain = kept.chain { try replica.keepChains([(chain.sequence, chain.chain)]) }
                if let book = kept.book { try keepLedgerBook(book, tags: kept.tags) }
            }
        } catch {
            // The book is read again from the replica, which did not take this one.
            currentLedgerBook = nil
            throw error
        }
    }

    /// Settles the answer to the batch in flight and commits it, or, when
    /// the server took the whole batch and the next one is read, leaves it
    /// to be committed while that batch is in flight (``committing(_:)``).
    /// - Returns: what was settled, and the batch to send next when it goes at once.
    private func keepAnswer(
        _ sent: InFlight, through acknowledged: Int64, relaying: Set<Int64>
    ) throws -> (Kept, next: Batch?) {
        let kept = try settle(sent, through: acknowledged, relaying: relaying)
        guard relaying.isEmpty, acknowledged == sent.last, let prepared = sent.prepared,
            prepared.wire.first.map({ $0.sequence == sent.last + 1 }) ?? true
        else {
            try commit(kept)
            return (kept, nil)
        }
        if prepared.wire.isEmpty {
            try commit(kept)
        } else {
            // The next batch's pending record is made on this book.
            if let book = kept.book { currentLedgerBook = book }
            answerWaiting = kept
        }
        return (kept, prepared)
    }

    /// Commits the answer left waiting (``keepAnswer(_:through:relaying:)``),
    /// if any; before anything else keeps this device's book or its pushed mark.
    func commitAnswerWaiting() throws {
        guard let kept = answerWaiting.take() else { return }
        try commit(kept)
    }

    /// Runs `body`, which sends a batch, with the answer to the batch before
    /// it committed on every way out: inside it, once the batch is written
    /// (the server works on it meanwhile), or after it when the batch never
    /// went or was refused on its head. A process stopped before the commit
    /// has lost that answer: the next push sends the batch again, and the
    /// server's acknowledgement past it is taken as after any lost answer.
    private func committing(
        _ body: (_ whileWaiting: @escaping () -> Void) throws -> PushSession.Input
    ) throws -> PushSession.Input {
        guard answerWaiting != nil else { return try body({}) }
        var failure: (any Error)?
        let result = Result {
            try body { [self] in
                do { try commitAnswerWaiting() } catch { failure = error }
            }
        }
        try commitAnswerWaiting()
        // A commit that failed loses the answer it kept, and the one after it.
        if let failure { throw failure }
        return try result.get()
    }

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
            // No batch is in flight: these relays go as outside a push, each
            // write of this device in them described by pending records of
            // its own (or folded into the book at once when it cannot have
            // them), never left for an answer that may not come.
            try betweenBatches {
                let accepted = try replica.onceAcknowledgedRecords()
                if !accepted.isEmpty { try relay(accepted) }
                // Refused again after re-stamping: the edits are above values
                // this replica holds that the server does not (stamped while
                // a clock ran fast, then lost to a restore). Those go up first.
                if relayStampedAhead {
                    try relay(try replica.recordsStamped(after: try replica.serverTime() + 60_000))
                }
            }
            summary.restamped += try replica.restampUnpushed()
        case .stop(let refusal):
            throw SyncError.stop(refusal, server: lastRefusal)
        }
    }

    /// Runs `body`'s relays as outside a push, with no batch in flight
    /// (before the first, between a refusal and the next, which builds its
    /// pending record on the book then kept), yet never with a bare write of
    /// this device (``relay(_:needed:)``): no answer may come to fold it.
    private func betweenBatches(_ body: () throws -> Void) throws {
        let pushing = pushingBatches
        (pushingBatches, relayingBetweenBatches) = (false, true)
        defer { (pushingBatches, relayingBetweenBatches) = (pushing, false) }
        try body()
    }
}
