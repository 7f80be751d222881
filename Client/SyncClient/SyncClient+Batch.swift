import Net
import SyncCore

/// A push's batches: the next unpushed changes as the replica holds them
/// and as they are sent (sealed in an encrypted account), each with its
/// text and digest; what the next batch needs, made while one is in
/// flight; and this device's chain through a change, as sent.
extension SyncClient {
    /// The next unpushed changes, at most a batch by count and by bytes (one
    /// change alone may exceed the byte budget; the server's limits still hold).
    /// - Returns: the changes as the replica holds them and as they are sent
    ///   (sealed in an encrypted account), in the same order, with the JSON
    ///   text and the digest of each as sent.
    func nextBatch(after sequence: Int64, first: Bool = false) throws -> Batch {
        let limit = first ? min(options.firstBatch, options.pushBatch) : options.pushBatch
        var candidates = try replica.unpushedChanges(after: sequence, limit: max(1, limit))
        if cipher != nil { try pinSealedFormats(&candidates) }
        let prepared = try Self.wireChanges(candidates, cipher: cipher)
        let batch = prepared.prefix(byteBatch(prepared.lazy.map(\.text.count)))
        let (plain, wire) = (Array(candidates.prefix(batch.count)), batch.map(\.wire))
        return Batch(
            plain: plain, wire: wire, texts: batch.map(\.text), digests: batch.map(\.digest),
            readable: Self.readableKeys(wire: wire, plain: plain))
    }

    /// Gives each change never sent the format the account is sealed in
    /// now, kept in the log before it goes out: a retry after a lost answer
    /// sends the same bytes, whatever the account turned to since.
    private func pinSealedFormats(_ changes: inout [ChangeRecord]) throws {
        let unpinned = changes.indices.filter { changes[$0].sealedFormat == nil }
        guard !unpinned.isEmpty else { return }
        let format = options.protocolVersion >= Wire.sealedFormatProtocol ? try replica.sealedFormat() : .one
        try replica.pinSealedFormat(format, of: unpinned.map { changes[$0].sequence })
        for index in unpinned { changes[index].sealedFormat = format }
    }

    /// Changes to push: as the replica holds them and as they are sent, with
    /// the text and the digest of each as sent.
    struct Batch {
        let plain: [ChangeRecord]
        let wire: [ChangeRecord]
        let texts: [[UInt8]]
        let digests: [String]
        /// ``readableKeys(wire:plain:)``, made with the batch.
        let readable: [String: String]
        /// What was made ahead for it while the batch before was in flight.
        var ahead: Ahead?
    }

    /// What the next batch needs when it goes on from the one in flight,
    /// made while that one is: its chain after the batch in flight's, and in
    /// a readable account its request's body (compressed too). Made between
    /// an answer and the next request, they took about 3 ms of the 30 a
    /// readable batch of 1,000 changes takes. Each is used only when the
    /// batch goes on from that chain, and the request is the one written for.
    struct Ahead {
        let base: String
        let chains: [String]
        /// The request, and its body, in a readable account.
        let written: (request: PushRequest, body: [UInt8])?
    }

    /// Makes ``Ahead`` for `next`, read while `flight` (sent as `request`) is.
    func writeAhead(_ next: inout Batch, after flight: InFlight, request: PushRequest) {
        guard let base = flight.chains?.last, let first = next.wire.first?.sequence, first == flight.last + 1 else {
            return
        }
        var written: (PushRequest, [UInt8])?
        if cipher == nil, request.ledger.isEmpty {
            var upcoming = request
            (upcoming.from, upcoming.to, upcoming.changes, upcoming.base) = (
                first, next.wire[next.wire.count - 1].sequence, next.wire, base
            )
            let body = upcoming.body(changeTexts: next.texts)
            transport.compressAhead(body)
            written = (upcoming, body)
        }
        next.ahead = Ahead(
            base: base, chains: ChangeRecord.chain(digests: next.digests, after: base), written: written)
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

        /// A change of the log in the format it was first sent in (never
        /// sent: format 1; ``SyncClient/pinSealedFormats(_:)`` pins it first).
        init(_ change: ChangeRecord, cipher: RecordCipher?) throws(RecordCipherError) {
            wire = try cipher?.seal(change, format: change.sealedFormat ?? .one) ?? change
            (text, digest) = wire.jsonBytesAndDigest
        }

        /// A change already as it is sent.
        init(sent: ChangeRecord) {
            wire = sent
            (text, digest) = sent.jsonBytesAndDigest
        }
    }

    /// Each change as it is sent (see ``WireChange``); a change the cipher
    /// refuses (a field named like its own) is a usage error.
    /// Sealing is the encrypted push's largest cost on the client, which
    /// sets its pace: a batch of 200 or more has its second half sealed on a
    /// spare thread (``sealingThread``).
    static func wireChanges(_ changes: [ChangeRecord], cipher: RecordCipher?) throws(SyncError) -> [WireChange] {
        @Sendable func wire(_ part: ArraySlice<ChangeRecord>) -> Result<[WireChange], RecordCipherError> {
            Result { () throws(RecordCipherError) in
                try part.map { change throws(RecordCipherError) in try WireChange(change, cipher: cipher) }
            }
        }
        do {
            guard cipher != nil, changes.count >= sealingThread.worthSplitting else {
                return try wire(changes[...]).get()
            }
            let half = changes.count / 2
            let (first, second) = sealingThread.both({ wire(changes[..<half]) }, { wire(changes[half...]) })
            return try first.get() + second.get()
        } catch { throw .usage("\(error)") }
    }

    /// Where a batch's second half is sealed (``wireChanges(_:cipher:)``).
    static let sealingThread = SecondThread(worthSplitting: 200, start: SpareThreads.start)

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
