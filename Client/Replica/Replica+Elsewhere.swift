import Storage
import SyncCore

/// Writes under this device's id that this replica did not make
/// (Deploy/SECURITY.md, "Two live homes under one id"): a value a pull
/// brought, stamped with this id, that the replica did not hold. Its own
/// writes never come back so (they are held before they are pushed, and a
/// pull that echoes one finds it held), so each is another home's: a copy
/// of this home, or this home before a restore. This device's ledger must
/// name them, whatever their stamps, or other machines' checks find writes
/// of this id that no ledger names.
public struct WriteFromElsewhere: Sendable, Hashable {
    public var collection: RecordCollection
    public var key: String
    public var field: String
    public var stamp: HLCTimestamp
}

extension Replica {
    /// Keeps a write of this device's id that a pull brought (the newest of
    /// each field: a register only moves forward).
    func noteWriteFromElsewhere(
        _ collection: RecordCollection, key: String, field: String, stamp: HLCTimestamp
    )
        throws
    {
        try database.run(
            "INSERT OR REPLACE INTO writes_from_elsewhere (collection, key, field, stamp) VALUES (?, ?, ?, ?)",
            [.text(collection.rawValue), .text(key), .text(field), .text(stamp.description)])
    }

    /// The writes under this device's id that pulls brought and its ledger
    /// does not name yet, oldest first.
    public func writesFromElsewhere() throws -> [WriteFromElsewhere] {
        try read {
            try database.query("SELECT collection, key, field, stamp FROM writes_from_elsewhere") { row in
                guard let collection = row.string(0).flatMap(RecordCollection.init(rawValue:)),
                    let key = row.string(1), let field = row.string(2),
                    let stamp = row.string(3).flatMap(HLCTimestamp.init(text:))
                else { throw ReplicaError.notAReplica(path: path, reason: "a write from elsewhere is damaged") }
                return WriteFromElsewhere(collection: collection, key: key, field: field, stamp: stamp)
            }.sorted { $0.stamp < $1.stamp }
        }
    }

    /// Forgets `writes` (this device's ledger names them now); a field heard
    /// again since, at a newer stamp, stays.
    public func forgetWritesFromElsewhere(_ writes: [WriteFromElsewhere]) throws {
        guard !writes.isEmpty else { return }
        try transaction {
            for write in writes {
                try database.run(
                    "DELETE FROM writes_from_elsewhere WHERE collection = ? AND key = ? AND field = ? AND stamp = ?",
                    [
                        .text(write.collection.rawValue), .text(write.key), .text(write.field),
                        .text(write.stamp.description),
                    ])
            }
        }
    }
}
