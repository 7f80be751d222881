/// Punycode (RFC 3492): encoding a label's code points for `xn--`, and
/// decoding one (UTS #46 checks what a `xn--` label holds; see ``UTS46``).
/// https://www.rfc-editor.org/rfc/rfc3492
enum Punycode {
    private static let base: UInt32 = 36
    private static let tMin: UInt32 = 1
    private static let tMax: UInt32 = 26
    private static let skew: UInt32 = 38
    private static let damp: UInt32 = 700
    private static let initialBias: UInt32 = 72
    private static let initialN: UInt32 = 128

    /// Encodes a label's scalars; nil on overflow (labels that long are invalid anyway).
    static func encode(_ scalars: [Unicode.Scalar]) -> String? {
        var output: [UInt8] = scalars.filter(\.isASCII).map { UInt8($0.value) }
        let basicCount = UInt32(output.count)
        var handled = basicCount
        if basicCount > 0 { output.append(UInt8(ascii: "-")) }
        var n = initialN
        var delta: UInt32 = 0
        var bias = initialBias
        let codePoints = scalars.map(\.value)
        while handled < UInt32(codePoints.count) {
            guard let m = codePoints.filter({ $0 >= n }).min() else { return nil }
            let (product, overflow1) = (m - n).multipliedReportingOverflow(by: handled + 1)
            let (sum, overflow2) = delta.addingReportingOverflow(product)
            if overflow1 || overflow2 { return nil }
            delta = sum
            n = m
            for c in codePoints {
                if c < n {
                    let (next, overflow) = delta.addingReportingOverflow(1)
                    if overflow { return nil }
                    delta = next
                }
                if c == n {
                    var q = delta
                    var k = base
                    while true {
                        let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                        if q < t { break }
                        output.append(digit(t + (q - t) % (base - t)))
                        q = (q - t) / (base - t)
                        k += base
                    }
                    output.append(digit(q))
                    bias = adapt(delta: delta, count: handled + 1, first: handled == basicCount)
                    delta = 0
                    handled += 1
                }
            }
            delta += 1
            n += 1
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes a label's Punycode (the part after `xn--`), letters in either
    /// case; nil when it is not valid Punycode (a bad digit, an overflow, a
    /// code point that is not a Unicode scalar, a non-ASCII basic part).
    static func decode(_ text: String) -> [UInt32]? {
        let bytes = Array(text.utf8)
        guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
        var output: [UInt32] = []
        var cursor = 0
        if let delimiter = bytes.lastIndex(of: UInt8(ascii: "-")) {
            output = bytes[..<delimiter].map(UInt32.init)
            cursor = delimiter + 1
            guard cursor < bytes.count || delimiter > 0 else { return nil } // "-" alone
        }
        var n = initialN
        var i: UInt32 = 0
        var bias = initialBias
        while cursor < bytes.count {
            let oldI = i
            var weight: UInt32 = 1
            var k = base
            while true {
                guard cursor < bytes.count, let value = digitValue(bytes[cursor]) else { return nil }
                cursor += 1
                let (product, overflow1) = value.multipliedReportingOverflow(by: weight)
                let (sum, overflow2) = i.addingReportingOverflow(product)
                if overflow1 || overflow2 { return nil }
                i = sum
                let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                if value < t { break }
                let (nextWeight, overflow3) = weight.multipliedReportingOverflow(by: base - t)
                if overflow3 { return nil }
                weight = nextWeight
                k += base
            }
            let count = UInt32(output.count + 1)
            bias = adapt(delta: i - oldI, count: count, first: oldI == 0)
            let (nextN, overflow) = n.addingReportingOverflow(i / count)
            if overflow { return nil }
            n = nextN
            i %= count
            guard n >= 0x80, Unicode.Scalar(n) != nil else { return nil }
            output.insert(n, at: Int(i))
            i += 1
        }
        return output
    }

    private static func digitValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return UInt32(byte - UInt8(ascii: "a"))
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return UInt32(byte - UInt8(ascii: "A"))
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte - UInt8(ascii: "0")) + 26
        default: return nil
        }
    }

    private static func digit(_ value: UInt32) -> UInt8 {
        value < 26 ? UInt8(value) + UInt8(ascii: "a") : UInt8(value - 26) + UInt8(ascii: "0")
    }

    private static func adapt(delta: UInt32, count: UInt32, first: Bool) -> UInt32 {
        var delta = first ? delta / damp : delta / 2
        delta += delta / count
        var k: UInt32 = 0
        while delta > ((base - tMin) * tMax) / 2 {
            delta /= base - tMin
            k += base
        }
        return k + (base - tMin + 1) * delta / (delta + skew)
    }
}
