import HTTP

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
        let socket = try Socket.connect(to: configuration.address, deadline: deadline, source: configuration.sourceAddress)
        let opened: ByteStream
        if let tls = configuration.tls {
            opened = try TLSStream.connect(socket: socket, context: tls, serverName: configuration.serverName, deadline: deadline)
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
    ///   - whileWaiting: work to do once the request is written, while the
    ///     server works on it (a push prepares its next batch); run at most once.
    ///   - wakeup: a descriptor that ends the wait for the answer when it
    ///     becomes readable (``NetError/interrupted``; the connection is closed).
    ///   - readTimeoutMilliseconds: this answer's time (a long poll), instead of the configuration's.
    public func send(method: String, target: String, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [],
                     whileWaiting: (() -> Void)? = nil, wakeup: Int32? = nil,
                     readTimeoutMilliseconds: Int? = nil) throws(NetError) -> HTTPResponseParser.ParsedResponse {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: \(configuration.serverName)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        let bytes = Array(head.utf8) + body
        let reused = stream != nil
        var waiting = whileWaiting
        let timeout = readTimeoutMilliseconds ?? configuration.readTimeoutMilliseconds
        do {
            return try exchange(bytes, whileWaiting: &waiting, wakeup: wakeup, timeout: timeout)
        } catch .closed where reused {
            close()
            return try exchange(bytes, whileWaiting: &waiting, wakeup: wakeup, timeout: timeout)
        }
    }

    /// Sends raw bytes and reads one response (the tests of malformed requests use it).
    func sendRaw(_ bytes: [UInt8]) throws(NetError) -> HTTPResponseParser.ParsedResponse {
        var waiting: (() -> Void)?
        return try exchange(bytes, whileWaiting: &waiting, wakeup: nil, timeout: configuration.readTimeoutMilliseconds)
    }

    private func exchange(_ bytes: [UInt8], whileWaiting: inout (() -> Void)?, wakeup: Int32?,
                          timeout: Int) throws(NetError) -> HTTPResponseParser.ParsedResponse {
        let stream = try connect()
        var deadline = Deadline.after(milliseconds: timeout)
        do {
            try stream.write(bytes, deadline: deadline)
        } catch {
            close()
            throw error
        }
        if let work = whileWaiting {
            whileWaiting = nil
            work()
            // The server's time to answer counts from now.
            deadline = Deadline.after(milliseconds: timeout)
        }
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var receivedAny = false
        while true {
            do {
                if let response = try parser.next() {
                    if !response.keepAlive { close() }
                    return response
                }
            } catch {
                close()
                throw .badAddress("the server's response is not HTTP: \(error.reason)")
            }
            let result = buffer.withUnsafeMutableBytes { raw in
                Result<Int?, NetError> { () throws(NetError) in try stream.read(into: raw, deadline: deadline, wakeup: wakeup, what: "waiting for the response") }
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
