/// A hybrid logical clock stamp: wall-clock milliseconds, a logical counter and
/// the device that minted it. Ordered by (wall, counter, device): a total order
/// on every stamp any device ever mints.
///
/// Text form (used in storage and on the wire) is fixed width so that text
/// order is stamp order: 16 hex digits of wall time, `-`, 8 hex digits of
/// counter, `-`, the device id. Example: `0000018c3f2a1b2c-00000000-3f2a9c01d4e5b6a7`.
public struct HLCTimestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let wallMillis: Int64
    public let counter: UInt32
    public let device: String

    public init(wallMillis: Int64, counter: UInt32, device: String) {
        self.wallMillis = wallMillis
        self.counter = counter
        self.device = device
    }

    /// The smallest stamp of a device, below every stamp it mints.
    public static func zero(device: String) -> HLCTimestamp {
        HLCTimestamp(wallMillis: 0, counter: 0, device: device)
    }

    public static func < (lhs: HLCTimestamp, rhs: HLCTimestamp) -> Bool {
        if lhs.wallMillis != rhs.wallMillis { return lhs.wallMillis < rhs.wallMillis }
        if lhs.counter != rhs.counter { return lhs.counter < rhs.counter }
        return lhs.device < rhs.device
    }

    public var description: String {
        var bytes: [UInt8] = []
        write(into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Device ids are 1 to 64 of `A-Z a-z 0-9 . _ : -`, so a stamp never needs escaping.
    public static func isValidDevice(_ device: String) -> Bool {
        !device.isEmpty && device.utf8.count <= 64 && device.utf8.allSatisfy(isDeviceByte)
    }

    static func isDeviceByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }

    /// Appends the text form (stamps are written for every field of every record).
    public func write(into output: inout [UInt8]) {
        let digits: StaticString = "0123456789abcdef"
        let wall = UInt64(max(0, wallMillis))
        output.reserveCapacity(output.count + 26 + device.utf8.count)
        for shift in stride(from: 60, through: 0, by: -4) {
            output.append(digits.utf8Start[Int(wall >> UInt64(shift) & 15)])
        }
        output.append(UInt8(ascii: "-"))
        for shift in stride(from: 28, through: 0, by: -4) {
            output.append(digits.utf8Start[Int(counter >> UInt32(shift) & 15)])
        }
        output.append(UInt8(ascii: "-"))
        output += device.utf8
    }

    /// The text of the last stamp asked for, kept for the next one that is
    /// the same: the fields of a change mostly share one stamp.
    public struct TextCache {
        private var last: (stamp: HLCTimestamp, text: [UInt8])?

        public init() {}

        /// The stamp's text form (see ``write(into:)``).
        public mutating func text(of stamp: HLCTimestamp) -> [UInt8] {
            if let last, last.stamp == stamp { return last.text }
            var text: [UInt8] = []
            stamp.write(into: &text)
            last = (stamp, text)
            return text
        }
    }

    /// Reads stamps' text forms one after another, sharing each device id's
    /// string among the stamps that name it (a record's registers mostly
    /// name one or two devices): no string is made for a device seen before.
    public struct Reader {
        private var devices: [(bytes: [UInt8], id: String)] = []

        public init() {}

        /// ``HLCTimestamp/init(utf8:)``.
        public mutating func stamp(utf8 bytes: UnsafeBufferPointer<UInt8>) -> HLCTimestamp? {
            guard bytes.count > 26, bytes.count - 26 <= 64 else { return nil }
            let device = UnsafeBufferPointer(rebasing: bytes[26...])
            guard let known = devices.first(where: { $0.bytes.elementsEqual(device) }) else {
                guard let stamp = HLCTimestamp(utf8: bytes) else { return nil }
                if devices.count < 16 { devices.append((Array(device), stamp.device)) }
                return stamp
            }
            guard let stamp = HLCTimestamp(utf8: UnsafeBufferPointer(rebasing: bytes[..<26]), device: known.id)
            else { return nil }
            return stamp
        }
    }

    /// The text form's milliseconds and counter (its first 26 bytes,
    /// through the second '-') with `device`, known to be valid.
    init?(utf8 prefix: UnsafeBufferPointer<UInt8>, device: String) {
        guard prefix.count == 26, prefix[16] == UInt8(ascii: "-"), prefix[25] == UInt8(ascii: "-"),
            let wall = Self.hex(prefix, 0..<16), wall <= UInt64(Int64.max), let counter = Self.hex(prefix, 17..<25)
        else { return nil }
        self.init(wallMillis: Int64(wall), counter: UInt32(counter), device: device)
    }

    private static func hex(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> UInt64? {
        var value: UInt64 = 0
        for index in range {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt64(digit)
        }
        return value
    }

    /// Parses the text form; nil when malformed.
    /// How a stamp is written, for a message about one that is not.
    public static let form =
        "16 hex digits of milliseconds, at most 7fffffffffffffff, '-', 8 hex digits of counter, '-', a device id"

    public init?(text: String) {
        var text = text
        guard let stamp = text.withUTF8({ HLCTimestamp(utf8: $0) }) else { return nil }
        self = stamp
    }

    /// ``init(text:)`` from the text's UTF-8 bytes: stamps are parsed for
    /// every field of every pushed or stored record, straight from the JSON.
    public init?(utf8 bytes: UnsafeBufferPointer<UInt8>) {
        let parsed = { () -> (UInt64, UInt32, String)? in
            guard bytes.count > 26, bytes[16] == UInt8(ascii: "-"), bytes[25] == UInt8(ascii: "-") else { return nil }
            guard let wall = Self.hex(bytes, 0..<16), wall <= UInt64(Int64.max), let counter = Self.hex(bytes, 17..<25),
                bytes.count - 26 <= 64, bytes[26...].allSatisfy(HLCTimestamp.isDeviceByte)
            else { return nil }
            return (wall, UInt32(counter), String(decoding: UnsafeBufferPointer(rebasing: bytes[26...]), as: UTF8.self))
        }()
        guard let (wall, counter, device) = parsed else { return nil }
        self.init(wallMillis: Int64(wall), counter: counter, device: device)
    }
}

/// The clock of one device. Every local write takes a ``tick(wallMillis:)``;
/// every stamp received is ``observe(_:wallMillis:)``d, so the clock always
/// moves past what this device has seen, even when the wall clock was set back.
/// Persist ``last`` (the high-water mark) with every write.
public struct HybridLogicalClock: Sendable, Equatable {
    public private(set) var last: HLCTimestamp
    public let device: String

    public init(device: String, last: HLCTimestamp? = nil) {
        self.device = device
        self.last =
            last.map { HLCTimestamp(wallMillis: $0.wallMillis, counter: $0.counter, device: device) }
            ?? .zero(device: device)
    }

    /// A new stamp, greater than every stamp this clock has minted or seen.
    public mutating func tick(wallMillis: Int64) -> HLCTimestamp {
        if wallMillis > last.wallMillis {
            last = HLCTimestamp(wallMillis: wallMillis, counter: 0, device: device)
        } else {
            last = HLCTimestamp(wallMillis: last.wallMillis, counter: last.counter &+ 1, device: device)
        }
        return last
    }

    /// Moves the clock past a stamp received from elsewhere.
    public mutating func observe(_ remote: HLCTimestamp, wallMillis: Int64) {
        let wall = max(wallMillis, last.wallMillis, remote.wallMillis)
        let counter: UInt32
        if wall == last.wallMillis && wall == remote.wallMillis {
            counter = max(last.counter, remote.counter) &+ 1
        } else if wall == last.wallMillis {
            counter = last.counter &+ 1
        } else if wall == remote.wallMillis {
            counter = remote.counter &+ 1
        } else {
            counter = 0
        }
        last = HLCTimestamp(wallMillis: wall, counter: counter, device: device)
    }
}
