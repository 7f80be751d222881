import Storage
import SyncCore

/// The boxes of sealed format 2 this replica keeps (docs/protocol.md,
/// "Relays of boxes"): a write of another device travels whole, as its
/// writer sealed it, when this machine relays the record.
extension Replica {
    /// Keeps each box of the pulled `change` that a field of `merged` took
    /// from it (its stamp, its value), one per stamp: of two boxes of one
    /// stamp the heavier (``ChangeRecord/PulledBox/weight``), the one kept
    /// first when they weigh the same; and, when the record held fields
    /// before, drops the boxes of stamps no field holds now.
    func keepBoxes(of change: ChangeRecord, local: RecordState, merged: RecordState) throws {
        guard change.collection != .ledger, change.filedKey != nil else { return }
        for box in change.boxes
        where merged.fields.contains(where: { name, register in
            register.stamp == box.register.stamp && change.state.fields[name] == register
        }) {
            guard case .string(let sealed) = box.register.value else { continue }
            try database.run(
                """
                INSERT INTO boxes (collection, key, stamp, sealed, weight) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (collection, key, stamp) DO UPDATE SET sealed = excluded.sealed, weight = excluded.weight
                WHERE excluded.weight > boxes.weight
                """,
                [
                    .text(change.collection.rawValue), .text(change.key), .text(box.register.stamp.description),
                    .text(sealed), .integer(Int64(box.weight)),
                ])
        }
        guard !local.fields.isEmpty, merged != local else { return }
        let held = Set(merged.fields.values.map(\.stamp.description)).sorted()
        try database.run(
            """
            DELETE FROM boxes WHERE collection = ? AND key = ?
            AND stamp NOT IN (\(held.map { _ in "?" }.joined(separator: ", ")))
            """,
            [.text(change.collection.rawValue), .text(change.key)] + held.map { .text($0) })
    }

    /// The boxes kept for a record (``keepBoxes(of:local:merged:)``), each
    /// under its stamp, ascending; some may name stamps the record no
    /// longer holds (a local edit moved on), which a relay leaves out. A
    /// row that does not read (a damaged file) is no box: the relay seals
    /// the write again, as for a value that came in format 1.
    public func keptBoxes(_ collection: RecordCollection, key: String) throws -> [StampedValue] {
        try read {
            try database.query(
                "SELECT stamp, sealed FROM boxes WHERE collection = ? AND key = ? ORDER BY stamp",
                [.text(collection.rawValue), .text(key)]
            ) { row -> StampedValue? in
                guard let text = row.string(0), let stamp = HLCTimestamp(text: text), let sealed = row.string(1)
                else { return nil }
                return StampedValue(.string(sealed), stamp: stamp)
            }
        }.compactMap { $0 }
    }

    /// A kept box as its row holds it (``unweighedBoxes(limit:)``).
    public struct KeptBox: Sendable, Equatable {
        public var id: Int64
        public var collection: String
        public var key: String
        public var stamp: String
        public var sealed: String
    }

    /// Up to `limit` boxes kept before boxes had weights (replica schema
    /// 33 gave them 0, so any box of their stamp a pull brought could take
    /// their place: re-review of format 2, F2); none, without reading the
    /// table, once ``weighBoxes(_:)`` weighed the last of them.
    public func unweighedBoxes(limit: Int) throws -> [KeptBox] {
        try read {
            guard try meta("boxes_unweighed") != nil else { return [] }
            return try database.query(
                "SELECT id, collection, key, stamp, sealed FROM boxes WHERE weight = 0 ORDER BY id LIMIT ?",
                [.integer(Int64(limit))]
            ) { row in
                KeptBox(
                    id: row.int64(0) ?? 0, collection: row.string(1) ?? "", key: row.string(2) ?? "",
                    stamp: row.string(3) ?? "", sealed: row.string(4) ?? "")
            }
        }
    }

    /// Gives each box its weight, or drops it (nil: it does not open, so a
    /// relay would seal its fields again anyway), in one transaction; when
    /// no box is left unweighed, ``unweighedBoxes(limit:)`` stops looking.
    public func weighBoxes(_ weights: [(box: KeptBox, weight: Int?)]) throws {
        try transaction {
            for (box, weight) in weights {
                if let weight {
                    try database.run(
                        "UPDATE boxes SET weight = ? WHERE id = ? AND weight = 0",
                        [.integer(Int64(max(1, weight))), .integer(box.id)])
                } else {
                    try database.run("DELETE FROM boxes WHERE id = ? AND weight = 0", [.integer(box.id)])
                }
            }
            if try database.scalar("SELECT 1 FROM boxes WHERE weight = 0 LIMIT 1") == nil {
                try setMeta("boxes_unweighed", nil)
            }
        }
    }
}
