/// A hybrid logical clock stamp: wall-clock milliseconds, a logical counter and
/// the device that minted it. Ordered by (wall, counter, device): a total order
/// on every stamp any device ever mints.
///
/// Text form (used in storage and on the wire) is fixed width so that text
/// order is stamp order: 16 hex digits of wall time, `-`, 8 hex digits of
/// counter, `-`, the device id. Example: `0000018c3f2a1b2c-00000000-3f2a9c01d4e5b6a7`.
public struct HLCTimestamp: Sendable, Hashable, Comparable, CustomStringConvertible, Codable {
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
        let wall = String(UInt64(bitPattern: max(0, wallMillis)), radix: 16)
        let count = String(counter, radix: 16)
        return String(repeating: "0", count: 16 - wall.count) + wall + "-"
            + String(repeating: "0", count: 8 - count.count) + count + "-" + device
    }

    /// Parses the text form; nil when malformed.
    public init?(text: String) {
        // Read as bytes: stamps are parsed for every field of every pushed record.
        var text = text
        let parsed = text.withUTF8 { bytes -> (UInt64, UInt32, String)? in
            guard bytes.count > 26, bytes[16] == UInt8(ascii: "-"), bytes[25] == UInt8(ascii: "-") else { return nil }
            func hex(_ range: Range<Int>) -> UInt64? {
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
            guard let wall = hex(0..<16), wall <= UInt64(Int64.max), let counter = hex(17..<25) else { return nil }
            return (wall, UInt32(counter), String(decoding: UnsafeBufferPointer(rebasing: bytes[26...]), as: UTF8.self))
        }
        guard let (wall, counter, device) = parsed else { return nil }
        self.init(wallMillis: Int64(wall), counter: counter, device: device)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let stamp = HLCTimestamp(text: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "'\(text)' is not an HLC stamp")
        }
        self = stamp
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
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
        self.last = last.map { HLCTimestamp(wallMillis: $0.wallMillis, counter: $0.counter, device: device) }
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
