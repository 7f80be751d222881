import JSON
import Synchronization

/// A response to serialise.
public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// Run by the server once the answer is written, or could not be (what
    /// a request holds until its answer has left: a slot of a limit).
    public var whenWritten: WhenWritten?
    /// Not the answer yet: the server waits for this one (a long poll).
    /// Status, headers and body of this response are not sent;
    /// `whenWritten` runs as the wait begins.
    public var later: DeferredResponse?

    /// An action, not part of what an answer is (two answers with different
    /// actions are equal).
    public struct WhenWritten: Sendable, Equatable {
        public let run: @Sendable () -> Void
        public init(_ run: @escaping @Sendable () -> Void) { self.run = run }
        public static func == (_: WhenWritten, _: WhenWritten) -> Bool { true }
    }

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response.
    public static func json(_ status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: Array(text.utf8))
    }

    /// The bytes on the wire: status line, headers (with `Content-Length`, and
    /// `Connection: close` when the connection ends), a blank line and the body.
    /// - Parameter includeBody: false for an answer to `HEAD`, which carries the
    ///   headers of the GET answer, `Content-Length` included, but never a body
    ///   (RFC 9110 §9.3.2).
    /// - Parameter toHTTP10: the request was HTTP/1.0, whose connections
    ///   close unless the answer says `Connection: keep-alive`.
    public func serialized(
        keepAlive: Bool, dateMillis: Int64? = nil, includeBody: Bool = true, toHTTP10: Bool = false
    ) -> [UInt8] {
        var bytes = head(
            keepAlive: keepAlive, dateMillis: dateMillis, reserving: includeBody ? body.count : 0, toHTTP10: toHTTP10)
        if includeBody { bytes += body }
        return bytes
    }

    /// ``serialized(keepAlive:dateMillis:includeBody:)`` without the body:
    /// a large body is written after it as it is, not copied behind it.
    public func head(keepAlive: Bool, dateMillis: Int64? = nil, toHTTP10: Bool = false) -> [UInt8] {
        head(keepAlive: keepAlive, dateMillis: dateMillis, reserving: 0, toHTTP10: toHTTP10)
    }

    /// The head, written as bytes (every answer of a busy server has one),
    /// with room for `extra` bytes after it.
    private func head(keepAlive: Bool, dateMillis: Int64?, reserving extra: Int, toHTTP10: Bool) -> [UInt8] {
        var head: [UInt8] = []
        head.reserveCapacity(128 + headers.fields.count * 64 + extra)
        head += "HTTP/1.1 ".utf8
        head += String(status).utf8
        head.append(UInt8(ascii: " "))
        head += Self.reasonPhrase(status).utf8
        head += "\r\n".utf8
        for (name, value) in headers {
            if name.utf8.count == 14 || name.utf8.count == 10 {
                let lower = name.asciiLowercased()
                if lower == "content-length" || lower == "connection" { continue }
            }
            head += name.utf8
            head += ": ".utf8
            head += value.utf8
            head += "\r\n".utf8
        }
        if let dateMillis {
            head += "Date: ".utf8
            HTTPDate.append(millis: dateMillis, to: &head)
            head += "\r\n".utf8
        }
        head += "Content-Length: ".utf8
        head += String(body.count).utf8
        head += "\r\n".utf8
        if !keepAlive {
            head += "Connection: close\r\n".utf8
        } else if toHTTP10 {
            head += "Connection: keep-alive\r\n".utf8
        }
        head += "\r\n".utf8
        return head
    }

    /// The interim answer to `Expect: 100-continue` (RFC 9110 §10.1.1).
    public static let continueBytes: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    public static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 200: return "OK"
        case 201: return "Created"
        case 204: return "No Content"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 411: return "Length Required"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 415: return "Unsupported Media Type"
        case 417: return "Expectation Failed"
        case 422: return "Unprocessable Content"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 503: return "Service Unavailable"
        case 505: return "HTTP Version Not Supported"
        default: return "Status \(status)"
        }
    }
}

/// IMF-fixdate (RFC 9110 §5.6.7): `Sun, 06 Nov 1994 08:49:37 GMT`.
public enum HTTPDate {
    /// The last second formatted, shared by every answer in it.
    private static let last = Mutex<(second: Int64, text: [UInt8])>((-1, []))

    /// Appends ``format(millis:)``, formatting each second once.
    public static func append(millis: Int64, to output: inout [UInt8]) {
        let second = millis / 1000
        if let text = last.withLock({ $0.second == second ? $0.text : nil }) {
            output += text
            return
        }
        let text = Array(format(millis: millis).utf8)
        last.withLock { $0 = (second, text) }
        output += text
    }

    public static func format(millis: Int64) -> String {
        let fields = Timestamp.utcFields(millis: millis)
        let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(weekdays[Int(fields.weekday)]), \(two(fields.day)) \(months[Int(fields.month - 1)]) \(fields.year) "
            + "\(two(fields.hour)):\(two(fields.minute)):\(two(fields.second)) GMT"
    }
}
