import HTTP

/// What sends one request and reads its answer: ``HTTPClient`` over a
/// connection, or, in tests that drive a sync with no server, a table of
/// answers. Used by one thread at a time.
public protocol HTTPSending: AnyObject {
    /// See ``HTTPClient/send(method:target:headers:body:expectContinue:whileWaiting:wakeup:readTimeoutMilliseconds:)``.
    func send(
        method: String, target: String, headers: HTTPHeaders, body: [UInt8], expectContinue: Bool,
        whileWaiting: (() -> Void)?, wakeup: Int32?, readTimeoutMilliseconds: Int?
    ) throws(NetError) -> HTTPResponseParser.ParsedResponse
}

extension HTTPClient: HTTPSending {}

/// A small HTTP/1.1 client over this package's TLS layer: one keep-alive
/// connection to one server, reopened when the server closes it.
public final class HTTPClient {
    public struct Configuration: Sendable {
        public var address: SocketAddress
        /// The name the certificate must carry (host names and IP addresses).
        public var serverName: String
        /// nil: plaintext (tests of the plaintext mode only).
        public var tls: TLSContext?
        public var connectTimeoutMilliseconds = 10_000
        public var readTimeoutMilliseconds = 30_000
        /// The local IPv4 address to connect from (benchmarks); the system's choice when nil.
        public var sourceAddress: String?

        public init(address: SocketAddress, serverName: String, tls: TLSContext?) {
            self.address = address
            self.serverName = serverName
            self.tls = tls
        }
    }

    public let configuration: Configuration
    private var stream: ByteStream?
    private var parser = HTTPResponseParser()

    public init(_ configuration: Configuration) {
        self.configuration = configuration
    }

    deinit { stream?.close() }

    public func close() {
        stream?.close()
        stream = nil
        parser = HTTPResponseParser()
    }

    private func connect() throws(NetError) -> ByteStream {
        if let stream { return stream }
        let deadline = Deadline.after(milliseconds: configuration.connectTimeoutMilliseconds)
        let socket = try Socket.connect(
            to: configuration.address, deadline: deadline, source: configuration.sourceAddress)
        let opened: ByteStream
        if let tls = configuration.tls {
            opened = try TLSStream.connect(
                socket: socket, context: tls, serverName: configuration.serverName, deadline: deadline)
        } else {
            opened = PlainStream(socket: socket)
        }
        stream = opened
        parser = HTTPResponseParser()
        return opened
    }

    /// Sends one request and reads its response. A connection the server had
    /// closed while idle is reopened once.
    /// - Parameters:
    ///   - expectContinue: send the head alone with `Expect: 100-continue`,
    ///     and the body only once the server answered `100 Continue` (RFC 9110
    ///     §10.1.1): a server that refuses on the head (its final answer comes
    ///     first) never receives the body. No body is sent on a timeout
    ///     either: the request fails as any unanswered one.
    ///   - whileWaiting: work to do once the request is written, while the
    ///     server works on it (a push prepares its next batch); run at most once.
    ///   - wakeup: a descriptor that ends the wait for the answer when it
    ///     becomes readable (``NetError/interrupted``; the connection is closed).
    ///   - readTimeoutMilliseconds: this answer's time (a long poll), instead of the configuration's.
    public func send(
        method: String, target: String, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [],
        expectContinue: Bool = false, whileWaiting: (() -> Void)? = nil, wakeup: Int32? = nil,
        readTimeoutMilliseconds: Int? = nil
    ) throws(NetError) -> HTTPResponseParser.ParsedResponse {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: \(configuration.serverName)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" { head += "Content-Length: \(body.count)\r\n" }
        let waitsForContinue = expectContinue && !body.isEmpty
        if waitsForContinue { head += "Expect: 100-continue\r\n" }
        head += "\r\n"
        let request =
            waitsForContinue
            ? Request(head: Array(head.utf8), body: body) : Request(head: Array(head.utf8) + body, body: nil)
        let reused = stream != nil
        var waiting = whileWaiting
        let timeout = readTimeoutMilliseconds ?? configuration.readTimeoutMilliseconds
        do {
            return try exchange(request, whileWaiting: &waiting, wakeup: wakeup, timeout: timeout)
        } catch .closed where reused {
            close()
            return try exchange(request, whileWaiting: &waiting, wakeup: wakeup, timeout: timeout)
        }
    }

    /// A request's bytes: its head (with the body, unless the body waits for `100 Continue`).
    private struct Request {
        let head: [UInt8]
        /// Sent once the server said `100 Continue`; nil when `head` holds everything.
        let body: [UInt8]?
    }

    /// Sends raw bytes and reads one response (the tests of malformed requests use it).
    func sendRaw(_ bytes: [UInt8]) throws(NetError) -> HTTPResponseParser.ParsedResponse {
        var waiting: (() -> Void)?
        return try exchange(
            Request(head: bytes, body: nil), whileWaiting: &waiting, wakeup: nil,
            timeout: configuration.readTimeoutMilliseconds)
    }

    private func exchange(
        _ request: Request, whileWaiting: inout (() -> Void)?, wakeup: Int32?,
        timeout: Int
    ) throws(NetError) -> HTTPResponseParser.ParsedResponse {
        let stream = try connect()
        var deadline = Deadline.after(milliseconds: timeout)
        var body = request.body
        func write(_ bytes: [UInt8]) throws(NetError) {
            do {
                try stream.write(bytes, deadline: deadline)
            } catch {
                close()
                throw error
            }
            guard let work = whileWaiting, body == nil else { return }
            whileWaiting = nil
            work()
            // The server's time to answer counts from now.
            deadline = Deadline.after(milliseconds: timeout)
        }
        try write(request.head)
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var receivedAny = false
        while true {
            let parsed: HTTPResponseParser.ParsedResponse?
            do { parsed = try parser.next() } catch {
                close()
                throw .badAddress("the server's response is not HTTP: \(error.reason)")
            }
            if let response = parsed {
                if (100...199).contains(response.status) {
                    // `100 Continue`: the body goes now (another interim answer is passed over).
                    if response.status == 100, let waiting = body {
                        body = nil
                        try write(waiting)
                    }
                    continue
                }
                // A final answer before the body was sent leaves the connection unusable.
                if !response.keepAlive || body != nil { close() }
                return response
            }
            let result = buffer.withUnsafeMutableBytes { raw in
                Result<Int?, NetError> { () throws(NetError) in
                    try stream.read(into: raw, deadline: deadline, wakeup: wakeup, what: "waiting for the response")
                }
            }
            let read: Int?
            do { read = try result.get() } catch {
                close()
                throw error
            }
            guard let count = read else {
                // Woken: the answer is given up, and with it the connection.
                close()
                throw .interrupted
            }
            if count == 0 {
                defer { close() }
                if !receivedAny { throw .closed }
                do {
                    if let response = try parser.next(atEnd: true) { return response }
                } catch {
                    throw .badAddress("the server's response is not HTTP: \(error.reason)")
                }
                throw .closed
            }
            receivedAny = true
            parser.feed(buffer[0..<count])
        }
    }
}
