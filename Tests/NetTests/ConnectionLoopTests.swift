import Foundation
import Glibc
import HTTP
import Synchronization
import TestSupport
import Testing

@testable import Net

/// The event loop holds connections that are not being answered without a
/// thread each: a flood of connections that never finish a handshake, or of
/// idle keep-alive clients, leaves the threads to requests.
/// Hands a value that is not Sendable to the one thread that uses it.
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

@Suite(.serialized) struct ConnectionLoopTests {
    /// Threads of this process now.
    static var threads: Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0 }

    static func ok(_ request: HTTPRequest, _ context: HTTPServer.RequestContext) -> HTTPResponse {
        HTTPResponse(status: 200, headers: ["Content-Type": "text/plain"], body: Array("ok".utf8))
    }

    /// 400 TCP connections that never send a ClientHello, and 100 idle TLS
    /// keep-alive clients: no thread each, and a new client is answered.
    @Test func waitingConnectionsTakeNoThread() throws {
        let fixture = try TLSFixture()
        var limits = HTTPLimits()
        limits.maxConnectionsPerAddress = 1_000
        let (server, port) = try fixture.serve(limits: limits, handler: Self.ok)
        defer { server.shutdown(graceMilliseconds: 2000) }
        let address = SocketAddress(host: "127.0.0.1", port: port)
        let before = Self.threads
        var silent: [Socket] = []
        for _ in 0..<400 { silent.append(try Socket.connect(to: address, deadline: .after(milliseconds: 2000))) }
        var idle: [HTTPClient] = []
        for _ in 0..<100 {
            let client = try fixture.client(port: port)
            #expect(try client.send(method: "GET", target: "/").status == 200)
            idle.append(client)
        }
        // A thread counts its request done just after it gave its connection back to a loop: both settle.
        for _ in 0..<200 where server.waitingConnections < 500 || server.activeRequests > 0 { usleep(10_000) }
        #expect(server.waitingConnections == 500, "every connection waits in the loop: \(server.waitingConnections)")
        #expect(server.openConnections == 500 && server.activeRequests == 0)
        #expect(Self.threads - before < 20, "\(Self.threads - before) threads for 500 waiting connections")
        // A new client, and the idle ones again, are answered.
        #expect(try fixture.client(port: port).send(method: "GET", target: "/").status == 200)
        for client in idle.prefix(10) { #expect(try client.send(method: "GET", target: "/").status == 200) }
        for socket in silent { socket.close() }
        for client in idle { client.close() }
        for _ in 0..<300 where server.openConnections > 0 { usleep(10_000) }
        #expect(server.openConnections == 0, "closed connections are let go: \(server.openConnections)")
    }

    /// Past the requests in progress a new request is answered 503 with
    /// `Retry-After` at once; the ones in progress finish.
    @Test func aFullPoolAnswers503() throws {
        let release = Mutex<Bool>(false)
        let started = Atomic<Int>(0)
        var limits = HTTPLimits()
        limits.maxActiveRequests = 1
        let (server, port) = try TLSFixture.serve(limits: limits, tls: false) {
            request, _ in
            started.add(1, ordering: .relaxed)
            while !release.withLock({ $0 }) { usleep(5_000) }
            return HTTPResponse(status: 200, headers: [:], body: Array("slow".utf8))
        }
        defer { server.shutdown(graceMilliseconds: 2000) }
        let address = SocketAddress(host: "127.0.0.1", port: port)
        let slow = ThreadJob { () -> Int in
            (try? HTTPClient(.init(address: address, serverName: "localhost", tls: nil)).send(
                method: "GET", target: "/slow"
            ).status) ?? -1
        }
        for _ in 0..<500 where started.load(ordering: .relaxed) == 0 { usleep(5_000) }
        let busy = try HTTPClient(.init(address: address, serverName: "localhost", tls: nil)).send(
            method: "GET", target: "/")
        #expect(busy.status == 503 && busy.headers["Retry-After"] == "1", "\(busy.status)")
        release.withLock { $0 = true }
        #expect(slow.wait() == 200)
    }

    /// Requests whose answer comes later (a long poll, ``DeferredResponse``) wait
    /// in the loop without a thread: fired, each is answered at once and its
    /// connection carries the next request; one never fired is answered
    /// when its time is up; one whose client went away is let go (`ended`).
    @Test func laterAnswersWaitWithoutAThread() throws {
        let fixture = try TLSFixture()
        let pending = Mutex<[DeferredResponse]>([])
        let ended = Atomic<Int>(0)
        var limits = HTTPLimits()
        limits.maxConnectionsPerAddress = 1_000
        let (server, port) = try fixture.serve(limits: limits) { request, context in
            guard request.path.hasPrefix("/later") else { return Self.ok(request, context) }
            var response = HTTPResponse(status: 200)
            let later = DeferredResponse(
                waitMilliseconds: request.path == "/later-short" ? 300 : 60_000,
                make: { _ in HTTPResponse(status: 200, headers: [:], body: Array("answered".utf8)) },
                ended: { ended.add(1, ordering: .relaxed) })
            pending.withLock { $0.append(later) }
            response.later = later
            return response
        }
        defer { server.shutdown(graceMilliseconds: 2000) }
        let clients = try (0..<40).map { _ in try fixture.client(port: port) }
        let jobs = clients.map { client in
            let handed = UncheckedBox(client)
            return ThreadJob { () -> String in
                guard let answer = try? handed.value.send(method: "GET", target: "/later") else { return "failed" }
                return "\(answer.status) \(String(decoding: answer.body, as: UTF8.self))"
            }
        }
        for _ in 0..<500
        where pending.withLock({ $0.count }) < 40 || server.waitingConnections < 40 || server.activeRequests > 0 {
            usleep(10_000)
        }
        #expect(
            server.waitingConnections == 40 && server.activeRequests == 0,
            "\(server.waitingConnections) waiting, \(server.activeRequests) on threads")
        for later in pending.withLock({ $0 }) { later.fire() }
        for job in jobs { #expect(job.wait() == "200 answered") }
        #expect(ended.load(ordering: .relaxed) == 40)
        // The connections carry their next requests.
        for client in clients.prefix(5) { #expect(try client.send(method: "GET", target: "/").status == 200) }

        // Never fired: answered when its time is up.
        let started = Deadline.now()
        #expect(try clients[0].send(method: "GET", target: "/later-short").status == 200)
        #expect(Deadline.now().milliseconds - started.milliseconds >= 300)

        // A client that goes away while it waits: let go, its connection closed.
        let deadline = Deadline.after(milliseconds: 5000)
        let gone = try fixture.stream(port: port, milliseconds: 5000)
        try gone.write(Array("GET /later HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8), deadline: deadline)
        for _ in 0..<500 where pending.withLock({ $0.count }) < 42 || server.waitingConnections < 1 { usleep(10_000) }
        gone.close()
        for _ in 0..<300 where ended.load(ordering: .relaxed) < 42 { usleep(10_000) }
        #expect(ended.load(ordering: .relaxed) == 42, "the abandoned wait ended")
        for client in clients { client.close() }
        for _ in 0..<300 where server.openConnections > 0 { usleep(10_000) }
        #expect(server.openConnections == 0)
    }

    /// The per-address cap counts an IPv6 peer by its /64: one host picks
    /// addresses from a /64 for free.
    @Test func ipv6PeersAreCountedByTheirSlash64() {
        #expect(HTTPServer.addressGroup(of: "[2001:db8:1:2:aaaa::1]:443") == "[2001:db8:1:2::/64]")
        #expect(HTTPServer.addressGroup(of: "[2001:db8:1:2:bbbb:cccc:dddd:eeee]:5") == "[2001:db8:1:2::/64]")
        #expect(
            HTTPServer.addressGroup(of: "[2001:db8:1:3::1]:5") != HTTPServer.addressGroup(of: "[2001:db8:1:2::1]:5"))
        #expect(HTTPServer.addressGroup(of: "[::ffff:192.0.2.7]:80") == "::ffff:192.0.2.7")
        #expect(HTTPServer.addressGroup(of: "192.0.2.7:80") == "192.0.2.7")
    }
}
