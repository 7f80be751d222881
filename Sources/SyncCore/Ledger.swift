/// A device's ledger of its own acknowledged writes, packed as bytes
/// (Deploy/SECURITY.md, "A device's own writes, counted"; the format is in
/// docs/protocol.md, "The ledger"). Each device keeps, for every record it
/// wrote under the current key, one ``Entry``: the record's tag and, for each
/// field, the stamp of the device's newest acknowledged write of it. Entries
/// live in up to 256 ``Shard``s, summed up by a ``Head``; each batch of a push
/// carries a ``Pending`` record of its changes, committed with them.
///
/// The bytes are sealed as they are, so only key holders read them. Readers
/// are strict: they take only what ``Shard/bytes`` and its siblings write
/// (one encoding for each value), so that equal ledgers hash equal.
public enum Ledger {
    /// The fields an entry names with one bit of a group's mask, bit 0
    /// first: every field the records of this version write (the deletion
    /// flag, the sealed key, the rules', browsers' and settings' fields).
    /// Others are named by their index in the head's ``Head/fieldNames``.
    public static let knownFields = [
        RecordState.deletedField, Wire.sealedKeyField, "pattern", "browser", "browserScheme", "priority",
        "createdAt", "origin", "id", "name", "urlScheme", "urlFormat", "enabled", "value",
    ]
    /// The most shards a device's ledger has (tags' first 8 bits at most).
    public static let maxShards = 256
    /// The entries a shard holds before the ledger doubles its shards.
    public static let shardCapacity = 64
    /// Slots of pending records, reused in turn.
    public static let pendingSlots = 16
    /// Earlier ids of a device (a restored or copied home took a new one)
    /// it keeps, and so withdrawals it writes (``Withdrawal``), at most.
    public static let maxFormerIDs = 16
    /// The most bytes of one packed ledger record (it is sealed as one
    /// value, whose plaintext a record holds at most ``Wire/maxValueBytes``).
    public static let maxBytes = 60_000
    /// The most entries one record packs (each is at least 22 bytes).
    public static let maxEntries = maxBytes / 22
    /// Inherited device ids and extra field names a head lists, at most.
    public static let maxNames = 255

    /// Why packed ledger bytes were refused.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let reason: String
        public init(_ reason: String) { self.reason = reason }
        public var description: String { "a ledger record is damaged: \(reason)" }
    }

    /// A write's stamp within a ledger: wall milliseconds and counter; the
    /// device is the ledger's own, or the group's inherited id.
    public struct Stamp: Sendable, Hashable, Comparable, CustomStringConvertible {
        public var wallMillis: Int64
        public var counter: UInt32

        public init(wallMillis: Int64, counter: UInt32) {
            self.wallMillis = wallMillis
            self.counter = counter
        }

        public init(_ stamp: HLCTimestamp) { self.init(wallMillis: stamp.wallMillis, counter: stamp.counter) }

        public func timestamp(device: String) -> HLCTimestamp {
            HLCTimestamp(wallMillis: wallMillis, counter: counter, device: device)
        }

        public static func < (lhs: Stamp, rhs: Stamp) -> Bool {
            (lhs.wallMillis, lhs.counter) < (rhs.wallMillis, rhs.counter)
        }

        /// As a stamp's text reads, without its device.
        public var description: String {
            var text = timestamp(device: "").description
            text.removeLast()
            return text
        }
    }

    /// Fields one write set together, and its stamp.
    public struct Group: Sendable, Hashable {
        /// 0 for the ledger's own device; N for the head's `ids[N - 1]` (an
        /// entry inherited from an earlier id of the device, or from another
        /// device at a key change).
        public var device: UInt8
        /// A bit for each of ``Ledger/knownFields`` the write set (bits 0–13).
        public var known: UInt16
        /// Indexes into the head's ``Head/fieldNames`` of the other fields
        /// the write set, ascending.
        public var others: [UInt8]
        public var stamp: Stamp

        public init(device: UInt8 = 0, known: UInt16, others: [UInt8] = [], stamp: Stamp) {
            self.device = device
            self.known = known
            self.others = others
            self.stamp = stamp
        }

        /// The mask of a known field's bit, or nil for a field named otherwise.
        public static func bit(of field: String) -> UInt16? {
            Ledger.knownFields.firstIndex(of: field).map { 1 << UInt16($0) }
        }

        static let knownMask: UInt16 = 0x3FFF
        static let moreFlag: UInt16 = 0x4000
        static let extendedFlag: UInt16 = 0x8000

        /// The field names it sets: its known bits in ``Ledger/knownFields``
        /// order, then its others by `others` (an index past them as `#N`).
        public func fieldNames(others: [String]) -> [String] {
            var names: [String] = []
            for (bit, name) in Ledger.knownFields.enumerated() where known & (1 << UInt16(bit)) != 0 {
                names.append(name)
            }
            for index in self.others { names.append(Int(index) < others.count ? others[Int(index)] : "#\(index)") }
            return names
        }

        /// Whether two groups name a field in common.
        func overlaps(_ other: Group) -> Bool {
            known & other.known != 0 || others.contains(where: other.others.contains)
        }
    }

    /// What the device wrote to one record: its tag (the first 8 bytes of the
    /// record's hidden key) and one group per stamp.
    public struct Entry: Sendable, Hashable {
        public var tag: UInt64
        /// Ascending by stamp, then device; each naming fields no other does.
        public var groups: [Group]

        public init(tag: UInt64, groups: [Group]) {
            self.tag = tag
            self.groups = groups
        }

        /// The shard of `shardCount` (a power of two) this entry falls in:
        /// its tag's first bits.
        public func shard(of shardCount: Int) -> Int { Ledger.shard(ofTag: tag, shardCount: shardCount) }
    }

    /// A tag's shard among `shardCount` (a power of two, 1–256).
    public static func shard(ofTag tag: UInt64, shardCount: Int) -> Int {
        shardCount <= 1 ? 0 : Int(tag >> UInt64(64 - shardCount.trailingZeroBitCount))
    }

    /// The shards a ledger of `entries` entries uses: the smallest power of
    /// two of at least entries / ``shardCapacity``, 1 to 256.
    public static func shardCount(forEntries entries: Int) -> Int {
        var count = 1
        while count < maxShards && count * shardCapacity < entries { count *= 2 }
        return count
    }

    /// One shard record (`DEVICE/SHARD`): the entries whose tags fall in it.
    public struct Shard: Sendable, Hashable {
        public var index: Int
        public var shardCount: Int
        /// Ascending by tag, one entry a tag.
        public var entries: [Entry]

        public init(index: Int, shardCount: Int, entries: [Entry]) {
            self.index = index
            self.shardCount = shardCount
            self.entries = entries
        }

        static let magic = UInt8(ascii: "S")

        public var bytes: [UInt8] {
            var writer = Writer(magic: Self.magic)
            writer.u8(UInt8(index))
            writer.u16(UInt16(shardCount))
            writer.entries(entries)
            return writer.bytes
        }

        public init(bytes: [UInt8]) throws(Problem) {
            var reader = try Reader(bytes, magic: Self.magic)
            index = Int(try reader.u8())
            shardCount = try reader.shardCount()
            guard index < shardCount else { throw Problem("shard \(index) of \(shardCount)") }
            entries = try reader.entries()
            try reader.end()
            for entry in entries where entry.shard(of: shardCount) != index {
                throw Problem("an entry's tag does not fall in shard \(index) of \(shardCount)")
            }
        }
    }

    /// Where a pending record sits in the chain: its slot and its stamp.
    public struct Link: Sendable, Hashable {
        public var slot: Int
        public var stamp: Stamp

        public init(slot: Int, stamp: Stamp) {
            self.slot = slot
            self.stamp = stamp
        }
    }

    /// One batch's pending record (`DEVICE/pending/SLOT`), committed with the
    /// batch: its changes' entries, the newest of those writes, the head the
    /// device had last written, the pending record before it not yet
    /// folded, and the field names its entries name by index.
    public struct Pending: Sendable, Hashable {
        /// The stamp of the head the device had last written; nil before its first.
        public var base: Stamp?
        /// The pending record before this one, nil when this is the first
        /// after a fold.
        public var previous: Link?
        /// The newest stamp of the writes it describes (check 3 compares
        /// a device's newest write with it); nil for none.
        public var newest: Stamp?
        /// Field names outside ``Ledger/knownFields`` that its groups name by
        /// index (the device's list when it was written: a head may not list
        /// them yet).
        public var fieldNames: [String]
        /// Ascending by tag, one entry a tag.
        public var entries: [Entry]

        public init(base: Stamp?, previous: Link?, newest: Stamp? = nil, fieldNames: [String] = [], entries: [Entry]) {
            self.base = base
            self.previous = previous
            self.newest = newest
            self.fieldNames = fieldNames
            self.entries = entries
        }

        static let magic = UInt8(ascii: "P")

        public var bytes: [UInt8] {
            var writer = Writer(magic: Self.magic)
            writer.optionalStamp(base)
            writer.optionalLink(previous)
            writer.optionalStamp(newest)
            writer.names(fieldNames)
            writer.entries(entries)
            return writer.bytes
        }

        public init(bytes: [UInt8]) throws(Problem) {
            var reader = try Reader(bytes, magic: Self.magic)
            base = try reader.optionalStamp()
            previous = try reader.optionalLink()
            newest = try reader.optionalStamp()
            fieldNames = try reader.fieldNames()
            entries = try reader.entries()
            try reader.end()
        }
    }

    /// The head (`DEVICE/head`): constant in size whatever the entries.
    public struct Head: Sendable, Hashable {
        /// The newest stamp of the device's acknowledged writes it covers
        /// (its own id's; inherited entries do not count); nil for none.
        public var newest: Stamp?
        /// The last pending record this head folded.
        public var folded: Link?
        /// Earlier ids whose entries this ledger inherited: a group's device N is `ids[N - 1]`.
        public var ids: [String]
        /// Field names outside ``Ledger/knownFields`` that groups name by index.
        public var fieldNames: [String]
        public var shardCount: Int
        public var entryCount: Int
        /// The first 8 bytes of a SHA-256 over every shard in use (its index,
        /// the stamp of the write that made it and its packed bytes; the
        /// client's `Ledger.shardsHash`), recomputed by a machine from the
        /// shards it holds.
        public var shardsHash: UInt64

        public init(
            newest: Stamp?, folded: Link?, ids: [String] = [], fieldNames: [String] = [], shardCount: Int,
            entryCount: Int, shardsHash: UInt64
        ) {
            self.newest = newest
            self.folded = folded
            self.ids = ids
            self.fieldNames = fieldNames
            self.shardCount = shardCount
            self.entryCount = entryCount
            self.shardsHash = shardsHash
        }

        static let magic = UInt8(ascii: "H")

        public var bytes: [UInt8] {
            var writer = Writer(magic: Self.magic)
            writer.optionalStamp(newest)
            writer.optionalLink(folded)
            writer.names(ids)
            writer.names(fieldNames)
            writer.u16(UInt16(shardCount))
            writer.u32(UInt32(entryCount))
            writer.u64(shardsHash)
            return writer.bytes
        }

        public init(bytes: [UInt8]) throws(Problem) {
            var reader = try Reader(bytes, magic: Self.magic)
            newest = try reader.optionalStamp()
            folded = try reader.optionalLink()
            ids = try reader.names()
            fieldNames = try reader.fieldNames()
            shardCount = try reader.shardCount()
            entryCount = Int(try reader.u32())
            shardsHash = try reader.u64()
            try reader.end()
        }
    }

    /// The key of a ledger record, in the `ledger` collection.
    public enum Key: Sendable, Hashable, CustomStringConvertible {
        case shard(device: String, index: Int)
        case head(device: String)
        case pending(device: String, slot: Int)
        /// A withdrawal (``Withdrawal``) by `device` of writes of one of its
        /// earlier ids, in one of ``Ledger/maxFormerIDs`` slots.
        case withdrawal(device: String, slot: Int)

        public var device: String {
            switch self {
            case .shard(let device, _), .head(let device), .pending(let device, _), .withdrawal(let device, _):
                return device
            }
        }

        public var description: String {
            switch self {
            case .shard(let device, let index): return "\(device)/\(index)"
            case .head(let device): return "\(device)/head"
            case .pending(let device, let slot): return "\(device)/pending/\(slot)"
            case .withdrawal(let device, let slot): return "\(device)/withdrawn/\(slot)"
            }
        }

        /// Reads a ledger record's key; nil for anything ``description`` does
        /// not write, and for a device that is not a device id
        /// (``HLCTimestamp/isValidDevice(_:)``: ASCII, so no two ids differ
        /// only in bytes, as "K" and the Kelvin sign do).
        public init?(_ text: String) {
            let parts = text.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 2 || parts.count == 3 else { return nil }
            let device = String(parts[0])
            guard HLCTimestamp.isValidDevice(device) else { return nil }
            func number(_ part: Substring, below limit: Int) -> Int? {
                guard let first = part.utf8.first, part.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                    first != UInt8(ascii: "0") || part.utf8.count == 1, part.utf8.count <= 3, let value = Int(part),
                    value < limit
                else { return nil }
                return value
            }
            if parts.count == 3 {
                if parts[1] == "pending", let slot = number(parts[2], below: Ledger.pendingSlots) {
                    self = .pending(device: device, slot: slot)
                } else if parts[1] == "withdrawn", let slot = number(parts[2], below: Ledger.maxFormerIDs) {
                    self = .withdrawal(device: device, slot: slot)
                } else {
                    return nil
                }
            } else if parts[1] == "head" {
                self = .head(device: device)
            } else if let index = number(parts[1], below: Ledger.maxShards) {
                self = .shard(device: device, index: index)
            } else {
                return nil
            }
        }
    }
}

// MARK: - Bytes

extension Ledger {
    static let formatVersion: UInt8 = 1

    struct Writer {
        var bytes: [UInt8]

        init(magic: UInt8) { bytes = [magic, Ledger.formatVersion] }

        mutating func u8(_ value: UInt8) { bytes.append(value) }
        mutating func u16(_ value: UInt16) { bytes += [UInt8(value >> 8), UInt8(value & 0xFF)] }
        mutating func u32(_ value: UInt32) {
            for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(value >> UInt32(shift) & 0xFF)) }
        }
        mutating func u64(_ value: UInt64) {
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(value >> UInt64(shift) & 0xFF)) }
        }
        mutating func stamp(_ stamp: Stamp) {
            u64(UInt64(bitPattern: stamp.wallMillis))
            u32(stamp.counter)
        }
        mutating func optionalStamp(_ stamp: Stamp?) {
            u8(stamp == nil ? 0 : 1)
            if let stamp { self.stamp(stamp) }
        }
        mutating func optionalLink(_ link: Link?) {
            u8(link == nil ? 0 : 1)
            if let link {
                u8(UInt8(link.slot))
                stamp(link.stamp)
            }
        }
        mutating func names(_ names: [String]) {
            u8(UInt8(clamping: names.count)) // at most maxNames, each a field name or device id (≤ 128 bytes)
            for name in names {
                u8(UInt8(clamping: name.utf8.count))
                bytes += name.utf8
            }
        }
        mutating func entries(_ entries: [Entry]) {
            u16(UInt16(clamping: entries.count)) // the book keeps within maxEntries; readers refuse more
            for entry in entries {
                u64(entry.tag)
                for (index, group) in entry.groups.enumerated() {
                    let extended = group.device != 0 || !group.others.isEmpty
                    var mask = group.known
                    if index < entry.groups.count - 1 { mask |= Group.moreFlag }
                    if extended { mask |= Group.extendedFlag }
                    u16(mask)
                    stamp(group.stamp)
                    if extended {
                        u8(group.device)
                        u8(UInt8(group.others.count))
                        bytes += group.others
                    }
                }
            }
        }
    }

    struct Reader {
        private let bytes: [UInt8]
        private var offset = 0

        init(_ bytes: [UInt8], magic: UInt8) throws(Problem) {
            guard bytes.count <= Ledger.maxBytes else {
                throw Problem("\(bytes.count) bytes, more than \(Ledger.maxBytes)")
            }
            self.bytes = bytes
            let kind = try u8()
            guard kind == magic else {
                throw Problem("expected a \(Character(Unicode.Scalar(magic))) record, found byte \(kind)")
            }
            let version = try u8()
            guard version == Ledger.formatVersion else {
                throw Problem(
                    "format \(version) is not known to this version (it reads format \(Ledger.formatVersion))")
            }
        }

        var isAtEnd: Bool { offset == bytes.count }

        mutating func u8() throws(Problem) -> UInt8 {
            guard offset < bytes.count else { throw Problem("it ends early") }
            defer { offset += 1 }
            return bytes[offset]
        }
        mutating func u16() throws(Problem) -> UInt16 { UInt16(try u8()) << 8 | UInt16(try u8()) }
        mutating func u32() throws(Problem) -> UInt32 { UInt32(try u16()) << 16 | UInt32(try u16()) }
        mutating func u64() throws(Problem) -> UInt64 { UInt64(try u32()) << 32 | UInt64(try u32()) }
        mutating func stamp() throws(Problem) -> Stamp {
            let wall = try u64()
            guard wall <= UInt64(Int64.max) else { throw Problem("a stamp's time is out of range") }
            return Stamp(wallMillis: Int64(wall), counter: try u32())
        }
        /// A shard count: a power of two from 1 to ``Ledger/maxShards``.
        mutating func shardCount() throws(Problem) -> Int {
            let count = Int(try u16())
            guard count >= 1, count <= Ledger.maxShards, count & (count - 1) == 0 else {
                throw Problem("a shard count of \(count) is not a power of two from 1 to \(Ledger.maxShards)")
            }
            return count
        }
        mutating func flag() throws(Problem) -> Bool {
            switch try u8() {
            case 0: return false
            case 1: return true
            case let other: throw Problem("a flag of \(other), neither 0 nor 1")
            }
        }
        mutating func optionalStamp() throws(Problem) -> Stamp? { try flag() ? try stamp() : nil }
        mutating func optionalLink() throws(Problem) -> Link? {
            guard try flag() else { return nil }
            let slot = Int(try u8())
            guard slot < Ledger.pendingSlots else { throw Problem("pending slot \(slot), not below \(pendingSlots)") }
            return Link(slot: slot, stamp: try stamp())
        }
        mutating func names() throws(Problem) -> [String] {
            let count = Int(try u8())
            var names: [String] = []
            for _ in 0..<count {
                let length = Int(try u8())
                guard length > 0, offset + length <= bytes.count else { throw Problem("a name is empty or cut short") }
                let utf8 = bytes[offset..<offset + length]
                offset += length
                guard let name = String(validating: utf8, as: UTF8.self) else {
                    throw Problem("a name is not UTF-8")
                }
                guard !names.contains(name) else { throw Problem("the name '\(name)' is listed twice") }
                names.append(name)
            }
            return names
        }
        /// Field names other than the known ones.
        mutating func fieldNames() throws(Problem) -> [String] {
            let names = try names()
            for name in names where Ledger.knownFields.contains(name) {
                throw Problem("the field '\(name)' is listed though it has a bit of its own")
            }
            return names
        }
        mutating func entries() throws(Problem) -> [Entry] {
            let count = Int(try u16())
            guard count <= Ledger.maxEntries else { throw Problem("\(count) entries, more than \(Ledger.maxEntries)") }
            var entries: [Entry] = []
            entries.reserveCapacity(count)
            for _ in 0..<count {
                let tag = try u64()
                if let last = entries.last, last.tag >= tag { throw Problem("entries are not in ascending tag order") }
                var groups: [Group] = []
                var more = true
                while more {
                    let mask = try u16()
                    more = mask & Group.moreFlag != 0
                    var group = Group(known: mask & Group.knownMask, stamp: try stamp())
                    if mask & Group.extendedFlag != 0 {
                        group.device = try u8()
                        let others = Int(try u8())
                        for _ in 0..<others { group.others.append(try u8()) }
                        guard group.device != 0 || !group.others.isEmpty else {
                            throw Problem("a group is marked extended but says nothing more")
                        }
                        guard zip(group.others, group.others.dropFirst()).allSatisfy({ $0 < $1 }) else {
                            throw Problem("a group's other fields are not in ascending order")
                        }
                    }
                    guard group.known != 0 || !group.others.isEmpty else { throw Problem("a group names no field") }
                    if let last = groups.last {
                        guard (last.stamp, last.device) < (group.stamp, group.device) else {
                            throw Problem("an entry's groups are not in ascending stamp order")
                        }
                    }
                    guard !groups.contains(where: { $0.overlaps(group) }) else {
                        throw Problem("two groups of an entry name the same field")
                    }
                    groups.append(group)
                    guard groups.count <= Wire.maxFields else { throw Problem("an entry has more groups than fields") }
                }
                entries.append(Entry(tag: tag, groups: groups))
            }
            return entries
        }
        func end() throws(Problem) {
            guard offset == bytes.count else { throw Problem("\(bytes.count - offset) bytes follow its end") }
        }
    }
}
