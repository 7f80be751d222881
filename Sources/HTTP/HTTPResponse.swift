import Model

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
    public var later: LaterAnswer?

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
    public func serialized(keepAlive: Bool, dateMillis: Int64? = nil, includeBody: Bool = true) -> [UInt8] {
        includeBody ? head(keepAlive: keepAlive, dateMillis: dateMillis) + body : head(keepAlive: keepAlive, dateMillis: dateMillis)
    }

    /// ``serialized(keepAlive:dateMillis:includeBody:)`` without the body:
    /// a large body is written after it as it is, not copied behind it.
    public func head(keepAlive: Bool, dateMillis: Int64? = nil) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(Self.reasonPhrase(status))\r\n"
        for (name, value) in headers {
            let lower = name.asciiLowercased()
            if lower == "content-length" || lower == "connection" { continue }
            head += "\(name): \(value)\r\n"
        }
        if let dateMillis { head += "Date: \(HTTPDate.format(millis: dateMillis))\r\n" }
        head += "Content-Length: \(body.count)\r\n"
        if !keepAlive { head += "Connection: close\r\n" }
        head += "\r\n"
        return Array(head.utf8)
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
    public static func format(millis: Int64) -> String {
        let fields = Timestamp.utcFields(millis: millis)
        let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(weekdays[Int(fields.weekday)]), \(two(fields.day)) \(months[Int(fields.month - 1)]) \(fields.year) "
            + "\(two(fields.hour)):\(two(fields.minute)):\(two(fields.second)) GMT"
    }
}
