import Glibc
import HTTP
import Synchronization

/// An HTTP/1.1 server on sockets, with TLS through OpenSSL or (explicitly)
/// plaintext. One thread accepts per listener; each connection is served by a
/// thread of its own, up to ``HTTPLimits/maxConnections``. Every wait has a
/// deadline from ``HTTPLimits``: TLS handshake, header read, body read, idle
/// keep-alive and write.
public final class HTTPServer: Sendable {
    /// What the handler learns about a request besides the request itself.
    public struct RequestContext: Sendable {
        public let peer: String
    }

    /// Answers a request. A response with status 0 closes the connection
    /// without answering (used to simulate an answer lost on the way).
    public typealias Handler = @Sendable (HTTPRequest, RequestContext) -> HTTPResponse

    /// Hooks for metrics and logs.
    public struct Observer: Sendable {
        public var requestFinished: @Sendable (_ request: HTTPRequest, _ status: Int, _ milliseconds: Double) -> Void = { _, _, _ in }
        public var rejected: @Sendable (_ peer: String, _ reason: String) -> Void = { _, _ in }
        public init() {}
    }

    public let limits: HTTPLimits
    private let addresses: [SocketAddress]
    private let handler: Handler
    private let observer: Observer
    private let tls: Mutex<TLSContext?>
    private let usesTLS: Bool
    private let connections = Atomic<Int>(0)
    private let shuttingDown = Atomic<Bool>(false)
    private let acceptThreadsRunning = Atomic<Int>(0)
    /// Written once at shutdown; every waiting thread polls its read end.
    private let wakeup: (read: Int32, write: Int32)
    private let listeners: Mutex<[Socket]> = Mutex([])

    /// - Parameter tls: the server TLS context, or nil for plaintext (only
    ///   with `--insecure-plaintext`).
    public init(addresses: [SocketAddress], tls: TLSContext?, limits: HTTPLimits, observer: Observer = Observer(), handler: @escaping Handler) throws(NetError) {
        self.addresses = addresses
        self.tls = Mutex(tls)
        usesTLS = tls != nil
        self.limits = limits
        self.observer = observer
        self.handler = handler
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw .lastSystem("pipe") }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        wakeup = (fds[0], fds[1])
    }

    deinit {
        close(wakeup.read)
        close(wakeup.write)
    }

    /// Binds every address and starts accepting.
    /// - Returns: the bound ports, in the order of the addresses (port 0 gets an ephemeral one).
    /// - Throws: ``NetError`` when an address cannot be bound (in use, bad host, no permission).
    @discardableResult
    public func start() throws(NetError) -> [UInt16] {
        var sockets: [Socket] = []
        for address in addresses {
            sockets.append(try Socket.listen(on: address))
        }
        listeners.withLock { $0 = sockets }
        for listener in sockets {
            acceptThreadsRunning.add(1, ordering: .relaxed)
            try startThread { [self] in
                acceptLoop(listener)
                acceptThreadsRunning.subtract(1, ordering: .relaxed)
            }
        }
        return sockets.map(\.localPort)
    }

    /// Connections being served now.
    public var openConnections: Int { connections.load(ordering: .relaxed) }

    /// Replaces the TLS context for new connections (certificate reload).
    public func reloadTLS(_ context: TLSContext) {
        tls.withLock { $0 = context }
    }

    /// Stops accepting, lets in-flight requests finish (their responses say
    /// `Connection: close`), closes idle connections, and waits up to
    /// `graceMilliseconds` for all connections to end.
    /// - Returns: true when every connection ended in time.
    @discardableResult
    public func shutdown(graceMilliseconds: Int = 30_000) -> Bool {
        guard !shuttingDown.exchange(true, ordering: .sequentiallyConsistent) else { return true }
        var byte: UInt8 = 1
        _ = write(wakeup.write, &byte, 1)
        let deadline = Deadline.after(milliseconds: graceMilliseconds)
        while (connections.load(ordering: .relaxed) > 0 || acceptThreadsRunning.load(ordering: .relaxed) > 0) && !deadline.hasPassed {
            usleep(5_000)
        }
        listeners.withLock { sockets in
            for socket in sockets { socket.close() }
            sockets = []
        }
        return connections.load(ordering: .relaxed) == 0
    }

    private func acceptLoop(_ listener: Socket) {
        while !shuttingDown.load(ordering: .relaxed) {
            var fds = [pollfd(fd: listener.descriptor, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeup.read, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, 1000)
            if ready <= 0 || fds[1].revents != 0 { continue }
            while !shuttingDown.load(ordering: .relaxed) {
                let accepted: (Socket, String)?
                do { accepted = try listener.accept() } catch {
                    observer.rejected("", "accept failed: \(error)")
                    usleep(10_000) // e.g. out of file descriptors: do not spin
                    break
                }
                guard let (socket, peer) = accepted else { break }
                let open = connections.add(1, ordering: .relaxed).newValue
                if open > limits.maxConnections {
                    connections.subtract(1, ordering: .relaxed)
                    observer.rejected(peer, "connection cap of \(limits.maxConnections) reached")
                    if !usesTLS {
                        let busy = HTTPResponse.json(503, #"{"error":"busy","message":"too many connections"}"#).serialized(keepAlive: false)
                        _ = busy.withUnsafeBytes { send(socket.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    }
                    socket.close()
                    continue
                }
                do {
                    try startThread { [self] in
                        serve(socket, peer: peer)
                        connections.subtract(1, ordering: .relaxed)
                    }
                } catch {
                    connections.subtract(1, ordering: .relaxed)
                    observer.rejected(peer, "cannot start a thread: \(error)")
                    socket.close()
                }
            }
        }
    }

    private func serve(_ socket: Socket, peer: String) {
        let stream: ByteStream
        if usesTLS {
            guard let context = tls.withLock({ $0 }) else { socket.close(); return }
            do {
                stream = try TLSStream.accept(socket: socket, context: context, deadline: .after(milliseconds: limits.tlsHandshakeTimeoutMilliseconds))
            } catch {
                observer.rejected(peer, "TLS handshake failed: \(error)")
                socket.close()
                return
            }
        } else {
            stream = PlainStream(socket: socket)
        }
        defer { stream.close() }
        var parser = HTTPRequestParser(limits: limits)
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var served = 0
        var headerDeadline = Deadline.never
        var bodyDeadline = Deadline.never
        while true {
            let partial = parser.hasPartialRequest
            let deadline = !partial ? Deadline.after(milliseconds: limits.idleTimeoutMilliseconds)
                : parser.isReadingBody ? bodyDeadline : headerDeadline
            let result = buffer.withUnsafeMutableBytes { raw in
                Result<Int?, NetError> { () throws(NetError) in
                    try stream.read(into: raw, deadline: deadline, wakeup: partial ? nil : wakeup.read,
                                    what: partial ? "reading a request" : "waiting for a request")
                }
            }
            let read: Int?
            do {
                read = try result.get()
            } catch .timeout {
                if partial {
                    let status = parser.isReadingBody ? "the body" : "the headers"
                    respond(stream, HTTPResponse.json(408, #"{"error":"timeout","message":"\#(status) did not arrive in time"}"#), keepAlive: false)
                }
                return
            } catch {
                return
            }
            guard let count = read, count > 0 else { return } // woken for shutdown, or closed by the peer
            let wasPartial = parser.hasPartialRequest
            let wasReadingBody = parser.isReadingBody
            let events = parser.feed(buffer[0..<count])
            if !wasPartial && parser.hasPartialRequest { headerDeadline = .after(milliseconds: limits.headerReadTimeoutMilliseconds) }
            if !wasReadingBody && parser.isReadingBody { bodyDeadline = .after(milliseconds: limits.bodyReadTimeoutMilliseconds) }
            for event in events {
                switch event {
                case .failure(let error):
                    let body = #"{"error":"bad_request","message":"\#(error.reason.replacingJSONSpecials())"}"#
                    respond(stream, HTTPResponse.json(error.status, body), keepAlive: false)
                    observer.rejected(peer, "HTTP \(error.status): \(error.reason)")
                    return
                case .request(let request):
                    served += 1
                    if !wasPartial || parser.hasPartialRequest {
                        headerDeadline = .after(milliseconds: limits.headerReadTimeoutMilliseconds)
                    }
                    let started = Deadline.now()
                    let response = handler(request, RequestContext(peer: peer))
                    // Status 0: close without answering (a proxy that simulates a lost answer).
                    if response.status == 0 { return }
                    let keepAlive = request.keepAlive && served < limits.maxRequestsPerConnection && !shuttingDown.load(ordering: .relaxed)
                    let written = respond(stream, response, keepAlive: keepAlive)
                    observer.requestFinished(request, response.status, Double(Deadline.now().milliseconds - started.milliseconds))
                    if !keepAlive || !written { return }
                }
            }
        }
    }

    @discardableResult
    private func respond(_ stream: ByteStream, _ response: HTTPResponse, keepAlive: Bool) -> Bool {
        let millis = Int64(time(nil)) * 1000
        do {
            try stream.write(response.serialized(keepAlive: keepAlive, dateMillis: millis), deadline: .after(milliseconds: limits.writeTimeoutMilliseconds))
            return true
        } catch {
            return false
        }
    }
}

extension String {
    /// Escapes `"` and `\` and drops control characters, for a JSON string body.
    func replacingJSONSpecials() -> String {
        var output = ""
        for scalar in unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case _ where scalar.value < 0x20: continue
            default: output.unicodeScalars.append(scalar)
            }
        }
        return output
    }
}
