import JSON

/// A field value with the stamp of the write that set it: a last-writer-wins register.
public struct StampedValue: Sendable, Hashable {
    public var value: JSONValue
    public var stamp: HLCTimestamp

    public init(_ value: JSONValue, stamp: HLCTimestamp) {
        self.value = value
        self.stamp = stamp
    }

    /// Whether this register wins over `other`: the higher stamp. Equal stamps
    /// with different values (only a cloned replica, or a hostile device, mints
    /// them) are decided by the canonical JSON text, bytewise: the same answer
    /// on every machine, in time linear in the (bounded) size of the values.
    public func wins(over other: StampedValue) -> Bool {
        if stamp != other.stamp { return stamp > other.stamp }
        return other.value.jsonText.utf8.lexicographicallyPrecedes(value.jsonText.utf8)
    }
}

/// The synced state of one record: every field a last-writer-wins register, and
/// the record's version vector. Deletion is the field ``deletedField`` (a
/// tombstone with its stamp); a later write of it to `false` resurrects.
public struct RecordState: Sendable, Hashable {
    public static let deletedField = "deleted"
    /// Fields that say where and when a record was first made, not what it
    /// holds: two machines that both made a rule differ in them, and nobody
    /// needs them back. A value of them that loses is no conflict.
    public static let provenanceFields: Set<String> = ["createdAt", "origin"]

    public var fields: [String: StampedValue]
    public var versions: VersionVector

    public init(fields: [String: StampedValue] = [:], versions: VersionVector = VersionVector()) {
        self.fields = fields
        self.versions = versions
    }

    public var isDeleted: Bool { fields[Self.deletedField]?.value.boolValue ?? false }

    /// The newest stamp of any field; nil for a record without fields.
    public var newestStamp: HLCTimestamp? { fields.values.lazy.map(\.stamp).max() }

    /// The current values, without stamps.
    public var values: [String: JSONValue] { fields.mapValues(\.value) }

    /// A value that lost a merge of concurrent versions: kept for the change log.
    public struct LostValue: Sendable, Hashable {
        public let field: String
        public let lost: StampedValue
        public let winner: StampedValue

        public init(field: String, lost: StampedValue, winner: StampedValue) {
            self.field = field
            self.lost = lost
            self.winner = winner
        }
    }

    /// Merges `other` into this state: field by field the higher stamp, the
    /// version vector the pointwise maximum. Commutative, associative and
    /// idempotent in its values. When the two versions were concurrent
    /// (neither vector dominates), the values that lost are returned so
    /// nothing is lost silently. A vector past ``Wire/maxVersionEntries``
    /// devices keeps every device of the side with the newest stamp (whose
    /// manifest the record then carries; with equal stamps, the devices both
    /// sides have), then the highest counters
    /// (``VersionVector/capped(at:keeping:)``).
    ///
    /// Two registers of one stamp (a re-seal of one write, or a copied
    /// home's two writes) are settled so every machine ends with the
    /// server's choice (docs/sealed-format-v2.md, "Ties"): by the value's
    /// text, bytewise, except that a readable deletion flag follows its
    /// sealed twin (``deletedTwinField``: of two flags of one stamp, the one
    /// whose twin wins); with `tiesToOther` (a machine merging what it
    /// pulled) `other`'s register wins every tie.
    public func merged(
        with other: RecordState, tiesToOther: Bool = false
    ) -> (state: RecordState, lost: [LostValue]) {
        // Nothing held here (a record a pull brings for the first time):
        // the merge is `other` itself, taken without rebuilding its fields.
        if fields.isEmpty, versions.counters.isEmpty, other.versions.counters.count <= Wire.maxVersionEntries {
            return (other, [])
        }
        let concurrent = versions.compare(to: other.versions) == .concurrent
        var fields = self.fields
        var lost: [LostValue] = []
        for (name, theirs) in other.fields {
            guard let mine = fields[name] else {
                fields[name] = theirs
                continue
            }
            if mine == theirs { continue }
            let theirsWon = theirsWins(name, mine: mine, theirs: theirs, other: other, tiesToOther)
            let (winner, loser) = theirsWon ? (theirs, mine) : (mine, theirs)
            fields[name] = winner
            if concurrent && loser.value != winner.value
                && !Self.sawLoser(
                    loser, winnerSide: theirsWon ? other.versions : versions,
                    loserSide: theirsWon ? versions : other.versions)
            {
                lost.append(LostValue(field: name, lost: loser, winner: winner))
            }
        }
        var merged = versions.merged(with: other.versions)
        if merged.counters.count > Wire.maxVersionEntries {
            let (theirs, mine) = (other.newestStamp ?? .zero(device: ""), newestStamp ?? .zero(device: ""))
            // Equal stamps are one write, whose manifest both sides' vectors cover.
            let kept =
                theirs == mine
                ? Set(versions.counters.keys).intersection(other.versions.counters.keys)
                : Set((theirs > mine ? other : self).versions.counters.keys)
            merged = merged.capped(keeping: kept)
        }
        return (RecordState(fields: fields, versions: merged), lost.sorted { $0.field < $1.field })
    }

    /// Whether the side that won had seen the register that lost: it counts
    /// at least as many writes of the loser's device as the losing side
    /// does, which holds that register (so counts its write). Two versions
    /// are concurrent for a field one side changed; a field neither
    /// changed since the other side saw its value (a whole record relayed
    /// after a key change carries every field) is no conflict. A device
    /// the losing side does not count (a vector cut at its cap) tells nothing.
    static func sawLoser(_ loser: StampedValue, winnerSide: VersionVector, loserSide: VersionVector) -> Bool {
        let device = loser.stamp.device
        return loserSide[device] > 0 && winnerSide[device] >= loserSide[device]
    }

    /// Whether `other`'s register of field `name` wins over this state's
    /// (``merged(with:tiesToOther:)``).
    private func theirsWins(
        _ name: String, mine: StampedValue, theirs: StampedValue, other: RecordState, _ tiesToOther: Bool
    ) -> Bool {
        guard mine.stamp == theirs.stamp else { return theirs.stamp > mine.stamp }
        if tiesToOther { return true }
        if name == Self.deletedField, let myTwin = fields[Self.deletedTwinField],
            let theirTwin = other.fields[Self.deletedTwinField], myTwin.stamp == mine.stamp,
            theirTwin.stamp == theirs.stamp, myTwin != theirTwin
        {
            return theirTwin.wins(over: myTwin)
        }
        return theirs.wins(over: mine)
    }
}

extension RecordState {
    /// `{"name":{"s":STAMP,"v":VALUE},…}` with sorted names, written directly:
    /// the same text as through ``JSONValue``, without building the tree
    /// (records are written in bulk by pushes and pulls).
    public static func encodeFields(_ fields: [String: StampedValue]) -> String {
        String(decoding: encodeFieldBytes(fields), as: UTF8.self)
    }

    /// The UTF-8 of ``encodeFields(_:)``.
    public static func encodeFieldBytes(_ fields: [String: StampedValue]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(64 * fields.count + 2)
        writeFields(fields, into: &output)
        return output
    }

    /// Appends ``encodeFields(_:)``.
    /// Fields that hold boxes (sealed format 2) are written grouped, each
    /// box once (``writeBoxedFields(_:boxes:into:)``).
    public static func writeFields(_ fields: [String: StampedValue], into output: inout [UInt8]) {
        if fields.values.contains(where: { isBox($0.value) }) {
            writeBoxedFields(fields, boxes: boxes(of: fields), into: &output)
            return
        }
        output.append(UInt8(ascii: "{"))
        var stamps = HLCTimestamp.TextCache()
        for (index, name) in fields.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).enumerated() {
            let register = fields[name]! // name comes from fields.keys
            if index > 0 { output.append(UInt8(ascii: ",")) }
            JSONValue.writeString(name, into: &output)
            output += #":{"s":""#.utf8
            output += stamps.text(of: register.stamp) // device ids never need escaping
            output += #"","v":"#.utf8
            register.value.write(into: &output)
            output.append(UInt8(ascii: "}"))
        }
        output.append(UInt8(ascii: "}"))
    }

    /// `{"device":counter,…}`.
    public static func encodeVersions(_ versions: VersionVector) -> String {
        var output: [UInt8] = []
        writeVersions(versions, into: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// Appends ``encodeVersions(_:)`` (sorted device ids, as through ``JSONValue``).
    public static func writeVersions(_ versions: VersionVector, into output: inout [UInt8]) {
        output.append(UInt8(ascii: "{"))
        for (index, device) in versions.counters.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) })
            .enumerated()
        {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            JSONValue.writeString(device, into: &output)
            output.append(UInt8(ascii: ":"))
            output += String(Int64(clamping: versions.counters[device]!)).utf8 // device comes from counters.keys
        }
        output.append(UInt8(ascii: "}"))
    }
}
