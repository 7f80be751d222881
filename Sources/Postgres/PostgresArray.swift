/// Arrays for sending many rows' columns as one parameter each
/// (`unnest($1::text[], …)`), in PostgreSQL's binary form (``PostgresValue/bytes(_:)``
/// is sent as binary): each element its length and its bytes, so neither side
/// escapes or parses a literal. (A push's 1,000 records go as arrays of their
/// JSON texts: as text literals, escaping each `"` here and reading the literal
/// back on the server cost ~45 ms of a push of 10,000 on PostgreSQL.)
public enum PostgresArray {
    /// The element types' ids (`pg_type.oid`), which the binary form names:
    /// they must be the parameter's (`$1::text[]` takes text).
    enum Element: UInt32 {
        case boolean = 16
        case bytea = 17
        case bigint = 20
        case text = 25
    }

    /// A `text[]`, nil as NULL. Text holding NUL is refused by PostgreSQL
    /// (its text cannot hold it): the statement fails, nothing is written.
    public static func texts(_ values: some Sequence<String?>) -> PostgresValue {
        var output = header(.text, count: 0, capacity: values.underestimatedCount * 72)
        var count: UInt32 = 0
        var nulls = false
        for value in values {
            count += 1
            guard var value else {
                append(UInt32.max, to: &output) // -1: NULL
                nulls = true
                continue
            }
            value.withUTF8 { bytes in
                append(UInt32(bytes.count), to: &output)
                output.append(contentsOf: bytes)
            }
        }
        return finish(&output, count: count, nulls: nulls)
    }

    public static func texts(_ values: some Sequence<String>) -> PostgresValue {
        texts(values.lazy.map { Optional($0) })
    }

    /// A `bigint[]`.
    public static func integers(_ values: some Sequence<Int64>) -> PostgresValue {
        var output = header(.bigint, count: 0, capacity: values.underestimatedCount * 12)
        var count: UInt32 = 0
        for value in values {
            count += 1
            append(UInt32(8), to: &output)
            append(UInt64(bitPattern: value), to: &output)
        }
        return finish(&output, count: count, nulls: false)
    }

    /// A `boolean[]`.
    public static func booleans(_ values: some Sequence<Bool>) -> PostgresValue {
        var output = header(.boolean, count: 0, capacity: values.underestimatedCount * 5)
        var count: UInt32 = 0
        for value in values {
            count += 1
            append(UInt32(1), to: &output)
            output.append(value ? 1 : 0)
        }
        return finish(&output, count: count, nulls: false)
    }

    /// One dimension, lower bound 1: `ndim`, `flags` (has nulls), the element
    /// type, the length (filled in by ``finish``), the lower bound.
    private static func header(_ element: Element, count: UInt32, capacity: Int) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(20 + capacity)
        for word in [1, 0, element.rawValue, count, 1] { append(word, to: &output) }
        return output
    }

    private static func finish(_ output: inout [UInt8], count: UInt32, nulls: Bool) -> PostgresValue {
        // An empty array has no dimensions.
        guard count > 0 else { return .bytes([0, 0, 0, 0, 0, 0, 0, 0] + output[8..<12]) }
        output[7] = nulls ? 1 : 0
        withUnsafeBytes(of: count.bigEndian) { output.replaceSubrange(12..<16, with: $0) }
        return .bytes(output)
    }

    private static func append(_ word: UInt32, to output: inout [UInt8]) {
        withUnsafeBytes(of: word.bigEndian) { output.append(contentsOf: $0) }
    }

    private static func append(_ word: UInt64, to output: inout [UInt8]) {
        withUnsafeBytes(of: word.bigEndian) { output.append(contentsOf: $0) }
    }

    /// A `bytea[]`: any byte (NUL too).
    public static func byteStrings(_ values: some Sequence<[UInt8]>) -> PostgresValue {
        var output = header(.bytea, count: 0, capacity: values.underestimatedCount * 36)
        var count: UInt32 = 0
        for value in values {
            count += 1
            append(UInt32(value.count), to: &output)
            output.append(contentsOf: value)
        }
        return finish(&output, count: count, nulls: false)
    }
}
