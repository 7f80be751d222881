/// Parses responses for the client: status line, headers, and a body framed
/// by `Content-Length` or chunked coding (or, failing both, by the connection's end).
public struct HTTPResponseParser: Sendable {
    public struct ParsedResponse: Sendable, Equatable {
        public var status: Int
        public var headers: HTTPHeaders
        public var body: [UInt8]
        public var keepAlive: Bool

        public init(status: Int, headers: HTTPHeaders, body: [UInt8], keepAlive: Bool = true) {
            self.status = status
            self.headers = headers
            self.body = body
            self.keepAlive = keepAlive
        }
    }

    private var buffer: [UInt8] = []
    private let maxBodyBytes: Int

    /// A body past the limit: a server that is not what it claims, or one
    /// that lost its mind; said as such, not as "not HTTP".
    static func tooLarge(_ limit: Int) -> HTTPParseError {
        HTTPParseError(
            status: 0,
            reason: "a response larger than \(limit / (1024 * 1024)) MiB, more than any answer of the protocol")
    }

    public init(maxBodyBytes: Int = 64 * 1024 * 1024) {
        self.maxBodyBytes = maxBodyBytes
    }

    public mutating func feed(_ bytes: some Collection<UInt8>) {
        buffer.append(contentsOf: bytes)
    }

    /// The next complete response, nil when more bytes are needed.
    /// - Parameter atEnd: the connection has closed (completes a body framed by close).
    public mutating func next(atEnd: Bool = false) throws(HTTPParseError) -> ParsedResponse? {
        guard let headEnd = find([13, 10, 13, 10], in: buffer, from: 0) else {
            if atEnd && !buffer.isEmpty {
                throw HTTPParseError(status: 0, reason: "the response ended inside its headers")
            }
            return nil
        }
        let lines = buffer[0..<headEnd].split(separator: 10, omittingEmptySubsequences: false).map { line in
            line.last == 13 ? line.dropLast() : line
        }
        guard let statusLine = lines.first.map({ String(decoding: $0, as: UTF8.self) }),
            statusLine.hasPrefix("HTTP/1."), statusLine.count >= 12,
            let status = Int(statusLine.dropFirst(9).prefix(3))
        else { throw HTTPParseError(status: 0, reason: "not an HTTP response") }
        var headers = HTTPHeaders()
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                throw HTTPParseError(status: 0, reason: "a malformed response header")
            }
            headers.add(
                String(decoding: line[line.startIndex..<colon], as: UTF8.self),
                String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingASCIIWhitespace().description)
        }
        let keepAlive = statusLine.hasPrefix("HTTP/1.1") && !headers.contains("Connection", token: "close")
        let bodyStart = headEnd + 4
        // An interim answer (`100 Continue`) has no body, whatever its headers say (RFC 9110 §15.2).
        if (100...199).contains(status) {
            buffer.removeFirst(bodyStart)
            return ParsedResponse(status: status, headers: headers, body: [], keepAlive: true)
        }
        if let lengthText = headers["Content-Length"] {
            guard let length = Int(lengthText), length >= 0 else {
                throw HTTPParseError(status: 0, reason: "a bad Content-Length in the response")
            }
            guard length <= maxBodyBytes else { throw Self.tooLarge(maxBodyBytes) }
            guard buffer.count - bodyStart >= length else {
                if atEnd { throw HTTPParseError(status: 0, reason: "the response was cut short") }
                return nil
            }
            let body = Array(buffer[bodyStart..<bodyStart + length])
            buffer.removeFirst(bodyStart + length)
            return ParsedResponse(status: status, headers: headers, body: body, keepAlive: keepAlive)
        }
        if headers.contains("Transfer-Encoding", token: "chunked") {
            var cursor = bodyStart
            var body: [UInt8] = []
            while true {
                guard let lineEnd = find([13, 10], in: buffer, from: cursor) else {
                    if atEnd { throw HTTPParseError(status: 0, reason: "the response was cut short") }
                    return nil
                }
                let sizeText = String(
                    decoding: buffer[cursor..<lineEnd].prefix { $0 != UInt8(ascii: ";") }, as: UTF8.self)
                guard let size = Int(sizeText, radix: 16), size >= 0 else {
                    throw HTTPParseError(status: 0, reason: "a bad chunk in the response")
                }
                guard body.count + size <= maxBodyBytes else { throw Self.tooLarge(maxBodyBytes) }
                cursor = lineEnd + 2
                if size == 0 {
                    guard let end = find([13, 10], in: buffer, from: cursor) else { return nil }
                    buffer.removeFirst(end + 2) // no trailers expected; skip to the blank line
                    return ParsedResponse(status: status, headers: headers, body: body, keepAlive: keepAlive)
                }
                guard buffer.count >= cursor + size + 2 else {
                    if atEnd { throw HTTPParseError(status: 0, reason: "the response was cut short") }
                    return nil
                }
                body += buffer[cursor..<cursor + size]
                cursor += size + 2
            }
        }
        guard atEnd else { return nil }
        let body = Array(buffer[bodyStart...])
        buffer.removeAll()
        return ParsedResponse(status: status, headers: headers, body: body, keepAlive: false)
    }

    private func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var index = start
        while index + needle.count <= haystack.count {
            if haystack[index] == needle[0] && haystack[index..<index + needle.count].elementsEqual(needle) {
                return index
            }
            index += 1
        }
        return nil
    }
}
