import Cryptography
import JSON
import Replica
import SyncCore

/// This device's own ledger as a push writes it (Deploy/SECURITY.md, "A
/// device's own writes, counted"): every batch carries its pending record,
/// made just before the batch is sent; each answer folds the writes it
/// acknowledged into the book, kept in the replica in the same commit; and
/// after the push, one ledger request sends the shards that changed and a
/// head. Encrypted accounts only: a readable account keeps no ledger.
extension SyncClient {
    /// This device's book: the one in memory while the device id is the
    /// same, else the replica's (an empty one before any, or for a new id).
    /// Nil in a readable account.
    func ledgerBook() throws -> LedgerBook? {
        guard cipher != nil else { return nil }
        let device = replica.deviceID
        if let book = currentLedgerBook, book.device == device { return book }
        var book = LedgerBook(device: device)
        if let rows = try replica.ledgerBookRows(device: device) {
            do {
                book = try LedgerBook(
                    device: device, state: rows.state, entries: rows.entries, shardsHash: { Ledger.shardsHash($0) })
            } catch {
                // Its next ledger request starts it again from what it
                // writes from now on; other machines see a new head.
                summary.problems.append("this machine's ledger could not be read (\(error)): it starts again")
            }
        }
        currentLedgerBook = book
        return book
    }

    /// Keeps `book` as this client's and in the replica (its state and the
    /// entries of `tags`, each marked changed when the book says so), in the
    /// caller's transaction when there is one.
    func keepLedgerBook(_ book: LedgerBook, tags: some Sequence<UInt64>, confirmed: Bool = false) throws {
        // A push answer left waiting holds an older state of the book: it goes first.
        try commitAnswerWaiting()
        currentLedgerBook = book
        let entries = Set(tags).compactMap { tag in
            book.entries[tag].map {
                (tag: tag, bytes: LedgerBook.entryBytes($0), changed: book.changedTags.contains(tag))
            }
        }
        try replica.keepLedgerBook(device: book.device, state: book.stateBytes, entries: entries, confirmed: confirmed)
    }

    /// The writes `changes` make, as the ledger names them: each record's
    /// tag and the stamp of each field this device wrote.
    /// - Parameter sealed: the changes as sealed, in order, when the caller
    ///   has them: each one's tag is read from its hidden key (no HMAC
    ///   made again).
    func ledgerWrites(_ changes: [ChangeRecord], sealed: [ChangeRecord]? = nil) -> [LedgerBook.Write] {
        guard let cipher else { return [] }
        let device = replica.deviceID
        return changes.indices.map { index in
            let change = changes[index]
            var fields: [String: Ledger.Stamp] = [:]
            for (name, register) in change.state.fields where register.stamp.device == device {
                fields[name] = Ledger.Stamp(register.stamp)
            }
            let tag =
                sealed.flatMap { $0.indices.contains(index) ? Self.tag(ofHiddenKey: $0[index].key) : nil }
                ?? cipher.tag(collection: change.collection.rawValue, key: change.key)
            return LedgerBook.Write(tag: tag, fields: fields)
        }
    }

    /// The writes of this device in whole records (relayed): their
    /// ledger writes, without ledger records and records it wrote nothing of.
    func ownWrites(in records: [ChangeRecord]) -> [LedgerBook.Write] {
        ledgerWrites(records.filter { $0.collection != .ledger }).filter { !$0.fields.isEmpty }
    }

    /// The writes relayed inside the push (``relayedInPush``) that go into
    /// `book`: those of its id (none after a fork), taken once.
    func takeRelayedInPush(into book: LedgerBook) -> [LedgerBook.Write] {
        defer { relayedInPush = nil }
        return relayedInPush?.device == book.device ? relayedInPush?.writes ?? [] : []
    }

    /// The pending records of a batch's `writes` (``ledgerWrites(_:)``,
    /// readable: seal them with ``sealed(_:)`` to send), chained in `book`.
    /// When the book has no room (the chain is full, or a request waits for
    /// its confirmation), the ledger request goes first; none when it still
    /// has none.
    func pendingLedgerRecords(
        for writes: [LedgerBook.Write], book: inout LedgerBook, quietly: Bool = false
    ) throws -> [ChangeRecord] {
        var made = try pending(writes, in: &book)
        var heldBack: String?
        if made == nil {
            heldBack = try sendLedgerRequest(&book)
            made = try pending(writes, in: &book)
        }
        guard let records = made else {
            if !quietly, let heldBack {
                // Not the server's doing: not counted against it.
                summary.problems.append(
                    "this push goes without its part of this machine's ledger, which is not written yet: \(heldBack)")
            } else if !quietly {
                ledgerNotTaken("the server did not take this machine's ledger: this push goes without its part")
            }
            return []
        }
        let links = book.chain.suffix(records.count)
        return zip(records, links).map { record, link in
            ledgerRecord(
                .pending(device: book.device, slot: record.slot), bytes: record.record.bytes, stamp: link.stamp,
                device: book.device)
        }
    }

    /// `book`'s pending records for `writes`, or nil (the book left as it was).
    private func pending(
        _ writes: [LedgerBook.Write], in book: inout LedgerBook
    ) throws -> [(slot: Int, record: Ledger.Pending)]? {
        var failure: (any Error)?
        var last = try lastLedgerStamp(of: book)
        var trial = book
        let records = trial.pending(for: writes) {
            do {
                let stamp = try nextLedgerStamp(after: last)
                last = stamp
                return stamp
            } catch {
                failure = error
                return Ledger.Stamp(wallMillis: 0, counter: 0)
            }
        }
        if let failure { throw failure }
        if records != nil { book = trial }
        return records
    }

    /// The clock's next tick, and never at or below `last` (a clock set back
    /// by a re-stamp would otherwise write a slot or the head below the
    /// record the server holds there, and lose the merge), nor at a stamp
    /// issued before (``SyncReplica/ledgerStamp(ceiling:)``).
    /// Once the server refused a stamp for its clock, the clock's tick goes
    /// no further than a push may be ahead (``SyncReplica/stampCeiling(ahead:)``):
    /// the clock may still run fast.
    func nextLedgerStamp(after last: Ledger.Stamp?) throws -> Ledger.Stamp {
        let stamp = Ledger.Stamp(
            try replica.ledgerStamp(ceiling: clockRefused ? try replica.stampCeiling(ahead: 240_000) : nil))
        guard let last, stamp <= last else { return stamp }
        return Ledger.Stamp(wallMillis: last.wallMillis, counter: last.counter &+ 1)
    }

    /// How far past the server's clock a ledger record it took may have
    /// been stamped: a day, as far as a relay's stamps may be (a ledger
    /// request is a relay).
    static let ledgerStampAllowance: Int64 = 86_400_000

    /// The stamp the book's next record must be newer than: its newest
    /// (``LedgerBook/lastStamp``). Once the server refused a stamp for its
    /// clock: the book's stamps the server can hold (a day past its clock,
    /// as far as a relay's may be, or the newest stamp pulled), and the head
    /// it confirmed and this device's ledger records kept here (the server
    /// took them: below them, a new record loses the merge) unless they are
    /// further ahead than that and the server, asked, holds an older head
    /// (it lost them to a restore: after them, every record would be
    /// refused too), when the head it holds is the floor.
    private func lastLedgerStamp(of book: LedgerBook) throws -> Ledger.Stamp? {
        guard clockRefused else { return book.lastStamp }
        let ceiling = try replica.stampCeiling(ahead: Self.ledgerStampAllowance)
        var floors = [book.lastStamp(notAfter: ceiling)]
        let kept = try replica.ownLedgerStampHigh().map(Ledger.Stamp.init)
        if let confirmed = [book.headStamp, book.lastFolded?.stamp, kept].compactMap({ $0 }).max() {
            if confirmed.wallMillis <= ceiling {
                floors.append(confirmed)
            } else if let held = try serverHeadStamp(device: book.device) {
                floors.append(min(held, confirmed))
            }
        }
        return floors.compactMap { $0 }.max()
    }

    /// The stamp of `device`'s head as the server holds it now (asked once
    /// a sync), nil for none.
    private func serverHeadStamp(device: String) throws -> Ledger.Stamp? {
        if let serverHead { return serverHead }
        let key = Ledger.Key.head(device: device).description
        guard let answer = try fetchAsked([PullRequest.Asked(collection: .ledger, key: key)], inTimeline: false) else {
            return nil
        }
        let head = answer.changes.first { $0.collection == .ledger && $0.key == key }?
            .state.fields[Wire.ledgerField].map { Ledger.Stamp($0.stamp) }
        serverHead = .some(head)
        return head
    }

    /// The ledger request, when the book has anything to send (a chain to
    /// fold, entries that changed, a request whose answer was lost): kept
    /// before it goes (so a lost answer is followed by the same request),
    /// and confirmed once the server took every record. A server that
    /// refuses it leaves the book as it was, the pending chain covering the
    /// writes, and the sync says so.
    /// - Parameter again: whether this is the request made again at once
    ///   after the server refused one for its clock (only once).
    /// - Parameter above: a stamp the request must be newer than (every
    ///   record held under the id, when another home's ledger was taken in):
    ///   the book is then written whatever it may seem to lack.
    /// - Returns: why no request went to the server, nil when one went
    ///   (whatever its answer).
    @discardableResult
    func sendLedgerRequest(
        _ book: inout LedgerBook, again: Bool = false, above: Ledger.Stamp? = nil
    ) throws -> String? {
        guard book.unconfirmed != nil || !book.chain.isEmpty || !book.changedTags.isEmpty else {
            return "it has nothing new"
        }
        // A new request only from a book known to be current: a push answer
        // in this sync showed the server's chain of this device to be this
        // replica's, or a pull reached the server's head; and it holds no
        // head of this device newer than the book's. One that does was
        // written by another home under this id: the pull's end takes that
        // home's ledger in (`above` then) or takes it as this book's own; a
        // request from the book alone would overwrite it and hide the other
        // home's older writes from every machine. (A home restored from an
        // older copy of itself, its book as old, forks at its next push.)
        guard
            try above != nil || book.unconfirmed != nil
                || ((ledgerChainConfirmed || ledgerPulledHead) && !isStale(book))
        else {
            return try isStale(book)
                ? "another home wrote a newer head under this machine's id, and this machine writes its ledger only by "
                    + "taking that one in"
                : "this sync has not yet shown the server's chain of this device to be this machine's"
        }
        let stamp =
            try book.unconfirmed?.stamp
            ?? nextLedgerStamp(after: [lastLedgerStamp(of: book), above].compactMap { $0 }.max())
        let request: LedgerBook.Request
        do {
            guard let made = try book.ledgerRequest(at: stamp, shardsHash: { Ledger.shardsHash($0) }) else {
                return "a batch waits for its answer"
            }
            request = made
        } catch {
            summary.problems.append("this machine's ledger is not written: \(error)")
            return "\(error)"
        }
        try keepLedgerBook(book, tags: [])
        let device = book.device
        var records = request.shards.map { shard in
            ledgerRecord(
                .shard(device: device, index: shard.index), bytes: shard.bytes, stamp: request.stamp, device: device)
        }
        records.append(
            ledgerRecord(.head(device: device), bytes: request.head.bytes, stamp: request.stamp, device: device))
        var relay = RelayRequest(records: try sealed(records), keyID: keyID)
        relay.ledgerOf = device
        let response: PushResponse
        do {
            let answer = try sendRecords(to: "/v1/relay", body: relay.body())
            response = try PushResponse(json: answer)
        } catch let error as SyncError {
            guard case .refused(let code, _) = error else { throw error }
            // Refused whole: none of it was taken; the next is made afresh,
            // at once when its stamp was too far ahead (now no further than
            // the server takes).
            let ceiling = try replica.stampCeiling(ahead: Self.ledgerStampAllowance)
            let restamp = !again && code == .clockSkew && (book.unconfirmed?.stamp.wallMillis ?? 0) > ceiling
            try abandon(&book)
            if restamp { return try sendLedgerRequest(&book, again: true, above: above) }
            ledgerNotTaken("the server did not take this machine's ledger: \(error)")
            return nil
        } catch {
            throw SyncError.badAnswer("\(error)")
        }
        guard response.rejected.isEmpty else {
            try abandon(&book)
            let reasons = Set(response.rejected.map(\.reason)).sorted().joined(separator: "; ")
            ledgerNotTaken("the server did not take this machine's ledger (an older brsyncd?): \(reasons)")
            return nil
        }
        book.confirmed()
        ownLedgerTaken = true
        try replica.transaction {
            try keepLedgerBook(book, tags: [], confirmed: true)
            try replica.keepOwnLedgerRecords(records)
            try replica.forgetAbandonedLedgerStamps(through: request.stamp)
        }
        return nil
    }

    /// The server refused the book's request: it is made afresh next time,
    /// and its stamp is remembered (a server that kept it anyway and sends
    /// it back shows this machine's own head, not another home's).
    private func abandon(_ book: inout LedgerBook) throws {
        try replica.transaction {
            if let stamp = book.unconfirmed?.stamp { try replica.noteAbandonedLedgerStamp(stamp) }
            book.abandonRequest()
            try keepLedgerBook(book, tags: [])
        }
    }

    /// Whether the replica holds a head of the book's device newer than any
    /// the book wrote (and not the one it waits to hear about, nor one the
    /// server refused).
    private func isStale(_ book: LedgerBook) throws -> Bool {
        guard let held = try replica.record(.ledger, key: Ledger.Key.head(device: book.device).description),
            let stamp = held.fields[Wire.ledgerField]?.stamp
        else { return false }
        let written = Ledger.Stamp(stamp)
        guard written != book.unconfirmed?.stamp, book.headStamp.map({ written > $0 }) ?? true else { return false }
        return try !replica.abandonedLedgerStamps().contains(written)
    }

    /// Records the server took in a relay: this device's writes in them go
    /// into its ledger as acknowledged writes (a relay carries writes made
    /// for it, such as a key moved forward, and every record after a key
    /// change: its first ledger then covers every register it relays); the
    /// sync's ledger request covers them. Never while a request waits: that
    /// one goes first, the same. Inside a push, kept for its next answer or
    /// its end to fold (``relayedInPush``).
    func ledgerRelayed(_ records: [ChangeRecord]) throws {
        guard cipher != nil else { return }
        let writes = ownWrites(in: records)
        guard !writes.isEmpty else { return }
        // Inside a push (records it asks for whole, a relay after a restore
        // found mid-push) the push folds these writes into the book it
        // holds: kept until then (a batch's answer may not acknowledge them).
        if pushingBatches {
            let device = replica.deviceID
            relayedInPush = (device, (relayedInPush?.device == device ? relayedInPush?.writes ?? [] : []) + writes)
            return
        }
        guard var book = try ledgerBook() else { return }
        if book.unconfirmed != nil { try sendLedgerRequest(&book) }
        guard book.unconfirmed == nil else { return }
        book.fold(writes)
        try keepLedgerBook(book, tags: writes.map(\.tag))
    }

    /// The pending records a relay of `records` carries: when they hold
    /// writes of this device its book does not hold yet (new writes, such
    /// as a key moved forward or unpushed edits relayed after a restore),
    /// records describing those, chained in the book returned (kept once
    /// the relay's answer comes; readable, as
    /// ``pendingLedgerRecords(for:book:quietly:)``). Nil when there are none
    /// to describe, from a book not known to be current, inside a push (its
    /// answers fold what it relays), or while the book cannot chain one (a
    /// request waits for its confirmation): then the writes are folded once
    /// taken (``ledgerRelayed(_:)``), as relays of writes held before are.
    func relayLedger(for records: [ChangeRecord]) throws -> (book: LedgerBook, records: [ChangeRecord])? {
        // Only from a book known to be current (as a new ledger request): a
        // copy of this home under the same id may have written a newer head,
        // and a pending record built on an older one would break the chain
        // for good once the ids part. Between a push's batches, the server
        // holding the very head the book last wrote (none, for a new id)
        // shows it too: the relay then need not leave its edits behind.
        guard !pushingBatches, var book = try ledgerBook(), try !isStale(book),
            try ledgerChainConfirmed || ledgerPulledHead
                || (relayingBetweenBatches && serverHeadStamp(device: book.device) == book.headStamp)
        else { return nil }
        let own = ownWrites(in: records).filter { !book.holds($0) }
        guard !own.isEmpty else { return nil }
        if book.unconfirmed != nil { try sendLedgerRequest(&book) }
        guard book.unconfirmed == nil else { return nil }
        let pending = try pendingLedgerRecords(for: own, book: &book, quietly: true)
        return pending.isEmpty ? nil : (book, pending)
    }

    /// After a push: the ledger request, if this device's book has one to send.
    func finishLedger() throws {
        guard var book = try ledgerBook() else { return }
        // Writes relayed inside the push that no batch's answer acknowledged.
        let left = takeRelayedInPush(into: book).filter { !book.holds($0) }
        if !left.isEmpty {
            if book.unconfirmed != nil { try sendLedgerRequest(&book) }
            if book.unconfirmed == nil {
                book.fold(left)
                try keepLedgerBook(book, tags: left.map(\.tag))
            }
        }
        try sendLedgerRequest(&book)
    }

    /// One of this device's ledger records, written at `stamp`.
    func ledgerRecord(_ key: Ledger.Key, bytes: [UInt8], stamp: Ledger.Stamp, device: String) -> ChangeRecord {
        ChangeRecord(
            sequence: 0, collection: .ledger, key: key.description,
            state: RecordState(
                fields: [
                    Wire.ledgerField: StampedValue(
                        .string(Crypto.base64URL(bytes)), stamp: stamp.timestamp(device: device))
                ],
                versions: VersionVector([device: 1])))
    }

    /// Ledger records as they go to the server: sealed in an encrypted account.
    func sealed(_ records: [ChangeRecord]) throws -> [ChangeRecord] {
        guard let cipher else { return records }
        do { return try records.map { try cipher.seal($0) } } catch { throw SyncError.usage("\(error)") }
    }

    /// Says in the sync's problems that the server did not take this
    /// device's ledger, and keeps it for ``noteOwnLedger()``.
    func ledgerNotTaken(_ message: String) {
        summary.problems.append(message)
        ownLedgerNotTaken = message
    }

    /// At the end of a sync or push that sent this device's ledger: a
    /// request the server confirmed clears what stood; one it did not take
    /// is counted, and from the third sync in a row over 15 minutes the
    /// device warns its own user (other machines then see its writes past
    /// its ledger, and cannot tell a withheld one).
    func noteOwnLedger() throws {
        if ownLedgerTaken, ownLedgerNotTaken == nil {
            try replica.noteOwnLedgerTaken()
            return
        }
        guard let why = ownLedgerNotTaken, !ownLedgerTaken else { return }
        let standing = try replica.noteOwnLedgerNotTaken(why, now: replica.currentMillis)
        if standing.warns { summary.problems.append(Self.ownLedgerWarning(standing)) }
    }

    /// What the device's own warning says: what stands, what it means, what to do.
    static func ownLedgerWarning(_ standing: OwnLedgerNotTaken) -> String {
        """
        the server does not take this machine's ledger (\(standing.syncs) syncs in a row since \
        \(Timestamp.iso8601(millis: standing.firstAtMillis))): your other machines cannot tell whether it withholds \
        this machine's edits, and will say this machine writes past its ledger. A brsyncd older than this brsync \
        does so (ask its operator to upgrade it); otherwise the server refuses on purpose: ask its operator, or use \
        another server. Everything here is kept and syncs on. The server's last words: \(standing.why)
        """
    }
}
