import SyncCore

/// Reads the input as each of the ledger's packed records (a shard, a
/// pending record, a head, a withdrawal), as a device's book as its replica keeps it, and
/// as a ledger record's key, and as a stored ledger record's fields: the readers are strict, so whatever reads must
/// write back as the same bytes.
func fuzzLedger(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let shard = try? Ledger.Shard(bytes: bytes) {
        precondition(shard.bytes == bytes, "a shard changed in a round trip")
        precondition(shard.entries.allSatisfy { $0.shard(of: shard.shardCount) == shard.index })
    }
    if let pending = try? Ledger.Pending(bytes: bytes) {
        precondition(pending.bytes == bytes, "a pending record changed in a round trip")
    }
    if let head = try? Ledger.Head(bytes: bytes) {
        precondition(head.bytes == bytes, "a head changed in a round trip")
    }
    if let withdrawal = try? Ledger.Withdrawal(bytes: bytes) {
        precondition(withdrawal.bytes == bytes, "a withdrawal changed in a round trip")
        // None withdrawn takes an earlier one back; a record named withdraws something.
        precondition(withdrawal.records.allSatisfy { !$0.entries.isEmpty })
    }
    // A device's book as its replica keeps it: the state alone, or with
    // its second half read as one entry's row; what reads writes back the same.
    let half = bytes.count / 2
    for (state, rows) in [(bytes, []), (Array(bytes[..<half]), [(bytes: Array(bytes[half...]), changed: true)])] {
        if let book = try? LedgerBook(device: "fuzz", state: state, entries: rows, shardsHash: { _ in 0 }) {
            precondition(book.stateBytes == state, "a book's state changed in a round trip")
            precondition(book.chain.count <= Ledger.pendingSlots)
            precondition(book.foldedChains.reduce(0) { $0 + $1.links.count } <= Ledger.pendingSlots)
            for row in rows {
                precondition(book.entries.values.map(LedgerBook.entryBytes).contains(row.bytes))
            }
        }
    }
    // A stored ledger record read for the checks agrees with the record's
    // reading wherever that reads (it may read more: it keeps less).
    bytes.withUnsafeBufferPointer { buffer in
        guard let state = try? RecordState(fieldsUTF8: buffer, versionsJSON: "{}") else { return }
        var reader = HLCTimestamp.Reader()
        guard let stored = try? Ledger.StoredFields(fieldsUTF8: buffer, reader: &reader) else {
            preconditionFailure("a record's fields read, and not for the ledger checks")
        }
        let register = state.fields[Wire.ledgerField]
        precondition(stored.stamp == register?.stamp && stored.newest == state.fields.values.map(\.stamp).max())
        if case .string(let text)? = register?.value {
            precondition(stored.text == Array(text.utf8), "the ledger register's text differs")
        } else {
            precondition(stored.text == nil)
        }
    }
    let text = String(decoding: bytes, as: UTF8.self)
    if let key = Ledger.Key(text) {
        precondition(key.description == text, "a ledger key changed in a round trip")
    }
    return 0
}
