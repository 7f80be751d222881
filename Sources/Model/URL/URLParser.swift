import Foundation

/// The parser behind ``NormalizedURL``: a single pass over the text, closely
/// following the WHATWG URL Standard for the "special" schemes http and https.
/// https://url.spec.whatwg.org/#url-parsing
enum URLParser {
    static func parse(_ input: String) throws(URLProblem) -> NormalizedURL {
        let text = trimmed(input)
        func fail(_ reason: String) -> URLProblem { URLProblem(input: input, reason: reason) }
        guard !text.isEmpty else { throw fail("it is blank") }
        for scalar in text.unicodeScalars where scalar.value < 0x20 || scalar.value == 0x7F {
            throw fail("it contains a control character")
        }

        var scheme = "https"
        var rest = Substring(text)
        if let separator = text.range(of: "://") {
            let name = text[..<separator.lowerBound].lowercased()
            guard isSchemeName(name) else { throw fail("'\(name)' is not a URL scheme") }
            guard name == "http" || name == "https" else {
                throw fail("the scheme '\(name)' is not supported (only http and https links are opened)")
            }
            scheme = name
            rest = text[separator.upperBound...]
        } else if let colon = text.firstIndex(of: ":") {
            let name = text[..<colon].lowercased()
            let after = text[text.index(after: colon)...]
            if name == "http" || name == "https" {
                scheme = name
                rest = after.drop(while: { $0 == "/" || $0 == "\\" })
            } else if isSchemeName(name), !name.contains("."), !(after.first?.isNumber ?? true) {
                throw fail("the scheme '\(name)' is not supported (only http and https links are opened)")
            }
        } else if text.hasPrefix("//") {
            rest = text.dropFirst(2)
        }
        rest = rest.drop(while: { $0 == "/" || $0 == "\\" })

        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" || $0 == "\\" }) ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        let remainder = rest[authorityEnd...]
        if let at = authority.lastIndex(of: "@") {
            authority = authority[authority.index(after: at)...]
        }
        guard !authority.isEmpty else { throw fail("it has no host") }

        var rawHost: Substring
        var rawPort: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw fail("the IPv6 address has no closing ']'") }
            rawHost = authority[...close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw fail("unexpected text after the IPv6 address") }
                rawPort = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: ":") {
            rawHost = authority[..<colon]
            rawPort = authority[authority.index(after: colon)...]
        } else {
            rawHost = authority
        }

        var port: Int?
        if let rawPort, !rawPort.isEmpty {
            guard rawPort.allSatisfy({ $0.isASCII && $0.isNumber }), rawPort.count <= 5, let number = Int(rawPort),
                  number <= 65535
            else { throw fail("the port '\(rawPort)' is not a number from 0 to 65535") }
            port = number
        }
        if port == (scheme == "http" ? 80 : 443) { port = nil }

        let host: String
        if rawHost.hasPrefix("[") {
            guard let address = IPAddress.canonicalIPv6(String(rawHost.dropFirst().dropLast())) else {
                throw fail(HostProblem.invalidIPv6.message)
            }
            host = "[\(address)]"
        } else {
            switch HostName.normalize(String(rawHost)) {
            case .success(let normal): host = normal
            case .failure(let problem): throw fail(problem.message)
            }
        }

        var pathPart = remainder
        var queryPart: Substring?
        var fragmentPart: Substring?
        if let hash = pathPart.firstIndex(of: "#") {
            fragmentPart = pathPart[pathPart.index(after: hash)...]
            pathPart = pathPart[..<hash]
        }
        if let question = pathPart.firstIndex(of: "?") {
            queryPart = pathPart[pathPart.index(after: question)...]
            pathPart = pathPart[..<question]
        }
        let path = removeDotSegments(percentEncode(pathPart.replacingOccurrences(of: "\\", with: "/"), keep: pathAllowed))
        let query = queryPart.flatMap { $0.isEmpty ? nil : percentEncode(String($0), keep: queryAllowed) }
        let fragment = fragmentPart.flatMap { $0.isEmpty ? nil : percentEncode(String($0), keep: fragmentAllowed) }
        return NormalizedURL(scheme: scheme, host: host, port: port, path: path, query: query, fragment: fragment)
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
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "+" || $0 == "-" || $0 == ".")
        }
    }

    // Printable ASCII that each part keeps as is (WHATWG percent-encode sets, inverted).
    static let pathAllowed = allowedSet(excluding: " \"#<>?`{}")
    static let queryAllowed = allowedSet(excluding: " \"#<>'")
    static let fragmentAllowed = allowedSet(excluding: " \"<>`")

    private static func allowedSet(excluding excluded: String) -> [Bool] {
        var table = [Bool](repeating: false, count: 256)
        for byte in 0x21...0x7E { table[byte] = true }
        for byte in excluded.utf8 { table[Int(byte)] = false }
        return table
    }

    static func percentEncode(_ text: String, keep allowed: [Bool]) -> String {
        guard text.utf8.contains(where: { !allowed[Int($0)] }) else { return text }
        let hex = Array("0123456789ABCDEF".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count + 8)
        for byte in text.utf8 {
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
