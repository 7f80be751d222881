import CLinux
import Glibc
import HTTP
import Synchronization
import SystemServices

/// One of the server's event loops (one per core): a thread and epoll hold
/// the connections that are not being answered — accepting, in its TLS handshake, waiting for its
/// first request, idle between keep-alive requests. Such a connection costs
/// memory (a socket and a TLS session), never a thread: a flood of
/// connections that never finish a handshake, or thousands of idle clients,
/// leave the threads to requests. The loop reads a connection's request
/// itself, never waiting (a slow client's headers cost their bytes here);
/// a whole request the server answers from memory (``HTTPServer/Quick``) is
/// answered here, and any other gets a thread with the bytes read, and
/// comes back here when its answer is written and nothing more waits on it
/// (``HTTPServer/serve(_:peer:address:served:resuming:preread:)``).
/// A request whose answer comes later (a long poll, ``DeferredResponse``) waits
/// here too, without a thread, until it is fired, its time is up, or the
/// client sends more; then a thread makes and writes its answer.
final class ConnectionLoop: @unchecked Sendable {
    // @unchecked: `waiting` and `epoll` registrations are the loop thread's
    // alone; other threads only append to `returned` (under its lock) and
    // write to `wake`.
    private unowned let server: HTTPServer
    private let epoll: Int32
    /// An eventfd: written when a connection comes back (or at shutdown).
    private let wake: Int32
    private let listeners: [Socket]

    /// A connection waiting here.
    final class Waiting: @unchecked Sendable { // owned by one thread at a time, as ConnectionHandoff
        let socket: Socket
        let stream: any ByteStream
        let peer: String
        let address: String
        /// Requests answered on it so far.
        var served: Int
        var handshaking: Bool
        var deadline: Deadline
        /// What has arrived of its next request, read here (headers still
        /// arriving cost these bytes, not a thread), and its parser.
        var pending: [UInt8] = []
        var parser: HTTPRequestParser?
        /// The request whose answer it waits for, if it waits for one.
        let parked: Parked?
        /// Its last answer is written and its sending side closed: what the
        /// client still sends is read and discarded until it closes too
        /// (``HTTPServer/linger(_:milliseconds:)``, without a thread), and
        /// how many bytes so far.
        var lingering = false
        var discarded = 0
        /// Registered for writability (a handshake waiting to write), not readability.
        var watchingWrite = false

        init(
            socket: Socket, stream: any ByteStream, peer: String, address: String, served: Int, handshaking: Bool,
            deadline: Deadline,
            parked: Parked? = nil
        ) {
            self.parked = parked
            self.socket = socket
            self.stream = stream
            self.peer = peer
            self.address = address
            self.served = served
            self.handshaking = handshaking
            self.deadline = deadline
        }
    }

    /// A request waiting for its answer (``DeferredResponse``).
    struct Parked: Sendable {
        let request: HTTPRequest
        let later: DeferredResponse
    }

    private var waiting: [Int32: Waiting] = [:]
    /// Where the loop reads requests (its thread's alone).
    private var scratch = [UInt8](repeating: 0, count: 16 * 1024)
    /// Connections given back by their threads, for the loop to take, and
    /// waiting ones whose answer was fired; once the loop has ended
    /// (`closed`), a thread closes its connection itself.
    private let returned = Locked<(queue: [Waiting], fired: [Waiting], closed: Bool)>(([], [], false))
    /// Connections waiting here now (for tests and metrics).
    let waitingCount = Atomic<Int>(0)

    init(server: HTTPServer, listeners: [Socket]) throws(NetError) {
        self.server = server
        self.listeners = listeners
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epoll >= 0 else { throw .lastSystem("epoll_create1") }
        wake = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard wake >= 0 else { Glibc.close(epoll); throw .lastSystem("eventfd") }
        // Every loop waits on the listeners; a new connection wakes one of
        // them (EPOLLEXCLUSIVE), which accepts it and runs its handshake.
        for descriptor in listeners.map(\.descriptor) {
            register(descriptor, events: UInt32(EPOLLIN.rawValue) | UInt32(EPOLLEXCLUSIVE.rawValue), add: true)
        }
        for descriptor in [wake, server.wakeup.read] {
            register(descriptor, events: UInt32(EPOLLIN.rawValue), add: true)
        }
    }

    deinit {
        Glibc.close(epoll)
        Glibc.close(wake)
    }

    private func register(_ descriptor: Int32, events: UInt32, add: Bool) {
        var event = epoll_event()
        event.events = events
        event.data.fd = descriptor
        _ = epoll_ctl(epoll, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, descriptor, &event)
    }

    /// Hands a connection whose answer is written back to the loop, to wait
    /// for its next request (idle timeout); or, with `parked`, for the
    /// answer to its request (the answer's wait).
    func giveBack(_ stream: any ByteStream, peer: String, address: String, served: Int, parked: Parked? = nil) {
        let wait = parked?.later.waitMilliseconds ?? server.limits.idleTimeoutMilliseconds
        let entry = Waiting(
            socket: stream.socket, stream: stream, peer: peer, address: address, served: served, handshaking: false,
            deadline: .after(milliseconds: wait), parked: parked)
        take(entry)
    }

    /// Queues a connection for the loop to take and wakes it; once the loop
    /// has ended, closes it here instead.
    private func take(_ entry: Waiting) {
        let taken = returned.withLock { state -> Bool in
            if state.closed { return false }
            state.queue.append(entry)
            return true
        }
        guard taken else {
            entry.parked?.later.end()
            entry.stream.close()
            server.release(entry.address)
            return
        }
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
    }

    /// Takes a connection whose last answer a thread wrote, for the linger
    /// (``HTTPServer/linger(_:milliseconds:)``, here without a thread): its
    /// sending side ends, and what the client still sends is discarded
    /// until it closes, or the linger's time or bytes are up.
    func linger(_ stream: any ByteStream, peer: String, address: String) {
        stream.finishWriting()
        let entry = Waiting(
            socket: stream.socket, stream: stream, peer: peer, address: address, served: 0, handshaking: false,
            deadline: .after(milliseconds: server.limits.lingerMilliseconds))
        entry.lingering = true
        take(entry)
    }

    /// A waiting request's answer was fired (any thread).
    private func fired(_ entry: Waiting) {
        let taken = returned.withLock { state -> Bool in
            if state.closed { return false }
            state.fired.append(entry)
            return true
        }
        guard taken else { return } // the loop has ended: it closed the connection
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
    }

    /// Runs until the server shuts down; then closes every connection
    /// waiting here (idle, or not yet in a request: nothing is lost).
    func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        var lastSweep = Deadline.now()
        while !server.shuttingDown.load(ordering: .relaxed) {
            let count = epoll_wait(epoll, &events, Int32(events.count), 250)
            for index in 0..<max(0, Int(count)) {
                let descriptor = events[index].data.fd
                let flags = events[index].events
                if descriptor == server.wakeup.read { continue } // shutdown: the loop condition ends it
                if descriptor == wake {
                    var value: UInt64 = 0
                    _ = read(wake, &value, 8)
                    let (queue, fired) = returned.withLock { state in
                        defer { (state.queue, state.fired) = ([], []) }
                        return (state.queue, state.fired)
                    }
                    for entry in queue { admit(entry) }
                    for entry in fired where waiting[entry.socket.descriptor] === entry { resume(entry) }
                } else if let listener = listeners.first(where: { $0.descriptor == descriptor }) {
                    accept(from: listener)
                } else if let entry = waiting[descriptor] {
                    ready(entry, flags: flags)
                }
            }
            // Deadlines are checked four times a second: a handshake or an
            // idle wait ends within 250 ms of its time.
            if lastSweep.milliseconds + 250 <= Deadline.now().milliseconds {
                lastSweep = Deadline.now()
                server.giveBackAfterBurst()
                for (descriptor, entry) in waiting where entry.deadline.hasPassed {
                    if entry.parked != nil {
                        resume(entry) // its wait is over: answered now
                        continue
                    }
                    if entry.handshaking {
                        server.observer.rejected(entry.peer, "TLS handshake failed: it did not finish in time")
                    }
                    if let parser = entry.parser {
                        // Its headers (or small body) did not arrive in time: told so, without waiting for the client to read it.
                        let what = parser.isReadingBody ? "the body" : "the headers"
                        server.observer.rejected(entry.peer, "HTTP 408: \(what) did not arrive in time")
                        let answer = server.ownAnswers.make(408, .timeout, "\(what) did not arrive in time")
                        try? entry.stream.write(
                            answer.serialized(keepAlive: false, dateMillis: Clock.wallMillis()), deadline: .now())
                    }
                    drop(descriptor, entry)
                }
            }
        }
        for (descriptor, entry) in waiting { drop(descriptor, entry) }
        for entry in returned.withLock({ state in
            defer { state = ([], [], true) }; return state.queue
        }) {
            entry.parked?.later.end()
            entry.stream.close()
            server.release(entry.address)
        }
    }

    private func accept(from listener: Socket) {
        while !server.shuttingDown.load(ordering: .relaxed) {
            let accepted: (Socket, String)?
            do { accepted = try listener.accept() } catch {
                server.observer.rejected("", "accept failed: \(error)")
                return // e.g. out of file descriptors: the next readiness tries again
            }
            guard let (socket, peer) = accepted else { return }
            let address = HTTPServer.addressGroup(of: peer)
            if let refusal = server.admitConnection(address) {
                server.observer.rejected(peer, refusal)
                server.refuse(socket, peer: peer)
                continue
            }
            if server.usesTLS {
                guard let context = server.tls.withLock({ $0 }),
                    let stream = try? TLSStream.beginAccept(socket: socket, context: context)
                else {
                    socket.close()
                    server.release(address)
                    continue
                }
                admit(
                    Waiting(
                        socket: socket, stream: stream, peer: peer, address: address, served: 0, handshaking: true,
                        deadline: .after(milliseconds: server.limits.tlsHandshakeTimeoutMilliseconds)))
            } else {
                admit(
                    Waiting(
                        socket: socket, stream: PlainStream(socket: socket), peer: peer, address: address, served: 0,
                        handshaking: false,
                        deadline: .after(milliseconds: server.limits.idleTimeoutMilliseconds)))
            }
        }
    }

    /// Starts watching a connection (a new one, or one given back).
    private func admit(_ entry: Waiting) {
        if server.shuttingDown.load(ordering: .relaxed) {
            entry.stream.close()
            server.release(entry.address)
            return
        }
        waiting[entry.socket.descriptor] = entry
        waitingCount.add(1, ordering: .relaxed)
        register(entry.socket.descriptor, events: UInt32(EPOLLIN.rawValue | EPOLLRDHUP.rawValue), add: true)
        if let parked = entry.parked, parked.later.hold(wake: { [weak self] in self?.fired(entry) }) {
            resume(entry) // fired before it got here
            return
        }
        if entry.lingering {
            discard(entry) // what came before it got here
            return
        }
        if entry.handshaking || entry.stream.hasBufferedInput { ready(entry, flags: 0) }
    }

    /// A waiting request's answer is due: a thread makes and writes it.
    private func resume(_ entry: Waiting) {
        forget(entry.socket.descriptor)
        server.startServing(
            entry.stream, peer: entry.peer, address: entry.address, served: entry.served, resuming: entry.parked)
    }

    private func forget(_ descriptor: Int32) {
        _ = epoll_ctl(epoll, EPOLL_CTL_DEL, descriptor, nil)
        waiting[descriptor] = nil
        waitingCount.subtract(1, ordering: .relaxed)
    }

    private func drop(_ descriptor: Int32, _ entry: Waiting) {
        forget(descriptor)
        entry.parked?.later.end()
        entry.stream.close()
        server.release(entry.address)
    }

    /// The socket of a waiting connection is ready (or, with `flags` 0, may be).
    private func ready(_ entry: Waiting, flags: UInt32) {
        let descriptor = entry.socket.descriptor
        if entry.lingering {
            discard(entry)
            return
        }
        if entry.parked != nil {
            // The client sent more (its next request, or the end of the
            // connection): the waiting request is answered first.
            if flags & UInt32(EPOLLIN.rawValue) != 0 || entry.stream.hasBufferedInput {
                resume(entry)
            } else {
                drop(descriptor, entry)
            }
            return
        }
        if entry.handshaking {
            guard let tls = entry.stream as? TLSStream else { drop(descriptor, entry); return }
            do {
                // Registered anew only when what it waits for changes: a
                // handshake costs its reads and writes, not epoll calls.
                switch try tls.acceptStep() {
                case .wantRead:
                    watch(entry, write: false)
                    return
                case .wantWrite:
                    watch(entry, write: true)
                    return
                case .done:
                    entry.handshaking = false
                    entry.deadline = .after(milliseconds: server.limits.idleTimeoutMilliseconds)
                    watch(entry, write: false)
                    guard tls.hasBufferedInput else { return }
                }
            } catch .closed {
                drop(descriptor, entry)
                return
            } catch {
                server.observer.rejected(entry.peer, "TLS handshake failed: \(error)")
                drop(descriptor, entry)
                return
            }
        } else if flags & UInt32(EPOLLIN.rawValue) == 0 && flags != 0 && !entry.stream.hasBufferedInput {
            // Hung up or failed with nothing to read: the peer is gone.
            drop(descriptor, entry)
            return
        }
        readRequest(entry)
    }

    /// Reads what has arrived of a waiting connection's request, never
    /// waiting. A request still arriving (a slow client's headers) stays
    /// here under the header deadline; a whole request without a body that
    /// the server answers from memory (``HTTPServer/Quick``) is answered
    /// here; anything else goes to a thread with the bytes read so far.
    private func readRequest(_ entry: Waiting) {
        let descriptor = entry.socket.descriptor
        let before = entry.pending.count
        var peerClosed = false
        // One read for each time the socket is ready (epoll says again when
        // more is there), and what TLS read ahead.
        var more = true
        repeat {
            let step: ReadNow
            do {
                step = try scratch.withUnsafeMutableBytes { raw throws(NetError) in try entry.stream.readNow(into: raw)
                }
            } catch {
                drop(descriptor, entry)
                return
            }
            switch step {
            case .bytes(let count): entry.pending += scratch[0..<count]
            // A part of a TLS record may wait in TLS's buffer: the socket says when the rest comes.
            case .nothing: more = false
            case .closed: peerClosed = true
            case .needsWait:
                handOver(entry)
                return
            }
        } while more && !peerClosed && entry.stream.hasBufferedInput && entry.pending.count < Self.readLimit
        if entry.pending.count == before {
            // Closed while idle: the peer is gone; else woken for nothing.
            if peerClosed { drop(descriptor, entry) }
            return
        }
        if entry.parser == nil {
            entry.parser = HTTPRequestParser(limits: server.limits)
            entry.deadline = .after(milliseconds: server.limits.headerReadTimeoutMilliseconds)
        }
        let events = entry.parser!.feed(entry.pending[before...])
        if events.isEmpty && !peerClosed && entry.pending.count < Self.readLimit { return } // still arriving
        // A small body comes here too (a join's, say): a slow one costs its
        // bytes, not a thread, until the body deadline. (`Expect:
        // 100-continue` waits for a thread's answer to its head.)
        if !peerClosed, events.count == 1, case .head(let head) = events[0], entry.parser!.isReadingBody,
            head.headers["Expect"] == nil,
            let length = head.headers["Content-Length"].flatMap(Int.init),
            entry.pending.count + length <= Self.readLimit
        {
            entry.deadline = .after(milliseconds: server.limits.bodyReadTimeoutMilliseconds)
            return
        }
        guard !peerClosed, events.count == 1, case .request(let request) = events[0], !entry.parser!.hasPartialRequest,
            !entry.stream.hasBufferedInput, answerHere(entry, request)
        else {
            handOver(entry)
            return
        }
    }

    /// Bytes of a request held here at most (more than a request line and
    /// headers may have) before a thread takes it: a body is read there.
    static let readLimit = 32 * 1024

    /// A thread reads the rest of the connection's request (from the bytes
    /// read here) and answers it.
    private func handOver(_ entry: Waiting) {
        forget(entry.socket.descriptor)
        server.startServing(
            entry.stream, peer: entry.peer, address: entry.address, served: entry.served, preread: entry.pending)
    }

    /// Answers `request` here when the server can from memory
    /// (``HTTPServer/Quick``); the answer is written without waiting (a
    /// client with more than a socket buffer of answers unread is dropped).
    /// A last answer (`Connection: close`, or the connection's last
    /// request) is followed by the linger, here too. False: a thread
    /// answers it.
    private func answerHere(_ entry: Waiting, _ request: HTTPRequest) -> Bool {
        guard let quick = server.quick, !server.shuttingDown.load(ordering: .relaxed) else { return false }
        let keepAlive = request.keepAlive && entry.served + 1 < server.limits.maxRequestsPerConnection
        let started = Deadline.now()
        guard let response = quick(request, HTTPServer.RequestContext(peer: entry.peer)) else { return false }
        entry.served += 1
        if let later = response.later {
            // Its answer comes later: it waits here (a thread makes the answer when it is due).
            response.whenWritten?.run()
            forget(entry.socket.descriptor)
            giveBack(
                entry.stream, peer: entry.peer, address: entry.address, served: entry.served,
                parked: Parked(request: request, later: later))
            return true
        }
        let bytes = response.serialized(
            keepAlive: keepAlive, dateMillis: Clock.wallMillis(), includeBody: request.method != "HEAD",
            toHTTP10: request.minorVersion == 0)
        let written = (try? entry.stream.write(bytes, deadline: .now())) != nil
        response.whenWritten?.run()
        server.observer.requestFinished(
            request, response.status, Double(Deadline.now().milliseconds - started.milliseconds))
        guard written else {
            drop(entry.socket.descriptor, entry)
            return true
        }
        entry.pending = []
        entry.parser = nil
        guard keepAlive else {
            // The sending side ends; what the client still sends is drained
            // before the close, so no reset destroys the answer unread.
            entry.stream.finishWriting()
            entry.lingering = true
            entry.deadline = .after(milliseconds: server.limits.lingerMilliseconds)
            discard(entry)
            return true
        }
        entry.deadline = .after(milliseconds: server.limits.idleTimeoutMilliseconds)
        return true
    }

    /// Waits for `entry`'s socket to become writable, or readable.
    private func watch(_ entry: Waiting, write: Bool) {
        guard entry.watchingWrite != write else { return }
        entry.watchingWrite = write
        let events = (write ? UInt32(EPOLLOUT.rawValue) : UInt32(EPOLLIN.rawValue)) | UInt32(EPOLLRDHUP.rawValue)
        register(entry.socket.descriptor, events: events, add: false)
    }

    /// Reads and discards what a lingering connection's client sends, never
    /// waiting; closes it once the client has closed (or failed), or past
    /// ``HTTPLimits/lingerMaxBytes``. Its deadline closes it otherwise.
    private func discard(_ entry: Waiting) {
        while entry.discarded < server.limits.lingerMaxBytes {
            let count = scratch.withUnsafeMutableBytes {
                Glibc.read(entry.socket.descriptor, $0.baseAddress, $0.count)
            }
            if count > 0 {
                entry.discarded += count
                continue
            }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { return }
            break // closed by the client, or failed
        }
        drop(entry.socket.descriptor, entry)
    }
}

/// A connection's stream passed to the thread that takes it over: one
/// thread owns a connection at a time (the loop, a serving thread, a
/// refusing one), so handing it on is safe though streams are not Sendable.
struct ConnectionHandoff: @unchecked Sendable {
    let stream: any ByteStream
}
