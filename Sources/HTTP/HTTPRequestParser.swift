/// Why a request was refused: the status to answer with (the connection is then
/// closed) and a reason for the error body and the log.
public struct HTTPParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public let status: Int
    public let reason: String
    public var description: String { "\(status): \(reason)" }
}

/// An HTTP/1.1 request parser: a state machine fed bytes as they arrive, which
/// returns every complete request (pipelined requests in order) or the error
/// that ends the connection. It does no I/O, so it is tested byte by byte.
///
/// Strict where leniency enables request smuggling (RFC 9112 §6.3, §11.2):
/// `Content-Length` together with `Transfer-Encoding`, a duplicate or
/// non-numeric `Content-Length`, a transfer coding other than `chunked`, bare
/// CR or LF, obsolete line folding and an invalid version are all 400.
/// https://www.rfc-editor.org/rfc/rfc9112
public struct HTTPRequestParser: Sendable {
    public enum Event: Sendable, Equatable {
        /// The headers of a request with a body are complete; the body follows.
        /// The server authenticates here, before a body byte is kept, and
        /// answers `Expect: 100-continue`. (A request without a body produces
        /// only ``request(_:)``.) The head's `body` is empty.
        case head(HTTPRequest)
        case request(HTTPRequest)
        case failure(HTTPParseError)
    }

    private enum State: Sendable, Equatable {
        case requestLine
        case headers
        case body(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers
        case failed
    }

    public let limits: HTTPLimits
    private var state = State.requestLine
    private var buffer: [UInt8] = []
    private var position = 0
    /// Where the search for the current line's LF resumes: a line arriving a
    /// byte at a time is scanned once, not from its start on every byte.
    private var scanned = 0
    /// Bytes visited while looking for line ends (tests check it stays linear).
    private(set) var scannedBytes = 0
    private var request = HTTPRequest(method: "", target: "")
    private var headerBytes = 0
    private var headerCount = 0
    private var emptyLinesSkipped = 0

    public init(limits: HTTPLimits = HTTPLimits()) {
        self.limits = limits
    }

    /// Whether part of a request has arrived (for choosing the idle or the
    /// header-read timeout).
    public var hasPartialRequest: Bool {
        state != .requestLine || position < buffer.count
    }

    /// Whether the headers of the current request are complete and its body is
    /// being read (the body-read timeout applies).
    public var isReadingBody: Bool {
        switch state {
        case .body, .chunkSize, .chunkData, .chunkDataEnd, .trailers: return true
        default: return false
        }
    }

    /// Whether bytes of the current request's body have arrived already (then
    /// `100 Continue` is pointless).
    public var hasBodyBytes: Bool {
        switch state {
        case .body(let remaining): return position < buffer.count || remaining < bodyLength
        case .chunkSize, .chunkData, .chunkDataEnd, .trailers: return position < buffer.count || !request.body.isEmpty
        default: return false
        }
    }

    private var bodyLength = 0

    /// Feeds received bytes; returns the requests they complete, in order, or a
    /// failure (after which the parser returns nothing more).
    public mutating func feed(_ bytes: some Collection<UInt8>) -> [Event] {
        guard state != .failed else { return [] }
        buffer.append(contentsOf: bytes)
        return advance()
    }

    /// ``feed(_:)`` for the slice of a read buffer that the servers pass:
    /// copied without going through a generic collection.
    public mutating func feed(_ bytes: ArraySlice<UInt8>) -> [Event] {
        guard state != .failed else { return [] }
        buffer.append(contentsOf: bytes)
        return advance()
    }

    private mutating func advance() -> [Event] {
        var events: [Event] = []
        do {
            while let event = try step() {
                events.append(event)
            }
        } catch {
            state = .failed
            events.append(.failure(error))
        }
        compact()
        return events
    }

    private mutating func compact() {
        if position > 0 && (position == buffer.count || position > 4096) {
            buffer.removeFirst(position)
            scanned = max(0, scanned - position)
            position = 0
        }
    }

    private func fail(_ status: Int, _ reason: String) -> HTTPParseError {
        HTTPParseError(status: status, reason: reason)
    }

    /// What reading in one state did.
    private enum Progress {
        /// The state changed, and the next one may read on.
        case advanced
        /// The buffered bytes end inside this state.
        case needsBytes
        /// A head or a request is complete.
        case emitted(Event)
    }

    /// Advances as far as the buffered bytes allow; returns a request when one completes.
    private mutating func step() throws(HTTPParseError) -> Event? {
        while true {
            let progress: Progress
            switch state {
            case .failed: return nil
            case .requestLine: progress = try readRequestLine()
            case .headers: progress = try readHeaderLine()
            case .body(let remaining): progress = readBody(remaining: remaining)
            case .chunkSize: progress = try readChunkSize()
            case .chunkData(let remaining): progress = readChunkData(remaining: remaining)
            case .chunkDataEnd: progress = try readChunkDataEnd()
            case .trailers: progress = try readTrailerLine()
            }
            switch progress {
            case .advanced: continue
            case .needsBytes: return nil
            case .emitted(let event): return event
            }
        }
    }

    private mutating func readRequestLine() throws(HTTPParseError) -> Progress {
        guard let line = try nextLine(limit: limits.maxRequestLineBytes, tooLong: .requestLine) else {
            return .needsBytes
        }
        if line.isEmpty {
            // RFC 9112 §2.2: ignore a few empty lines before a request.
            emptyLinesSkipped += 1
            if emptyLinesSkipped > 4 { throw fail(400, "empty lines instead of a request") }
            return .advanced
        }
        try parseRequestLine(line)
        state = .headers
        return .advanced
    }

    private mutating func readHeaderLine() throws(HTTPParseError) -> Progress {
        let remaining = limits.maxHeaderBytes - headerBytes
        guard let line = try nextLine(limit: remaining, tooLong: .headerSection) else { return .needsBytes }
        headerBytes += line.count + 2
        if line.isEmpty {
            if let complete = try finishHead() { return .emitted(.request(complete)) }
            var head = request
            head.body = []
            return .emitted(.head(head))
        }
        var headers = request.headers
        request.headers = HTTPHeaders() // keep one reference, so appending does not copy
        try parseHeaderLine(line, into: &headers)
        request.headers = headers
        return .advanced
    }

    private mutating func readBody(remaining: Int) -> Progress {
        let available = buffer.count - position
        let take = min(available, remaining)
        // The whole body is reserved only once more than the first
        // read's worth has arrived, which is after the server admitted
        // the head: a stranger's Content-Length reserves nothing.
        if request.body.count + take > 16 * 1024 && request.body.capacity < bodyLength {
            request.body.reserveCapacity(bodyLength)
        }
        request.body += buffer[position..<position + take]
        position += take
        if take == remaining { return .emitted(.request(complete())) }
        state = .body(remaining: remaining - take)
        return .needsBytes
    }

    private mutating func readChunkSize() throws(HTTPParseError) -> Progress {
        guard let line = try nextLine(limit: limits.maxRequestLineBytes, tooLong: .chunkSizeLine) else {
            return .needsBytes
        }
        let sizeText = line.prefix { $0 != UInt8(ascii: ";") && $0 != 0x20 && $0 != 0x09 }
        guard !sizeText.isEmpty, sizeText.count <= 16 else { throw fail(400, "an invalid chunk size") }
        guard validChunkExtensions(line[sizeText.endIndex...]) else {
            throw fail(
                400,
                "invalid chunk extensions (';' name[=value], a token or a quoted string, at most \(maxChunkExtensions))"
            )
        }
        // Checked before every shift: 16 hex digits would wrap an Int.
        var size = 0
        for byte in sizeText {
            guard let digit = hexValue(byte) else { throw fail(400, "an invalid chunk size") }
            guard size <= limits.maxBodyBytes >> 4 else {
                throw fail(413, "the body is larger than \(limits.maxBodyBytes) bytes")
            }
            size = size << 4 | Int(digit)
        }
        if size == 0 {
            state = .trailers
        } else {
            guard size <= limits.maxBodyBytes - request.body.count else {
                throw fail(413, "the body is larger than \(limits.maxBodyBytes) bytes")
            }
            state = .chunkData(remaining: size)
        }
        return .advanced
    }

    private mutating func readChunkData(remaining: Int) -> Progress {
        let available = buffer.count - position
        let take = min(available, remaining)
        request.body += buffer[position..<position + take]
        position += take
        if take < remaining {
            state = .chunkData(remaining: remaining - take)
            return .needsBytes
        }
        state = .chunkDataEnd
        return .advanced
    }

    private mutating func readChunkDataEnd() throws(HTTPParseError) -> Progress {
        guard buffer.count - position >= 2 else { return .needsBytes }
        guard buffer[position] == 0x0D && buffer[position + 1] == 0x0A else {
            throw fail(400, "chunk data is not followed by CRLF")
        }
        position += 2
        state = .chunkSize
        return .advanced
    }

    private mutating func readTrailerLine() throws(HTTPParseError) -> Progress {
        let remaining = limits.maxHeaderBytes - headerBytes
        guard let line = try nextLine(limit: remaining, tooLong: .trailerSection) else { return .needsBytes }
        headerBytes += line.count + 2
        if line.isEmpty { return .emitted(.request(complete())) }
        var ignored = HTTPHeaders()
        try parseHeaderLine(line, into: &ignored) // validated, then dropped
        return .advanced
    }

    /// Which line ran past its limit (the error is made only then).
    private enum LongLine {
        case requestLine, headerSection, chunkSizeLine, trailerSection
    }

    private func tooLongError(_ line: LongLine) -> HTTPParseError {
        switch line {
        case .requestLine: fail(414, "the request line is longer than \(limits.maxRequestLineBytes) bytes")
        case .headerSection: fail(431, "the header section is larger than \(limits.maxHeaderBytes) bytes")
        case .chunkSizeLine: fail(400, "a chunk-size line is too long")
        case .trailerSection: fail(431, "the trailer section is too large")
        }
    }

    /// The next CRLF-terminated line without its CRLF, or nil when incomplete.
    /// A bare CR or LF is an error; a line (or an unterminated one) longer than
    /// `limit` throws `tooLong`.
    private mutating func nextLine(
        limit: Int, tooLong: LongLine
    ) throws(HTTPParseError) -> ArraySlice<UInt8>? {
        // Bytes before `scanned` were checked by an earlier call and hold no LF;
        // the CR check looks one byte back, so resume there.
        var index = max(position, scanned - 1)
        let end = buffer.count
        while index < end {
            scannedBytes &+= 1
            // Decided in byte order, so the answer never depends on how the
            // bytes were split: past `limit` bytes and a CRLF, the line is too
            // long, whatever comes after.
            if index - position > limit + 1 { throw tooLongError(tooLong) }
            let byte = buffer[index]
            if byte == 0x0A {
                guard index > position, buffer[index - 1] == 0x0D else {
                    throw fail(400, "a bare LF (lines end with CRLF)")
                }
                let line = buffer[position..<(index - 1)]
                if line.count > limit { throw tooLongError(tooLong) }
                position = index + 1
                scanned = position
                return line
            }
            if byte == 0x0D, index + 1 < end, buffer[index + 1] != 0x0A {
                throw fail(400, "a bare CR")
            }
            index += 1
        }
        scanned = end
        return nil
    }

    private mutating func parseRequestLine(_ line: ArraySlice<UInt8>) throws(HTTPParseError) {
        // Three parts, split at exactly two spaces (a request without a
        // method or a target, or with a third space, is no request line).
        let space = UInt8(ascii: " ")
        guard let firstSpace = line.firstIndex(of: space),
            let secondSpace = line[(firstSpace + 1)...].firstIndex(of: space),
            !line[(secondSpace + 1)...].contains(space), firstSpace > line.startIndex, secondSpace > firstSpace + 1
        else { throw fail(400, "the request line is not 'METHOD TARGET HTTP/1.1'") }
        let method = line[..<firstSpace]
        let target = line[(firstSpace + 1)..<secondSpace]
        let version = line[(secondSpace + 1)...]
        guard method.allSatisfy(isTokenByte) else { throw fail(400, "an invalid method") }
        guard target.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { throw fail(400, "an invalid request target") }
        guard target.first == UInt8(ascii: "/") || target.elementsEqual("*".utf8) else {
            throw fail(400, "the request target must be a path")
        }
        let start = version.startIndex
        guard version.count == 8, version.starts(with: "HTTP/".utf8), version[start + 6] == UInt8(ascii: "."),
            let major = digitValue(version[start + 5]), let minor = digitValue(version[start + 7])
        else { throw fail(400, "an invalid HTTP version") }
        guard major == 1, minor <= 1 else { throw fail(505, "HTTP/\(major).\(minor) is not supported") }
        request = HTTPRequest(
            method: String(decoding: method, as: UTF8.self), target: String(decoding: target, as: UTF8.self),
            minorVersion: minor)
        headerBytes = 0
        headerCount = 0
    }

    private mutating func parseHeaderLine(
        _ line: ArraySlice<UInt8>, into headers: inout HTTPHeaders
    ) throws(HTTPParseError) {
        guard let first = line.first, first != 0x20, first != 0x09 else { throw fail(400, "obsolete line folding") }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { throw fail(400, "a header line without ':'") }
        let name = line[line.startIndex..<colon]
        guard !name.isEmpty, name.allSatisfy(isTokenByte) else { throw fail(400, "an invalid header name") }
        var value = line[(colon + 1)...]
        while let byte = value.first, byte == 0x20 || byte == 0x09 { value = value.dropFirst() }
        while let byte = value.last, byte == 0x20 || byte == 0x09 { value = value.dropLast() }
        for byte in value where (byte < 0x20 && byte != 0x09) || byte == 0x7F {
            throw fail(400, "a control character in a header value")
        }
        headerCount += 1
        guard headerCount <= limits.maxHeaderCount else {
            throw fail(431, "more than \(limits.maxHeaderCount) header fields")
        }
        headers.add(String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
    }

    /// Decides how the body is framed once the headers are complete.
    private mutating func finishHead() throws(HTTPParseError) -> HTTPRequest? {
        // One pass over the fields (a name of another length is passed over
        // at once): most requests carry none of the framing fields, and then
        // nothing is allocated.
        var hosts = 0
        var transferEncodings: [String] = []
        var contentLengths: [String] = []
        for (name, value) in request.headers.fields {
            if name.equalsIgnoringASCIICase("Host") {
                hosts += 1
            } else if name.equalsIgnoringASCIICase("Content-Length") {
                contentLengths.append(value)
            } else if name.equalsIgnoringASCIICase("Transfer-Encoding") {
                transferEncodings.append(value)
            }
        }
        if request.minorVersion == 1 && hosts != 1 {
            throw fail(400, hosts == 0 ? "no Host header" : "more than one Host header")
        }
        if !transferEncodings.isEmpty {
            guard contentLengths.isEmpty else { throw fail(400, "both Content-Length and Transfer-Encoding") }
            guard request.minorVersion == 1 else { throw fail(400, "Transfer-Encoding in an HTTP/1.0 request") }
            // ASCII case folding only: `chun\u{212A}ed` (Kelvin sign) is not `chunked`.
            let codings = transferEncodings.flatMap { $0.split(separator: ",") }.map {
                $0.trimmingASCIIWhitespace().asciiLowercased()
            }
            guard codings == ["chunked"] else {
                throw fail(
                    400,
                    "the transfer coding '\(transferEncodings.joined(separator: ", "))' is not supported (only chunked)"
                )
            }
            state = .chunkSize
            return nil
        }
        if !contentLengths.isEmpty {
            guard contentLengths.count == 1 else { throw fail(400, "more than one Content-Length") }
            let text = contentLengths[0]
            guard !text.isEmpty, text.utf8.allSatisfy({ digitValue($0) != nil }) else {
                throw fail(400, "Content-Length '\(text)' is not a number")
            }
            guard text.utf8.count <= 15, let length = Int(text), length <= limits.maxBodyBytes else {
                throw fail(413, "the body is larger than \(limits.maxBodyBytes) bytes")
            }
            if length > 0 {
                bodyLength = length
                state = .body(remaining: length)
                return nil
            }
        }
        return complete()
    }

    private mutating func complete() -> HTTPRequest {
        let finished = request
        request = HTTPRequest(method: "", target: "")
        state = .requestLine
        emptyLinesSkipped = 0
        return finished
    }
}

private func digitValue(_ byte: UInt8) -> Int? {
    byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") ? Int(byte - UInt8(ascii: "0")) : nil
}

/// Most extensions on one chunk-size line (they carry nothing the server uses).
let maxChunkExtensions = 8

/// Whether `text` (what follows a chunk size) is RFC 9112's `chunk-ext`:
/// `*( BWS ";" BWS name [ BWS "=" BWS value ] )`, a name a token and a value
/// a token or a quoted string (ASCII only: no obs-text), at most
/// ``maxChunkExtensions`` of them.
func validChunkExtensions(_ text: ArraySlice<UInt8>) -> Bool {
    var index = text.startIndex
    var count = 0
    func skipWhitespace() { while index < text.endIndex, text[index] == 0x20 || text[index] == 0x09 { index += 1 } }
    func token() -> Bool {
        let start = index
        while index < text.endIndex, isTokenByte(text[index]) { index += 1 }
        return index > start
    }
    func quotedString() -> Bool {
        guard index < text.endIndex, text[index] == 0x22 else { return false }
        index += 1
        while index < text.endIndex {
            let byte = text[index]
            if byte == 0x22 { index += 1; return true }
            if byte == 0x5C { // quoted-pair: a backslash and HTAB, SP or a visible character
                index += 1
                guard index < text.endIndex, text[index] == 0x09 || (text[index] >= 0x20 && text[index] < 0x7F) else {
                    return false
                }
            } else if !(byte == 0x09 || (byte >= 0x20 && byte < 0x7F)) {
                return false
            }
            index += 1
        }
        return false // no closing quote
    }
    while true {
        skipWhitespace()
        guard index < text.endIndex else { return true }
        guard text[index] == UInt8(ascii: ";") else { return false }
        index += 1
        count += 1
        guard count <= maxChunkExtensions else { return false }
        skipWhitespace()
        guard token() else { return false }
        skipWhitespace()
        if index < text.endIndex, text[index] == UInt8(ascii: "=") {
            index += 1
            skipWhitespace()
            guard token() || quotedString() else { return false }
        }
    }
}

/// RFC 9110 §5.6.2 `tchar`.
private func isTokenByte(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"):
        return true
    default:
        return "!#$%&'*+-.^_`|~".utf8.contains(byte)
    }
}
