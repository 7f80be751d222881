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
        if bytes.first.map({ $0 >= 0x80 }) == true || bytes.last.map({ $0 >= 0x80 }) == true {
            bytes = Array(trimmed(input).utf8) // Unicode white space at an end
        }
        // The URL Standard: C0 controls and spaces at either end go, then
        // every ASCII tab and newline (a link wrapped by a mail client or
        // pasted across lines, `http://example\t.\norg`, is example.org).
        var start = 0
        var end = bytes.count
        while start < end, bytes[start] <= 0x20 { start += 1 }
        while end > start, bytes[end - 1] <= 0x20 { end -= 1 }
        if bytes[start..<end].contains(where: isTabOrNewline) {
            bytes = Array(bytes[start..<end].filter { !isTabOrNewline($0) })
            (start, end) = (0, bytes.count)
        }
        guard start < end else { throw fail("it is blank") }
        // Other control characters stay: a path, query or fragment holds them
        // percent-encoded, and a host refuses them (forbidden code points).

        // An absolute local path (what a file manager or `xdg-open FILE` hands over).
        if bytes[start] == UInt8(ascii: "/"), start + 1 == end || bytes[start + 1] != UInt8(ascii: "/") {
            return localPath(bytes[start..<end])
        }
        var scheme = "https"
        var cursor = start
        if let colon = bytes[start..<end].firstIndex(of: UInt8(ascii: ":")) {
            let name = String(decoding: bytes[start..<colon], as: UTF8.self).lowercased()
            let hasSlashes =
                colon + 2 < end && bytes[colon + 1] == UInt8(ascii: "/") && bytes[colon + 2] == UInt8(ascii: "/")
            let nextIsDigit = colon + 1 < end && (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[colon + 1])
            if name == "http" || name == "https" {
                scheme = name
                cursor = colon + 1
            } else if name == "file" {
                return try parseFileURL(&bytes, from: colon + 1, to: end, fail: fail)
            } else if hasSlashes {
                guard isSchemeName(name) else { throw fail("'\(name)' is not a URL scheme") }
                throw fail("the scheme '\(name)' is not supported (brsync opens http and https links, and local files)")
            } else if isSchemeName(name), !name.contains("."), colon + 1 < end, !nextIsDigit {
                throw fail("the scheme '\(name)' is not supported (brsync opens http and https links, and local files)")
            }
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
        var hostStart = cursor
        // userinfo is never the host
        if let at = bytes[cursor..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) { hostStart = at + 1 }
        guard hostStart < authorityEnd else { throw fail("it has no host") }

        var hostEnd = authorityEnd
        var portStart: Int?
        if bytes[hostStart] == UInt8(ascii: "[") {
            guard let close = bytes[hostStart..<authorityEnd].firstIndex(of: UInt8(ascii: "]")) else {
                throw fail("the IPv6 address has no closing ']'")
            }
            hostEnd = close + 1
            if hostEnd < authorityEnd {
                guard bytes[hostEnd] == UInt8(ascii: ":") else { throw fail("unexpected text after the IPv6 address") }
                portStart = hostEnd + 1
            }
        } else if let colon = bytes[hostStart..<authorityEnd].lastIndex(of: UInt8(ascii: ":")) {
            hostEnd = colon
            portStart = colon + 1
        }

        var port: Int?
        if let portStart, portStart < authorityEnd {
            var number = 0
            for byte in bytes[portStart..<authorityEnd] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte), number <= 65535 else {
                    throw fail(
                        "the port '\(String(decoding: bytes[portStart..<authorityEnd], as: UTF8.self))' is not a number from 0 to 65535"
                    )
                }
                number = number * 10 + Int(byte - UInt8(ascii: "0"))
            }
            guard number <= 65535 else {
                throw fail(
                    "the port '\(String(decoding: bytes[portStart..<authorityEnd], as: UTF8.self))' is not a number from 0 to 65535"
                )
            }
            port = number
        }
        if port == (scheme == "http" ? 80 : 443) { port = nil }
        guard hostStart < hostEnd else { throw fail("it has no host") }

        let host: String
        if bytes[hostStart] == UInt8(ascii: "[") {
            guard
                let address = IPAddress.canonicalIPv6(
                    String(decoding: bytes[(hostStart + 1)..<(hostEnd - 1)], as: UTF8.self))
            else {
                throw fail(HostProblem.invalidIPv6.message)
            }
            host = "[\(address)]"
        } else {
            switch HostName.normalize(bytes: bytes[hostStart..<hostEnd]) {
            case .success(let normal): host = normal
            case .failure(let problem): throw fail(problem.message)
            }
        }

        let (path, query, fragment) = pathQueryFragment(&bytes, from: authorityEnd, to: end)
        return NormalizedURL(scheme: scheme, host: host, port: port, path: path, query: query, fragment: fragment)
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
