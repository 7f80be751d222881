/// Array literals in PostgreSQL's text form, for sending many rows' columns
/// as one parameter each (`unnest($1::text[], …)`).
public enum PostgresArray {
    /// `{"a","b\"c",NULL}`: every element quoted, `"` and `\` escaped with a
    /// backslash, nil as NULL. Text holding NUL cannot be sent (PostgreSQL
    /// text cannot hold it), as for a single text parameter.
    /// Written as bytes: `"` and `\` are ASCII, and no byte of a multi-byte
    /// UTF-8 sequence is ASCII, so escaping byte by byte is escaping by
    /// character. (A push's 1,000 records go as arrays of their texts: built
    /// by appending characters to a `String`, this was a third of the
    /// server's time for a push on PostgreSQL.)
    public static func texts(_ values: some Sequence<String?>) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(values.underestimatedCount * 64)
        output.append(UInt8(ascii: "{"))
        var first = true
        for value in values {
            if !first { output.append(UInt8(ascii: ",")) }
            first = false
            guard var value else {
                output.append(contentsOf: "NULL".utf8)
                continue
            }
            output.append(UInt8(ascii: "\""))
            value.withUTF8 { bytes in
                var start = 0
                for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                    output.append(contentsOf: bytes[start..<index])
                    output.append(UInt8(ascii: "\\"))
                    start = index
                }
                output.append(contentsOf: bytes[start...])
            }
            output.append(UInt8(ascii: "\""))
        }
        output.append(UInt8(ascii: "}"))
        return String(decoding: output, as: UTF8.self)
    }

    public static func texts(_ values: some Sequence<String>) -> String {
        texts(values.lazy.map { Optional($0) })
    }

    /// `{"\\x6162",…}`: each element `bytea`'s hex form, any byte (NUL too).
    public static func byteStrings(_ values: some Sequence<[UInt8]>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var output: [UInt8] = Array("{".utf8)
        var first = true
        for value in values {
            if !first { output.append(UInt8(ascii: ",")) }
            first = false
            output += Array(#""\\x"#.utf8)
            for byte in value {
                output.append(digits[Int(byte >> 4)])
                output.append(digits[Int(byte & 15)])
            }
            output.append(UInt8(ascii: "\""))
        }
        output.append(UInt8(ascii: "}"))
        return String(decoding: output, as: UTF8.self)
    }

    /// `{1,-2,3}`.
    public static func integers(_ values: some Sequence<Int64>) -> String {
        "{" + values.map(String.init).joined(separator: ",") + "}"
    }

    /// `{t,f}`.
    public static func booleans(_ values: some Sequence<Bool>) -> String {
        "{" + values.map { $0 ? "t" : "f" }.joined(separator: ",") + "}"
    }
}
