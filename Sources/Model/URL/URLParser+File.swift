/// Local files: `file:` URLs and absolute paths, so that a double-clicked
/// `.html` file opens as itself and is never read as `https://`.
/// https://url.spec.whatwg.org/#file-state
extension URLParser {
    /// Bytes a file name keeps as is in a URL path: `%`, `?`, `#` and `\`
    /// are ordinary characters in a file name, so they are encoded too.
    static let fileNameAllowed = allowedSet(excluding: " \"#<>?`{}%\\")

    /// An absolute local path (`/tmp/my page.html`) as `file:///tmp/my%20page.html`.
    static func localPath(_ bytes: ArraySlice<UInt8>) -> NormalizedURL {
        NormalizedURL(
            scheme: "file", host: "", port: nil, path: removeDotSegments(percentEncode(bytes, keep: fileNameAllowed)),
            query: nil, fragment: nil)
    }

    /// `file:///path`, `file://localhost/path` (the same), `file:/path`, and
    /// `file://host/path` (a file on another machine, kept as written).
    static func parseFileURL(
        _ bytes: inout [UInt8], from start: Int, to end: Int,
        fail: (String) -> URLProblem
    ) throws(URLProblem) -> NormalizedURL {
        // A special scheme: '\' reads as '/' before the query.
        var index = start
        while index < end, bytes[index] != UInt8(ascii: "?"), bytes[index] != UInt8(ascii: "#") {
            if bytes[index] == UInt8(ascii: "\\") { bytes[index] = UInt8(ascii: "/") }
            index += 1
        }
        var cursor = start
        var host = ""
        if cursor + 1 < end, bytes[cursor] == UInt8(ascii: "/"), bytes[cursor + 1] == UInt8(ascii: "/") {
            cursor += 2
            var authorityEnd = cursor
            while authorityEnd < end,
                ![UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#")].contains(bytes[authorityEnd])
            {
                authorityEnd += 1
            }
            if authorityEnd > cursor, bytes[cursor] == UInt8(ascii: "["), bytes[authorityEnd - 1] == UInt8(ascii: "]") {
                guard
                    let address = IPAddress.canonicalIPv6(
                        String(decoding: bytes[(cursor + 1)..<(authorityEnd - 1)], as: UTF8.self))
                else {
                    throw fail("the file URL's host: \(HostProblem.invalidIPv6.message)")
                }
                host = "[\(address)]"
            } else if authorityEnd > cursor {
                switch HostName.normalize(bytes: bytes[cursor..<authorityEnd]) {
                case .success(let normal): host = normal == "localhost" ? "" : normal
                case .failure(let problem): throw fail("the file URL's host: \(problem.message)")
                }
            }
            cursor = authorityEnd
        }
        let (path, query, fragment) = pathQueryFragment(&bytes, from: cursor, to: end)
        return NormalizedURL(scheme: "file", host: host, port: nil, path: path, query: query, fragment: fragment)
    }
}

extension NormalizedURL {
    /// Whether this is a `file:` URL.
    public var isFile: Bool { scheme == "file" }

    /// The local path of a `file:` URL on this machine (percent-decoded), or nil.
    public var localPath: String? {
        guard isFile, host.isEmpty else { return nil }
        var output: [UInt8] = []
        let bytes = Array(path.utf8)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
                let high = HostName.hexDigit(bytes[index + 1]), let low = HostName.hexDigit(bytes[index + 2])
            {
                output.append(high << 4 | low)
                index += 3
            } else {
                output.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

}
