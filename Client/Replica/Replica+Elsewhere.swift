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

/// A write a device's ledger named that this machine did not hold when its
/// check ran (Deploy/SECURITY.md, "What fails, and how it ends"): kept
/// until it is held here (or a newer value of the field is), so that a
/// newer head of the device that no longer names it (a lying server that
/// also rolled the device's stream back, under a home put back from a
/// backup) does not end the failure. Forgotten with the device (`brsync
/// device forget`), at a key change (every ledger starts over) and at a new
/// epoch (a restored server: what it lost comes back by relays, or is lost
/// for everyone).
public typealias LedgerUnmet = (tag: UInt64, field: String, stamp: HLCTimestamp)

extension Replica {
    /// The writes each device's ledger named and this machine has not held since (``LedgerUnmet``).
    public func ledgerUnmet() throws -> [String: [LedgerUnmet]] {
        try read {
            var result: [String: [LedgerUnmet]] = [:]
            try database.forEachRow("SELECT device, tag, field, stamp FROM ledger_unmet ORDER BY device, tag, field") {
                row in
                guard let device = row.string(0), let field = row.string(2),
                    let stamp = row.string(3).flatMap(HLCTimestamp.init(text:))
                else { throw ReplicaError.notAReplica(path: path, reason: "a ledger's unmet write is damaged") }
                result[device, default: []].append((UInt64(bitPattern: row.int64(1) ?? 0), field, stamp))
                return true
            }
            return result
        }
    }

    /// Keeps `unmet` (the newest stamp of each field); forgets every
    /// unmet write of the devices in `met`. In the caller's transaction.
    func keepLedgerUnmet(_ unmet: [String: [LedgerUnmet]], met: some Sequence<String>) throws {
        for device in met { try database.run("DELETE FROM ledger_unmet WHERE device = ?", [.text(device)]) }
        for (device, writes) in unmet {
            for write in writes {
                try database.run(
                    """
                    INSERT INTO ledger_unmet (device, tag, field, stamp) VALUES (?, ?, ?, ?)
                    ON CONFLICT (device, tag, field) DO UPDATE SET stamp = excluded.stamp
                        WHERE excluded.stamp > ledger_unmet.stamp
                    """,
                    [
                        .text(device), .integer(Int64(bitPattern: write.tag)), .text(write.field),
                        .text(write.stamp.description),
                    ])
            }
        }
    }
}
