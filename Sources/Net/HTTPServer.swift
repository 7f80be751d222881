import Glibc
import HTTP
import Synchronization
import SystemServices

/// An HTTP/1.1 server on sockets, with TLS through OpenSSL or (explicitly)
/// plaintext. Event loops (``ConnectionLoop``, one per core) accept and hold
/// every connection that is not being answered: in its TLS handshake, waiting
/// for a request, idle between requests; up to ``HTTPLimits/maxConnections`` in
/// all. The loops read requests without waiting: headers still arriving
/// cost their bytes, not a thread; a request the server answers from memory
/// (``Quick``) is answered there. Any other request is read on and answered
/// by a thread once its headers are in, up to
/// ``HTTPLimits/maxActiveRequests`` at once (more are answered 503), and its
/// connection goes back to the loop after the answer. Every wait has
/// a deadline from ``HTTPLimits``: TLS handshake, header read, body read,
/// idle keep-alive and write.
public final class HTTPServer: Sendable {
    /// What the handler learns about a request besides the request itself.
    public struct RequestContext: Sendable {
        public let peer: String
    }

    /// Answers a request. A response with status 0 closes the connection
    /// without answering (used to simulate an answer lost on the way).
    public typealias Handler = @Sendable (HTTPRequest, RequestContext) -> HTTPResponse

    /// Answers a whole request on the event loop that read it, from memory
    /// and without waiting for anything (no store, no lock held for long),
    /// or returns nil: the request then goes to a thread and ``Handler``.
    /// A busy client's no-change pulls cost no thread hand-over this way.
    public typealias Quick = @Sendable (HTTPRequest, RequestContext) -> HTTPResponse?

    /// Decides on a request's head, before its body is read: nil lets the
    /// body come (and answers `Expect: 100-continue`); a response refuses it
    /// (the connection then closes). The server authenticates here, so a
    /// stranger cannot make it hold a body in memory.
    public typealias Admission = @Sendable (HTTPRequest, RequestContext) -> HTTPResponse?

    /// How the answers the server makes itself are worded: too many
    /// connections, a request too slow or malformed, before any handler sees
    /// it. The protocol above decides (brsyncd answers with its JSON error
    /// codes); plain text otherwise.
    public struct OwnAnswers: Sendable {
        public enum Reason: Sendable, Equatable {
            /// Too many connections (503; `Retry-After` is added).
            case busy
            /// The headers or the body did not arrive in time (408).
            case timeout
            /// A request the parser refused, or an expectation not supported.
            case badRequest
        }

        public var make: @Sendable (_ status: Int, _ reason: Reason, _ message: String) -> HTTPResponse

        public init(make: @escaping @Sendable (_ status: Int, _ reason: Reason, _ message: String) -> HTTPResponse) {
            self.make = make
        }

        public static let plainText = OwnAnswers { status, _, message in
            HTTPResponse(
                status: status, headers: ["Content-Type": "text/plain; charset=utf-8"],
                body: Array((message + "\n").utf8))
        }
    }

    /// Hooks for metrics and logs.
    public struct Observer: Sendable {
        public var requestFinished: @Sendable (_ request: HTTPRequest, _ status: Int, _ milliseconds: Double) -> Void =
            { _, _, _ in }
        public var rejected: @Sendable (_ peer: String, _ reason: String) -> Void = { _, _ in }
        public init() {}
    }

    public let limits: HTTPLimits
    private let addresses: [SocketAddress]
    let handler: Handler
    let quick: Quick?
    let admission: Admission
    let observer: Observer
    let ownAnswers: OwnAnswers
    /// Open connections per peer address (without the port).
    let connectionsByAddress = Locked<[String: Int]>([:])
    let refusals = Atomic<Int>(0)
    let tls: Locked<TLSContext?>
    let usesTLS: Bool
    let connections = Atomic<Int>(0)
    /// The most connections open since memory was last given back (``giveBackAfterBurst()``).
    private let peakSinceTrim = Atomic<Int>(0)
    /// When memory was last given back (monotonic milliseconds).
    private let lastTrimMillis = Atomic<Int64>(0)
    /// The connections open at the last look (``giveBackAfterBurst()``).
    private let openAtLastLook = Atomic<Int>(0)
    let shuttingDown = Atomic<Bool>(false)
    /// Requests being read and answered on threads now.
    private let active = Atomic<Int>(0)
    /// The event loops, one per core (at most 8): each accepts, runs TLS
    /// handshakes and holds waiting connections; a connection given back
    /// goes to the loop its descriptor picks.
    private let loops = Locked<[ConnectionLoop]>([])
    /// Event loop threads still running.
    private let loopsRunning = Atomic<Int>(0)
    /// Written once at shutdown; every waiting thread polls its read end.
    let wakeup: (read: Int32, write: Int32)
    let listeners: Locked<[Socket]> = Locked([])

    /// - Parameter tls: the server TLS context, or nil for plaintext (only
    ///   with `--insecure-plaintext`).
    public init(
        addresses: [SocketAddress], tls: TLSContext?, limits: HTTPLimits, observer: Observer = Observer(),
        ownAnswers: OwnAnswers = .plainText,
        admission: @escaping Admission = { _, _ in nil }, quick: Quick? = nil, handler: @escaping Handler
    ) throws(NetError) {
        self.ownAnswers = ownAnswers
        self.quick = quick
        self.addresses = addresses
        self.tls = Locked(tls)
        usesTLS = tls != nil
        self.limits = limits
        self.observer = observer
        self.handler = handler
        self.admission = admission
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
        Self.raiseDescriptorLimit()
        let count = max(1, min(Self.maxLoops, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))
        var made: [ConnectionLoop] = []
        for _ in 0..<count { made.append(try ConnectionLoop(server: self, listeners: sockets)) }
        loops.withLock { $0 = made }
        for connectionLoop in made {
            loopsRunning.add(1, ordering: .relaxed)
            do {
                try startThread { [self] in
                    connectionLoop.run()
                    loopsRunning.subtract(1, ordering: .relaxed)
                }
            } catch {
                loopsRunning.subtract(1, ordering: .relaxed)
                if loopsRunning.load(ordering: .relaxed) == 0 { throw error }
            }
        }
        return sockets.map(\.localPort)
    }

    /// Called by each loop four times a second. When a burst of connections
    /// has gone (a flood, every machine reconnecting after an outage): at
    /// least ``trimAfterClosed`` fewer than the peak, at most half of it, and
    /// no change since the last look (the burst is over, not still closing),
    /// the heap their buffers took goes back to the system (`malloc_trim`;
    /// glibc keeps freed memory otherwise), at most once a second, by one loop.
    func giveBackAfterBurst() {
        let open = connections.load(ordering: .relaxed)
        let settled = openAtLastLook.exchange(open, ordering: .relaxed) == open
        var peak = peakSinceTrim.load(ordering: .relaxed)
        while open > peak {
            let (exchanged, original) = peakSinceTrim.compareExchange(expected: peak, desired: open, ordering: .relaxed)
            if exchanged { return }
            peak = original
        }
        guard settled, peak - open >= Self.trimAfterClosed, open <= peak / 2 else { return }
        let now = Clock.monotonicMillis(), last = lastTrimMillis.load(ordering: .relaxed)
        guard now - last >= 1_000,
            lastTrimMillis.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged
        else { return }
        peakSinceTrim.store(open, ordering: .relaxed)
        Memory.giveBack()
    }

    /// How many connections must have closed since the peak before memory is given back.
    static let trimAfterClosed = 256

    /// Connections open now: waiting in the event loop or being answered.
    public var openConnections: Int { connections.load(ordering: .relaxed) }
    /// Connections waiting in the event loop now (no thread of their own).
    public var waitingConnections: Int {
        loops.withLock { $0.reduce(0) { $0 + $1.waitingCount.load(ordering: .relaxed) } }
    }

    /// Event loops at most, whatever the cores.
    static let maxLoops = 8

    /// The loop that takes `stream` back (nil before start).
    func loop(for stream: any ByteStream) -> ConnectionLoop? {
        loops.withLock { $0.isEmpty ? nil : $0[Int(stream.socket.descriptor) % $0.count] }
    }
    /// Requests being read or answered on threads now.
    public var activeRequests: Int { active.load(ordering: .relaxed) }

    /// Raises this process's soft limit of open files to its hard limit,
    /// once: every connection, waiting or not, is a descriptor.
    static func raiseDescriptorLimit() {
        _ = descriptorLimitRaised
    }

    private static let descriptorLimitRaised: Void = {
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
    }()

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
        while (connections.load(ordering: .relaxed) > 0 || loopsRunning.load(ordering: .relaxed) > 0)
            && !deadline.hasPassed
        {
            usleep(5_000)
        }
        listeners.withLock { sockets in
            for socket in sockets { socket.close() }
            sockets = []
        }
        return connections.load(ordering: .relaxed) == 0
    }

    /// Counts a new connection from `address` (``addressGroup(of:)``), or
    /// says why it is over a cap (and counts nothing).
    func admitConnection(_ address: String) -> String? {
        let open = connections.add(1, ordering: .relaxed).newValue
        let fromAddress = connectionsByAddress.withLock { counts -> Int in
            counts[address, default: 0] += 1
            return counts[address] ?? 0
        }
        let refusal: String? =
            open > limits.maxConnections
            ? "connection cap of \(limits.maxConnections) reached"
            : fromAddress > limits.maxConnectionsPerAddress
                ? "\(limits.maxConnectionsPerAddress) connections from \(address) already"
                : nil
        if refusal != nil { release(address) }
        return refusal
    }

    /// Gives a connection whose request is arriving a thread, unless
    /// ``HTTPLimits/maxActiveRequests`` are in progress: then it is answered
    /// 503 with `Retry-After` (on the small refusal budget) and closed.
    /// - Parameter resuming: a request whose answer was waited for (``DeferredResponse``): answered first.
    /// - Parameter preread: what the loop read of the request already.
    func startServing(
        _ stream: any ByteStream, peer: String, address: String, served: Int, resuming: ConnectionLoop.Parked? = nil,
        preread: [UInt8] = []
    ) {
        guard active.add(1, ordering: .relaxed).newValue <= limits.maxActiveRequests else {
            active.subtract(1, ordering: .relaxed)
            resuming?.later.end()
            observer.rejected(peer, "\(limits.maxActiveRequests) requests in progress already")
            refuse(stream: stream, address: address)
            return
        }
        let handed = ConnectionHandoff(stream: stream)
        do {
            try startThread { [self] in
                serve(handed.stream, peer: peer, address: address, served: served, resuming: resuming, preread: preread)
                active.subtract(1, ordering: .relaxed)
            }
        } catch {
            active.subtract(1, ordering: .relaxed)
            resuming?.later.end()
            observer.rejected(peer, "cannot start a thread: \(error)")
            stream.close()
            release(address)
        }
    }

    func release(_ address: String) {
        connections.subtract(1, ordering: .relaxed)
        connectionsByAddress.withLock { counts in
            let left = (counts[address] ?? 1) - 1
            counts[address] = left > 0 ? left : nil
        }
    }

    /// Reads and answers the requests of a connection whose request is
    /// arriving (its TLS handshake done by the event loop); once an answer is
    /// written and nothing more waits to be read, the connection goes back
    /// to the loop to wait for its next request without a thread. A request
    /// whose answer comes later (``HTTPResponse/later``) goes back to the
    /// loop to wait for it, and comes here again with it as `resuming`.
    /// - Parameters:
    ///   - served: requests answered on it before.
    ///   - resuming: a request whose wait is over: its answer is made and written first.
    ///   - preread: the bytes of the request the loop read already: parsed first.
    func serve(
        _ stream: any ByteStream, peer: String, address: String, served: Int, resuming: ConnectionLoop.Parked? = nil,
        preread: [UInt8] = []
    ) {
        let connection = ServedConnection(
            server: self, stream: stream, peer: peer, address: address, served: served, preread: preread)
        defer { connection.end() }
        connection.run(resuming: resuming)
    }

    @discardableResult
    func respond(
        _ stream: ByteStream, _ response: HTTPResponse, keepAlive: Bool, for request: HTTPRequest? = nil
    ) -> Bool {
        let millis = Clock.wallMillis()
        let includeBody = request?.method != "HEAD"
        let deadline = Deadline.after(milliseconds: limits.writeTimeoutMilliseconds)
        do {
            // A large body (a page of records) is written as it is: a copy behind the head would double what an answer holds.
            if includeBody && response.body.count > 64 * 1024 {
                try stream.write(
                    response.head(keepAlive: keepAlive, dateMillis: millis, toHTTP10: request?.minorVersion == 0),
                    deadline: deadline)
                try stream.write(response.body, deadline: deadline)
            } else {
                try stream.write(
                    response.serialized(
                        keepAlive: keepAlive, dateMillis: millis, includeBody: includeBody,
                        toHTTP10: request?.minorVersion == 0), deadline: deadline)
            }
            return true
        } catch {
            return false
        }
    }
}
