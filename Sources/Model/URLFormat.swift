/// How a URL is handed to a browser: a template with placeholders.
///
/// - `{url}`: the whole URL percent-encoded as a query value (every character
///   but RFC 3986 unreserved ones, so `&`, `=`, `?`, `#`, `/`, `:` are encoded);
///   a format of `{url}` alone passes the URL through unchanged.
/// - `{host}`: the host, with `:port` when the port is not the default.
/// - `{path}`: path, query and fragment.
///
/// https://www.rfc-editor.org/rfc/rfc3986#section-2.3
public enum URLFormat {
    public static let passThrough = "{url}"
    static let placeholders: Set<String> = ["{url}", "{host}", "{path}"]

    /// Renders `url` with `format`.
    public static func render(_ format: String, url: NormalizedURL) -> String {
        if format == passThrough { return url.absoluteString }
        var output = ""
        var rest = Substring(format)
        while let open = rest.firstIndex(of: "{") {
            output += rest[..<open]
            let tail = rest[open...]
            if tail.hasPrefix("{url}") {
                output += percentEncodeQueryValue(url.absoluteString)
                rest = tail.dropFirst(5)
            } else if tail.hasPrefix("{host}") {
                output += url.hostWithPort
                rest = tail.dropFirst(6)
            } else if tail.hasPrefix("{path}") {
                output += url.pathQueryFragment
                rest = tail.dropFirst(6)
            } else {
                output += "{"
                rest = tail.dropFirst()
            }
        }
        return output + rest
    }

    /// Why `format` is unusable, or nil. A format must hold at least one
    /// placeholder and no unknown `{…}` one.
    public static func problem(with format: String) -> String? {
        if format.isEmpty { return "a URL format must not be empty" }
        var found = false
        var rest = Substring(format)
        while let open = rest.firstIndex(of: "{") {
            let tail = rest[open...]
            guard let close = tail.firstIndex(of: "}") else {
                return "the URL format '\(format)' has a '{' with no closing '}'"
            }
            let name = String(tail[...close])
            guard placeholders.contains(name) else {
                return "the URL format '\(format)' has the unknown placeholder \(name); use {url}, {host} or {path}"
            }
            found = true
            rest = tail[tail.index(after: close)...]
        }
        return found ? nil : "the URL format '\(format)' has no placeholder; use {url}, {host} or {path}"
    }

    /// Percent-encodes every byte but RFC 3986 unreserved characters.
    public static func percentEncodeQueryValue(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count * 3 / 2)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                output.append(byte)
            default:
                output += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}
