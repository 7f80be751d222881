/// Array literals in PostgreSQL's text form, for sending many rows' columns
/// as one parameter each (`unnest($1::text[], …)`).
public enum PostgresArray {
    /// `{"a","b\"c",NULL}`: every element quoted, `"` and `\` escaped with a
    /// backslash, nil as NULL. Text holding NUL cannot be sent (PostgreSQL
    /// text cannot hold it), as for a single text parameter.
    public static func texts(_ values: some Sequence<String?>) -> String {
        var output = "{"
        var first = true
        for value in values {
            if !first { output += "," }
            first = false
            guard let value else {
                output += "NULL"
                continue
            }
            output += "\""
            for character in value.unicodeScalars {
                if character == "\"" || character == "\\" { output += "\\" }
                output.unicodeScalars.append(character)
            }
            output += "\""
        }
        return output + "}"
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
