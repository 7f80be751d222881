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

    /// `{1,-2,3}`.
    public static func integers(_ values: some Sequence<Int64>) -> String {
        "{" + values.map(String.init).joined(separator: ",") + "}"
    }

    /// `{t,f}`.
    public static func booleans(_ values: some Sequence<Bool>) -> String {
        "{" + values.map { $0 ? "t" : "f" }.joined(separator: ",") + "}"
    }
}
