import SyncCore

/// The stamps of the records a pull stores, kept in memory while it runs, so
/// that the ledger check at its end (Deploy/SECURITY.md, "A device's own
/// writes, counted") need not read back and parse what the pull just wrote:
/// a first pull of 10,000 records spent ~50 ms doing that.
///
/// Written by the one function that stores a record, dropped with a record
/// removed, and with everything when a transaction that stored into it
/// rolls back; used only while no other connection has written the file
/// since they were first kept (SQLite's `data_version`). A record it does
/// not hold is read as stored.
struct StoredStamps {
    /// A record by its collection and its key's bytes. Not Swift's string
    /// equality, which takes canonically equivalent keys ("é" and "e" with
    /// a combining accent) for one: they are two records in the file, and
    /// one's stamps must never stand for the other's.
    struct Key: Hashable {
        var collection: RecordCollection
        var key: String

        static func == (first: Key, second: Key) -> Bool {
            first.collection == second.collection && first.key.utf8.elementsEqual(second.key.utf8)
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(collection)
            var key = key
            key.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        }
    }

    /// A record's stamps, and the key the server files it under when a
    /// pull stored it (its tag is read from it: no HMAC made again).
    struct Stored {
        var stamps: [String: HLCTimestamp]
        var filedKey: String?
    }

    /// The file's `data_version` when they were first kept.
    var dataVersion: Int64
    /// The key id of the cipher that opened what pulls store meanwhile (it
    /// checked each record's filed key against its key): filed keys give
    /// tags under that key only.
    var keyID: String?
    var records: [Key: Stored] = [:]
}

extension Replica {
    /// Keeps the stamps of every record stored from now on, until
    /// ``dropStoredStamps()`` (a pull's ledger check reads them), with the
    /// key id of the cipher that opens what the pull stores.
    public func keepStoredStamps(keyID: String?) throws {
        storedStamps = StoredStamps(dataVersion: try dataVersion(), keyID: keyID)
    }

    /// Stops keeping them, and lets go of those kept.
    public func dropStoredStamps() {
        storedStamps = nil
    }

    /// The stamps kept, when another connection wrote nothing since (else
    /// they are dropped: a record it changed would be read as it was), or nil.
    func storedStampsIfCurrent() throws -> StoredStamps? {
        guard let kept = storedStamps else { return nil }
        guard try dataVersion() == kept.dataVersion else {
            storedStamps = nil
            return nil
        }
        return kept
    }
}
