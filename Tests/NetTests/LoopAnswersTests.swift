import Glibc
import HTTP
import Synchronization
import TestSupport
import Testing

@testable import Net

/// The event loops read requests themselves: headers still arriving cost
/// their bytes, not a thread, and a request the server can answer from
/// memory (``HTTPServer/Quick``) is answered on the loop; anything else
/// goes to a thread with what was read.
@Suite(.serialized) struct LoopAnswersTests {
    /// Answers `/quick` from "memory"; declines everything else.
    static func quick(_ request: HTTPRequest, _ context: HTTPServer.RequestContext) -> HTTPResponse? {
        request.path == "/quick"
            ? HTTPResponse(status: 200, headers: ["Content-Type": "text/plain"], body: Array("quick".utf8)) : nil
    }

    /// 60 TLS clients that send part of their headers and stall, against a
    /// server of 2 request threads: none takes a thread, a new client is
    /// answered, and each stalled one gets 408 at its header deadline.
    @Test func headersStillArrivingTakeNoThread() throws {
        let fixture = try TLSFixture()
        var limits = HTTPLimits()
        limits.maxActiveRequests = 2
        limits.maxConnectionsPerAddress = 1_000
        limits.headerReadTimeoutMilliseconds = 1_500
        let (server, port) = try fixture.serve(limits: limits, handler: ConnectionLoopTests.ok)
        defer { server.shutdown(graceMilliseconds: 2000) }
        let address = SocketAddress(host: "127.0.0.1", port: port)
        let context = try TLSContext.client(caFile: fixture.caFile)
        var stalled: [TLSStream] = []
        for index in 0..<60 {
            let socket = try Socket.connect(to: address, deadline: .after(milliseconds: 2000))
            let stream = try TLSStream.connect(
                socket: socket, context: context, serverName: "localhost", deadline: .after(milliseconds: 2000))
            // Some stop in the request line, some in the headers.
            let part = index % 2 == 0 ? "GET /slow" : "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: 1"
            try stream.write(Array(part.utf8), deadline: .after(milliseconds: 1000))
            stalled.append(stream)
        }
        let started = Deadline.now()
        for _ in 0..<200 where server.waitingConnections < 60 { usleep(10_000) }
        #expect(
            server.waitingConnections == 60 && server.activeRequests == 0,
            "\(server.waitingConnections) waiting, \(server.activeRequests) on threads")
        #expect(
            try fixture.client(port: port).send(method: "GET", target: "/").status == 200, "a new client is answered")
        for stream in stalled {
            var buffer = [UInt8](repeating: 0, count: 1024)
            let count =
                try buffer.withUnsafeMutableBytes {
                    try stream.read(into: $0, deadline: .after(milliseconds: 5000), wakeup: nil, what: "test")
                } ?? 0
            #expect(String(decoding: buffer[0..<count], as: UTF8.self).hasPrefix("HTTP/1.1 408"))
        }
        #expect(Deadline.now().milliseconds - started.milliseconds >= 1_000, "not before the header deadline")
        for stream in stalled { stream.close() }
        for _ in 0..<300 where server.openConnections > 0 { usleep(10_000) }
        #expect(server.openConnections == 0)
    }

    /// Requests answered from memory never reach the handler, on a
    /// connection that also carries requests the handler answers (it comes
    /// back to the loop after each); pipelined requests, bodies and a
    /// request followed by the client's half-close go to a thread and are
    /// answered in order.
    @Test func answersFromMemoryStayOnTheLoop() throws {
        let fixture = try TLSFixture()
        let handled = Atomic<Int>(0)
        let (server, port) = try fixture.serve(quick: Self.quick) { request, _ in
            handled.add(1, ordering: .relaxed)
            return HTTPResponse(
                status: 200, headers: ["Content-Type": "text/plain"],
                body: Array("thread \(request.method) \(request.target) \(request.body.count)".utf8))
        }
        defer { server.shutdown(graceMilliseconds: 2000) }
        let client = try fixture.client(port: port)
        for _ in 0..<50 {
            let answer = try client.send(method: "GET", target: "/quick")
            #expect(answer.status == 200 && answer.body == Array("quick".utf8) && answer.headers["Date"] != nil)
        }
        #expect(handled.load(ordering: .relaxed) == 0, "answered on the loop")
        #expect(
            String(decoding: try client.send(method: "GET", target: "/other").body, as: UTF8.self)
                == "thread GET /other 0")
        #expect(
            String(
                decoding: try client.send(method: "POST", target: "/quick", body: Array("abc".utf8)).body, as: UTF8.self
            ) == "thread POST /quick 3",
            "a body goes to a thread")
        #expect(try client.send(method: "GET", target: "/quick").body == Array("quick".utf8), "back on the loop")
        #expect(handled.load(ordering: .relaxed) == 2)
        #expect(server.openConnections == 1, "one connection carried them all")

        // Two requests in one write: a thread answers both, in order.
        let address = SocketAddress(host: "127.0.0.1", port: port)
        let context = try TLSContext.client(caFile: fixture.caFile)
        let socket = try Socket.connect(to: address, deadline: .after(milliseconds: 2000))
        let stream = try TLSStream.connect(
            socket: socket, context: context, serverName: "localhost", deadline: .after(milliseconds: 2000))
        try stream.write(
            Array(
                "GET /quick HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                    .utf8),
            deadline: .after(milliseconds: 1000))
        let both = try Self.readAll(stream)
        #expect(
            both.hasPrefix("HTTP/1.1 200") && both.contains("\r\n\r\nthread GET /quick 0HTTP/1.1 200")
                && both.hasSuffix("thread GET /second 0"), "\(both)")

        // A request, then the client's half-close: still answered.
        let closing = try Socket.connect(to: address, deadline: .after(milliseconds: 2000))
        let closingStream = try TLSStream.connect(
            socket: closing, context: context, serverName: "localhost", deadline: .after(milliseconds: 2000))
        try closingStream.write(
            Array("GET /quick HTTP/1.1\r\nHost: x\r\n\r\n".utf8), deadline: .after(milliseconds: 1000))
        closingStream.finishWriting()
        // (On the loop, or on a thread when the end came in the same read.)
        let answer = try Self.readAll(closingStream)
        #expect(
            answer.hasPrefix("HTTP/1.1 200")
                && (answer.hasSuffix("\r\n\r\nquick") || answer.hasSuffix("thread GET /quick 0")), "\(answer)")
    }

    /// A request answered later (a watch whose device the server
    /// remembers) starts waiting on the loop that read it: it never takes a
    /// thread until its answer is due.
    @Test func aLaterAnswerFromMemoryWaitsWithoutEverTakingAThread() throws {
        let fixture = try TLSFixture()
        let pending = Mutex<[DeferredResponse]>([])
        let handled = Atomic<Int>(0)
        let server = try HTTPServer(
            addresses: [SocketAddress(host: "127.0.0.1", port: 0)], tls: fixture.serverContext(), limits: HTTPLimits(),
            quick: { request, _ in
                guard request.path == "/later" else { return nil }
                let later = DeferredResponse(
                    waitMilliseconds: 60_000, make: { _ in HTTPResponse(status: 200, body: Array("fired".utf8)) })
                pending.withLock { $0.append(later) }
                var response = HTTPResponse(status: 200)
                response.later = later
                return response
            }
        ) { _, _ in
            handled.add(1, ordering: .relaxed)
            return HTTPResponse(status: 200, body: Array("thread".utf8))
        }
        let port = try server.start()[0]
        defer { server.shutdown(graceMilliseconds: 2000) }
        let client = try fixture.client(port: port)
        #expect(String(decoding: try client.send(method: "GET", target: "/first").body, as: UTF8.self) == "thread")
        let handed = UncheckedBox(client)
        let job = ThreadJob {
            (try? handed.value.send(method: "GET", target: "/later")).map { String(decoding: $0.body, as: UTF8.self) }
                ?? "failed"
        }
        for _ in 0..<500 where pending.withLock({ $0.count }) < 1 || server.waitingConnections < 1 { usleep(10_000) }
        #expect(server.waitingConnections == 1 && server.activeRequests == 0 && handled.load(ordering: .relaxed) == 1)
        for later in pending.withLock({ $0 }) { later.fire() }
        #expect(job.wait() == "fired")
        #expect(handled.load(ordering: .relaxed) == 1, "the handler saw only the first request")
    }

    /// An HTTP/1.0 client that asks to keep its connection is told it is kept
    /// (`Connection: keep-alive`), on the loop and on a thread, and its next
    /// request is answered on it; one that does not ask is closed.
    @Test func anHTTP10KeepAliveIsSaid() throws {
        let fixture = try TLSFixture()
        let (server, port) = try fixture.serve(quick: Self.quick) { _, _ in
            HTTPResponse(status: 200, body: Array("thread".utf8))
        }
        defer { server.shutdown(graceMilliseconds: 2000) }
        let stream = try fixture.stream(port: port)
        func exchange(_ request: String) throws -> String {
            try stream.write(Array(request.utf8), deadline: .after(milliseconds: 1000))
            return try stream.readText()
        }
        for target in ["/quick", "/other", "/quick"] {
            let answer = try exchange("GET \(target) HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            #expect(
                answer.hasPrefix("HTTP/1.1 200") && answer.contains("Connection: keep-alive\r\n"),
                "\(target): \(answer)")
        }
        let last = try exchange("GET /quick HTTP/1.0\r\n\r\n")
        #expect(last.contains("Connection: close\r\n"), "\(last)")
    }

    /// A last answer from memory (`Connection: close`, a new TLS connection
    /// for one request) is written on the loop, never taking a thread; the
    /// loop then lingers without one: bytes the client sends after its
    /// request are drained, so no reset destroys the answer unread, and the
    /// connection ends when the client closes, or at the linger's deadline
    /// when it never does.
    @Test func aLastAnswerFromMemoryAndItsLingerTakeNoThread() throws {
        let fixture = try TLSFixture()
        let handled = Atomic<Int>(0)
        var limits = HTTPLimits()
        limits.lingerMilliseconds = 600
        let (server, port) = try fixture.serve(limits: limits, quick: Self.quick) { _, _ in
            handled.add(1, ordering: .relaxed)
            return HTTPResponse(status: 200, body: Array("thread".utf8))
        }
        defer { server.shutdown(graceMilliseconds: 2000) }
        let close = Array("GET /quick HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)
        for _ in 0..<20 {
            let stream = try fixture.stream(port: port)
            try stream.write(close, deadline: .after(milliseconds: 1000))
            let answer = try Self.readAll(stream)
            #expect(answer.hasPrefix("HTTP/1.1 200") && answer.contains("Connection: close\r\n"), "\(answer)")
            #expect(answer.hasSuffix("\r\n\r\nquick"), "\(answer)")
            stream.close()
        }
        #expect(handled.load(ordering: .relaxed) == 0, "answered on the loop")

        // The client sends 256 KiB more after its request, before reading:
        // drained while lingering, and the answer arrives whole.
        let talker = try fixture.stream(port: port)
        try talker.write(close, deadline: .after(milliseconds: 1000))
        usleep(100_000) // the answer is written (the loop lingers) before the rest comes
        try talker.write([UInt8](repeating: UInt8(ascii: "x"), count: 256 * 1024), deadline: .after(milliseconds: 3000))
        let answer = try Self.readAll(talker)
        #expect(answer.hasPrefix("HTTP/1.1 200") && answer.hasSuffix("\r\n\r\nquick"), "\(answer)")
        talker.close()
        #expect(handled.load(ordering: .relaxed) == 0)

        // A client that never closes: the linger's deadline ends it.
        let silent = try fixture.stream(port: port)
        try silent.write(close, deadline: .after(milliseconds: 1000))
        let started = Deadline.now()
        var buffer = [UInt8](repeating: 0, count: 4096)
        _ = try buffer.withUnsafeMutableBytes {
            try silent.read(into: $0, deadline: .after(milliseconds: 2000), wakeup: nil, what: "test")
        }
        for _ in 0..<300 where server.openConnections > 0 { usleep(10_000) }
        #expect(server.openConnections == 0, "closed at the linger's deadline")
        #expect(Deadline.now().milliseconds - started.milliseconds < 2_500)
        #expect(server.activeRequests == 0 && handled.load(ordering: .relaxed) == 0)
        silent.close()
    }

    /// A last answer a thread made (`Connection: close`) lingers on the
    /// loop, not on its thread: clients that never close hold neither a
    /// thread nor a request slot, so with 2 slots ten of them are all
    /// answered, and a new client after them too; each is closed at the
    /// linger's deadline.
    @Test func aThreadsLastAnswerLingersOnTheLoop() throws {
        let fixture = try TLSFixture()
        var limits = HTTPLimits()
        limits.maxActiveRequests = 2
        limits.lingerMilliseconds = 1_500
        let (server, port) = try fixture.serve(limits: limits) { _, _ in
            HTTPResponse(status: 404, body: Array("none".utf8))
        }
        defer { server.shutdown(graceMilliseconds: 2000) }
        var held: [TLSStream] = []
        for index in 0..<10 {
            let stream = try fixture.stream(port: port)
            try stream.write(
                Array("GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8),
                deadline: .after(milliseconds: 1000))
            let answer = try stream.readText()
            #expect(answer.hasPrefix("HTTP/1.1 404"), "client \(index): \(answer)")
            held.append(stream) // never closed by the client
        }
        for _ in 0..<100 where server.activeRequests > 0 { usleep(10_000) }
        #expect(server.activeRequests == 0, "no thread or slot held while they linger")
        #expect(server.openConnections == 10, "still lingering: \(server.openConnections)")
        let fresh = try fixture.stream(port: port)
        try fresh.write(
            Array("GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8),
            deadline: .after(milliseconds: 1000))
        #expect(try fresh.readText().hasPrefix("HTTP/1.1 404"))
        fresh.close()
        for _ in 0..<400 where server.openConnections > 0 { usleep(10_000) }
        #expect(server.openConnections == 0, "closed at the linger's deadline")
        for stream in held { stream.close() }
    }

    /// Everything the server sends until it closes.
    static func readAll(_ stream: TLSStream) throws -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while received.count < 1 << 20 {
            let count =
                try buffer.withUnsafeMutableBytes {
                    try stream.read(into: $0, deadline: .after(milliseconds: 5000), wakeup: nil, what: "test")
                } ?? 0
            if count == 0 { break }
            received += buffer[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }
}
