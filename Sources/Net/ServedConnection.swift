import Glibc
import HTTP
import SystemServices

/// A connection while a thread serves it (``HTTPServer/serve(_:peer:address:served:resuming:preread:)``):
/// its parser, its read buffer and deadlines, and how it ends. Made and used
/// on that one thread, never shared.
final class ServedConnection {
    /// How the connection ends when the thread lets it go.
    enum Ending {
        /// Closed at once: the peer closed, or the server shuts down an idle
        /// connection, so there is nothing to drain.
        case close
        /// After a last answer: unread input is drained first.
        case linger
        /// Given back to the event loop, to wait for its next request (or
        /// for a later answer) without a thread: it does not end.
        case givenBack
    }

    private let server: HTTPServer
    private let stream: any ByteStream
    private let peer: String
    private let address: String
    private let context: HTTPServer.RequestContext
    private var parser: HTTPRequestParser
    private var buffer = [UInt8](repeating: 0, count: 16 * 1024)
    /// The bytes the loop read already: parsed first.
    private var carried: [UInt8]
    /// Requests answered on the connection, here and before.
    private var served: Int
    private var headerDeadline = Deadline.never
    private var bodyDeadline = Deadline.never
    private var ending = Ending.close

    init(server: HTTPServer, stream: any ByteStream, peer: String, address: String, served: Int, preread: [UInt8]) {
        self.server = server
        self.stream = stream
        self.peer = peer
        self.address = address
        self.served = served
        self.carried = preread
        context = HTTPServer.RequestContext(peer: peer)
        parser = HTTPRequestParser(limits: server.limits)
    }

    /// Answers `resuming` first, then reads and answers requests until the
    /// connection ends or goes back to the loop.
    func run(resuming: ConnectionLoop.Parked?) {
        if let resuming, !answer(resuming.request, resuming.later.answer(), started: .now(), last: true) { return }
        while let chunk = nextChunk() {
            let wasPartial = parser.hasPartialRequest
            let wasReadingBody = parser.isReadingBody
            let events = parser.feed(chunk)
            if !wasPartial && parser.hasPartialRequest {
                headerDeadline = .after(milliseconds: server.limits.headerReadTimeoutMilliseconds)
            }
            if !wasReadingBody && parser.isReadingBody {
                bodyDeadline = .after(milliseconds: server.limits.bodyReadTimeoutMilliseconds)
            }
            for (index, event) in events.enumerated() {
                let goesOn: Bool
                switch event {
                case .failure(let error):
                    server.respond(
                        stream, server.ownAnswers.make(error.status, .badRequest, error.reason), keepAlive: false)
                    server.observer.rejected(peer, "HTTP \(error.status): \(error.reason)")
                    ending = .linger
                    goesOn = false
                case .head(let head):
                    goesOn = admit(head)
                case .request(let request):
                    goesOn = handle(request, wasPartial: wasPartial, lastEvent: index == events.count - 1)
                }
                if !goesOn { return }
            }
        }
    }

    /// Lets the connection go as ``ending`` says.
    func end() {
        switch ending {
        case .givenBack:
            break
        case .linger:
            // The linger goes to the loop: a client that never
            // closes holds neither this thread nor a request slot.
            if let loop = server.loop(for: stream) {
                loop.linger(stream, peer: peer, address: address)
            } else {
                server.linger(stream, milliseconds: server.limits.lingerMilliseconds)
                server.release(address)
            }
        case .close:
            stream.close()
            server.release(address)
        }
    }

    /// Decides on a request's head before its body is read (the server's
    /// admission, `Expect: 100-continue`); false when the connection ends.
    private func admit(_ head: HTTPRequest) -> Bool {
        if let refusal = server.admission(head, context) {
            server.respond(stream, refusal, keepAlive: false, for: head)
            server.observer.requestFinished(head, refusal.status, 0)
            ending = .linger
            return false
        }
        guard head.minorVersion >= 1, let expectation = head.headers["Expect"] else { return true }
        guard expectation.asciiLowercased() == "100-continue" else {
            server.respond(
                stream, server.ownAnswers.make(417, .badRequest, "only 'Expect: 100-continue' is supported"),
                keepAlive: false)
            ending = .linger
            return false
        }
        // Sent only while the body has not started to arrive.
        if !parser.hasBodyBytes {
            let deadline = Deadline.after(milliseconds: server.limits.writeTimeoutMilliseconds)
            guard (try? stream.write(HTTPResponse.continueBytes, deadline: deadline)) != nil else { return false }
        }
        return true
    }

    /// Answers a whole request, or parks it in the loop while its answer is
    /// made later; false when the connection ends or was given back.
    private func handle(_ request: HTTPRequest, wasPartial: Bool, lastEvent: Bool) -> Bool {
        served += 1
        if !wasPartial || parser.hasPartialRequest {
            headerDeadline = .after(milliseconds: server.limits.headerReadTimeoutMilliseconds)
        }
        let started = Deadline.now()
        var response = server.handler(request, context)
        // Status 0: close without answering (a proxy that simulates a lost answer).
        if response.status == 0 {
            response.whenWritten?.run()
            return false
        }
        if let later = response.later {
            // What the request held is let go while it waits.
            response.whenWritten?.run()
            let last = lastEvent && !parser.hasPartialRequest && !stream.hasBufferedInput
            if last, let loop = server.loop(for: stream) {
                ending = .givenBack
                loop.giveBack(
                    stream, peer: peer, address: address, served: served,
                    parked: ConnectionLoop.Parked(request: request, later: later))
                return false
            }
            // The client sent more behind it: answered now, in order.
            response = later.answer()
        }
        return answer(request, response, started: started, last: lastEvent)
    }

    /// Writes the answer to `request`; false when the connection ends
    /// (written or not) or was given back to the loop.
    private func answer(_ request: HTTPRequest, _ response: HTTPResponse, started: Deadline, last: Bool) -> Bool {
        let limits = server.limits
        let keepAlive =
            request.keepAlive && served < limits.maxRequestsPerConnection
            && !server.shuttingDown.load(ordering: .relaxed)
        let written = server.respond(stream, response, keepAlive: keepAlive, for: request)
        // Before the connection can carry its next request (given
        // back to the loop, another thread may read it at once).
        response.whenWritten?.run()
        server.observer.requestFinished(
            request, response.status, Double(Deadline.now().milliseconds - started.milliseconds))
        if !written { return false }
        if !keepAlive {
            ending = .linger
            return false
        }
        // Nothing more waits: a client that sends its next request at
        // once keeps this thread (a busy client pays no hand-over);
        // one that goes quiet waits in the loop until it speaks. With
        // answers from memory (``HTTPServer/Quick``), the loop takes it at
        // once: it answers those itself.
        if last, !parser.hasPartialRequest, !stream.hasBufferedInput, let loop = server.loop(for: stream),
            server.quick != nil
                || (try? stream.socket.wait(
                    for: Int16(POLLIN), until: .after(milliseconds: limits.keepThreadMilliseconds),
                    what: "waiting for the next request")) != true
        {
            ending = .givenBack
            loop.giveBack(stream, peer: peer, address: address, served: served)
            return false
        }
        return true
    }

    /// The next bytes of the connection (first what the loop read), or
    /// nil when it ends: timed out (a partial request is answered 408),
    /// closed by the peer, or woken for shutdown.
    private func nextChunk() -> ArraySlice<UInt8>? {
        if !carried.isEmpty {
            defer { carried = [] }
            return carried[...]
        }
        let partial = parser.hasPartialRequest
        let deadline =
            !partial
            ? Deadline.after(milliseconds: server.limits.idleTimeoutMilliseconds)
            : parser.isReadingBody ? bodyDeadline : headerDeadline
        let wakeup = server.wakeup.read
        let stream = stream
        let result = buffer.withUnsafeMutableBytes { raw in
            Result<Int?, NetError> { () throws(NetError) in
                try stream.read(
                    into: raw, deadline: deadline, wakeup: partial ? nil : wakeup,
                    what: partial ? "reading a request" : "waiting for a request")
            }
        }
        let read: Int?
        do {
            read = try result.get()
        } catch .timeout {
            if partial {
                let status = parser.isReadingBody ? "the body" : "the headers"
                server.respond(
                    stream, server.ownAnswers.make(408, .timeout, "\(status) did not arrive in time"), keepAlive: false)
                ending = .linger
            }
            return nil
        } catch {
            return nil
        }
        guard let count = read, count > 0 else { return nil } // woken for shutdown, or closed by the peer
        return buffer[0..<count]
    }
}
