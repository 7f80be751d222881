/// Punycode (RFC 3492) and the IDNA host mapping brsync applies to hosts.
///
/// The mapping is the practical core of UTS #46 for lookups: full-width and
/// ideographic dots become `.`, labels are lower-cased and NFC-normalised, and
/// every label with a non-ASCII character becomes `xn--` + Punycode.
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
