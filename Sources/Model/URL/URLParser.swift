/// The parser behind ``NormalizedURL``: a single pass over the text, closely
/// following the WHATWG URL Standard for the "special" schemes http and https
/// (`file:` URLs and local paths: URLParser+File.swift).
/// https://url.spec.whatwg.org/#url-parsing
enum URLParser {
    static func parse(_ input: String) throws(URLProblem) -> NormalizedURL {
        func fail(_ reason: String) -> URLProblem { URLProblem(input: input, reason: reason) }
        // Work on bytes: every delimiter of a URL is ASCII, and Character-level
        // string operations would cost more than the whole parse.
        var bytes = Array(input.utf8)
        let (start, end) = strip(&bytes, of: input)
        guard start < end else { throw fail("it is blank") }
        // Other control characters stay: a path, query or fragment holds them
        // percent-encoded, and a host refuses them (forbidden code points).

        // An absolute local path (what a file manager or `xdg-open FILE` hands over).
        if bytes[start] == UInt8(ascii: "/"), start + 1 == end || bytes[start + 1] != UInt8(ascii: "/") {
            return localPath(bytes[start..<end])
        }
        let scheme: String
        var cursor: Int
        switch try readScheme(bytes, from: start, to: end, fail: fail) {
        case .web(let name, let after): (scheme, cursor) = (name, after)
        case .file(let after): return try parseFileURL(&bytes, from: after, to: end, fail: fail)
        }
        while cursor < end, bytes[cursor] == UInt8(ascii: "/") || bytes[cursor] == UInt8(ascii: "\\") { cursor += 1 }

        var authorityEnd = cursor
        while authorityEnd < end {
            let byte = bytes[authorityEnd]
            if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#")
                || byte == UInt8(ascii: "\\")
            {
                break
            }
            authorityEnd += 1
        }
        let (host, port) = try readAuthority(bytes[cursor..<authorityEnd], scheme: scheme, fail: fail)
        let (path, query, fragment) = pathQueryFragment(&bytes, from: authorityEnd, to: end)
        return NormalizedURL(scheme: scheme, host: host, port: port, path: path, query: query, fragment: fragment)
    }

    /// The bounds of the URL in `bytes` once what the URL Standard strips is
    /// gone: C0 controls and spaces at either end, then every ASCII tab and
    /// newline (a link wrapped by a mail client or pasted across lines,
    /// `http://example\t.\norg`, is example.org). `bytes` is rewritten when
    /// that takes more than moving the bounds.
    private static func strip(_ bytes: inout [UInt8], of input: String) -> (start: Int, end: Int) {
        if bytes.first.map({ $0 >= 0x80 }) == true || bytes.last.map({ $0 >= 0x80 }) == true {
            bytes = Array(trimmed(input).utf8) // Unicode white space at an end
        }
        var start = 0
        var end = bytes.count
        while start < end, bytes[start] <= 0x20 { start += 1 }
        while end > start, bytes[end - 1] <= 0x20 { end -= 1 }
        if bytes[start..<end].contains(where: isTabOrNewline) {
            bytes = Array(bytes[start..<end].filter { !isTabOrNewline($0) })
            (start, end) = (0, bytes.count)
        }
        return (start, end)
    }

    /// Where a URL's scheme leads.
    private enum SchemeReading {
        /// http or https (the default when none is written), read on from `after`.
        case web(scheme: String, after: Int)
        /// `file:`, whose rest starts at `after`.
        case file(after: Int)
    }

    /// The scheme of `bytes[start..<end]`. A scheme other than http, https and
    /// file is refused; text that only looks like one (`example.org:8080`,
    /// `localhost:3000/a`) is a host with no scheme written.
    private static func readScheme(
        _ bytes: [UInt8], from start: Int, to end: Int, fail: (String) -> URLProblem
    ) throws(URLProblem) -> SchemeReading {
        guard let colon = bytes[start..<end].firstIndex(of: UInt8(ascii: ":")) else {
            return .web(scheme: "https", after: start)
        }
        let name = String(decoding: bytes[start..<colon], as: UTF8.self).lowercased()
        let hasSlashes =
            colon + 2 < end && bytes[colon + 1] == UInt8(ascii: "/") && bytes[colon + 2] == UInt8(ascii: "/")
        let nextIsDigit = colon + 1 < end && (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[colon + 1])
        if name == "http" || name == "https" {
            return .web(scheme: name, after: colon + 1)
        } else if name == "file" {
            return .file(after: colon + 1)
        } else if hasSlashes {
            guard isSchemeName(name) else { throw fail("'\(name)' is not a URL scheme") }
            throw fail("the scheme '\(name)' is not supported (brsync opens http and https links, and local files)")
        } else if isSchemeName(name), !name.contains("."), colon + 1 < end, !nextIsDigit {
            throw fail("the scheme '\(name)' is not supported (brsync opens http and https links, and local files)")
        }
        return .web(scheme: "https", after: start)
    }

    /// The normalised host and the port (nil when it is the scheme's default)
    /// of an authority; userinfo before an `@` is never the host.
    private static func readAuthority(
        _ authority: ArraySlice<UInt8>, scheme: String, fail: (String) -> URLProblem
    ) throws(URLProblem) -> (host: String, port: Int?) {
        let authorityEnd = authority.endIndex
        var hostStart = authority.startIndex
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) { hostStart = at + 1 }
        guard hostStart < authorityEnd else { throw fail("it has no host") }

        var hostEnd = authorityEnd
        var portStart: Int?
        if authority[hostStart] == UInt8(ascii: "[") {
            guard let close = authority[hostStart..<authorityEnd].firstIndex(of: UInt8(ascii: "]")) else {
                throw fail("the IPv6 address has no closing ']'")
            }
            hostEnd = close + 1
            if hostEnd < authorityEnd {
                guard authority[hostEnd] == UInt8(ascii: ":") else {
                    throw fail("unexpected text after the IPv6 address")
                }
                portStart = hostEnd + 1
            }
        } else if let colon = authority[hostStart..<authorityEnd].lastIndex(of: UInt8(ascii: ":")) {
            hostEnd = colon
            portStart = colon + 1
        }
        var port: Int?
        if let portStart, portStart < authorityEnd {
            port = try readPort(authority[portStart..<authorityEnd], fail: fail)
        }
        if port == (scheme == "http" ? 80 : 443) { port = nil }
        guard hostStart < hostEnd else { throw fail("it has no host") }
        return (try readHost(authority[hostStart..<hostEnd], fail: fail), port)
    }

    /// A port: decimal digits, 0 to 65535.
    private static func readPort(
        _ digits: ArraySlice<UInt8>, fail: (String) -> URLProblem
    ) throws(URLProblem) -> Int {
        func notAPort() -> URLProblem {
            fail("the port '\(String(decoding: digits, as: UTF8.self))' is not a number from 0 to 65535")
        }
        var number = 0
        for byte in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte), number <= 65535 else { throw notAPort() }
            number = number * 10 + Int(byte - UInt8(ascii: "0"))
        }
        guard number <= 65535 else { throw notAPort() }
        return number
    }

    /// A host: a bracketed IPv6 address in its canonical form, or a name or
    /// IPv4 address normalised as the URL Standard's host parser does.
    private static func readHost(_ bytes: ArraySlice<UInt8>, fail: (String) -> URLProblem) throws(URLProblem) -> String
    {
        if bytes.first == UInt8(ascii: "[") {
            guard
                let address = IPAddress.canonicalIPv6(
                    String(decoding: bytes[(bytes.startIndex + 1)..<(bytes.endIndex - 1)], as: UTF8.self))
            else {
                throw fail(HostProblem.invalidIPv6.message)
            }
            return "[\(address)]"
        }
        switch HostName.normalize(bytes: bytes) {
        case .success(let normal): return normal
        case .failure(let problem): throw fail(problem.message)
        }
    }

    /// The normalised path (`\\` read as `/`, dot segments resolved), query and
    /// fragment of `bytes[start..<end]`, each percent-encoded as its set says.
    static func pathQueryFragment(_ bytes: inout [UInt8], from start: Int, to end: Int) -> (String, String?, String?) {
        var pathEnd = start
        while pathEnd < end, bytes[pathEnd] != UInt8(ascii: "?"), bytes[pathEnd] != UInt8(ascii: "#") { pathEnd += 1 }
        var queryEnd = pathEnd
        if pathEnd < end, bytes[pathEnd] == UInt8(ascii: "?") {
            queryEnd = pathEnd + 1
            while queryEnd < end, bytes[queryEnd] != UInt8(ascii: "#") { queryEnd += 1 }
        }
        for index in start..<pathEnd where bytes[index] == UInt8(ascii: "\\") { bytes[index] = UInt8(ascii: "/") }
        let path = removeDotSegments(percentEncode(bytes[start..<pathEnd], keep: pathAllowed))
        let query = queryEnd > pathEnd + 1 ? percentEncode(bytes[(pathEnd + 1)..<queryEnd], keep: queryAllowed) : nil
        let fragment = end > queryEnd + 1 ? percentEncode(bytes[(queryEnd + 1)..<end], keep: fragmentAllowed) : nil
        return (path, query, fragment)
    }

    static func isTabOrNewline(_ byte: UInt8) -> Bool {
        byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    static func trimmed(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[first...last])
    }

    static func isSchemeName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic else { return false }
        return name.unicodeScalars.allSatisfy {
            $0.isASCII
                && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "+" || $0 == "-" || $0 == ".")
        }
    }

    // Printable ASCII that each part keeps as is (WHATWG percent-encode sets, inverted).
    static let pathAllowed = allowedSet(excluding: " \"#<>?`{}")
    static let queryAllowed = allowedSet(excluding: " \"#<>'")
    static let fragmentAllowed = allowedSet(excluding: " \"<>`")

    static func allowedSet(excluding excluded: String) -> [Bool] {
        var table = [Bool](repeating: false, count: 256)
        for byte in 0x21...0x7E { table[byte] = true }
        for byte in excluded.utf8 { table[Int(byte)] = false }
        return table
    }

    static func percentEncode(_ text: String, keep allowed: [Bool]) -> String {
        percentEncode(text.utf8, keep: allowed)
    }

    static func percentEncode(_ text: some Collection<UInt8>, keep allowed: [Bool]) -> String {
        guard text.contains(where: { !allowed[Int($0)] }) else { return String(decoding: text, as: UTF8.self) }
        let hex = Array("0123456789ABCDEF".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(text.count + 8)
        for byte in text {
            if allowed[Int(byte)] {
                output.append(byte)
            } else {
                output.append(UInt8(ascii: "%"))
                output.append(hex[Int(byte >> 4)])
                output.append(hex[Int(byte & 15)])
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// RFC 3986 §5.2.4, treating `%2e` as `.` as browsers do.
    static func removeDotSegments(_ path: String) -> String {
        guard !path.isEmpty else { return "/" }
        // `file:./a` has a path without its leading '/': it is "/./a".
        if path.utf8.first != UInt8(ascii: "/") { return removeDotSegments("/" + path) }
        // Fast path: no segment can be a dot segment without a '.' or '%' after a '/'.
        var previous: UInt8 = 0
        var suspicious = false
        for byte in path.utf8 {
            if previous == UInt8(ascii: "/") && (byte == UInt8(ascii: ".") || byte == UInt8(ascii: "%")) {
                suspicious = true
                break
            }
            previous = byte
        }
        if !suspicious { return path.utf8.first == UInt8(ascii: "/") ? path : "/" + path }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        guard segments.contains(where: { isDot($0) || isDoubleDot($0) }) else {
            return path.hasPrefix("/") ? path : "/" + path
        }
        var output: [Substring] = []
        for (index, segment) in segments.enumerated() {
            let isLast = index == segments.count - 1
            if isDoubleDot(segment) {
                if !output.isEmpty { output.removeLast() }
                if isLast { output.append("") }
            } else if isDot(segment) {
                if isLast { output.append("") }
            } else {
                output.append(segment)
            }
        }
        return "/" + output.joined(separator: "/")
    }

    private static func isDot(_ segment: Substring) -> Bool {
        segment == "." || segment.lowercased() == "%2e"
    }

    private static func isDoubleDot(_ segment: Substring) -> Bool {
        let lower = segment.lowercased()
        return lower == ".." || lower == ".%2e" || lower == "%2e." || lower == "%2e%2e"
    }
}
