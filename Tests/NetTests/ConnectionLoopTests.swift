import Foundation
import Glibc
import HTTP
import Synchronization
import Testing
import TestSupport
@testable import Net

/// The event loop holds connections that are not being answered without a
/// thread each: a flood of connections that never finish a handshake, or of
/// idle keep-alive clients, leaves the threads to requests.
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
        let server = try HTTPServer(addresses: [SocketAddress(host: "127.0.0.1", port: 0)], tls: fixture.serverContext(), limits: limits, handler: Self.ok)
        let port = try server.start()[0]
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
        for _ in 0..<200 where server.waitingConnections < 500 { usleep(10_000) }
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
        let server = try HTTPServer(addresses: [SocketAddress(host: "127.0.0.1", port: 0)], tls: nil, limits: limits) { request, _ in
            started.add(1, ordering: .relaxed)
            while !release.withLock({ $0 }) { usleep(5_000) }
            return HTTPResponse(status: 200, headers: [:], body: Array("slow".utf8))
        }
        let port = try server.start()[0]
        defer { server.shutdown(graceMilliseconds: 2000) }
        let address = SocketAddress(host: "127.0.0.1", port: port)
        let slow = ThreadJob { () -> Int in
            (try? HTTPClient(.init(address: address, serverName: "localhost", tls: nil)).send(method: "GET", target: "/slow").status) ?? -1
        }
        for _ in 0..<500 where started.load(ordering: .relaxed) == 0 { usleep(5_000) }
        let busy = try HTTPClient(.init(address: address, serverName: "localhost", tls: nil)).send(method: "GET", target: "/")
        #expect(busy.status == 503 && busy.headers["Retry-After"] == "1", "\(busy.status)")
        release.withLock { $0 = true }
        #expect(slow.wait() == 200)
    }

    /// The per-address cap counts an IPv6 peer by its /64: one host picks
    /// addresses from a /64 for free.
    @Test func ipv6PeersAreCountedByTheirSlash64() {
        #expect(HTTPServer.addressGroup(of: "[2001:db8:1:2:aaaa::1]:443") == "[2001:db8:1:2::/64]")
        #expect(HTTPServer.addressGroup(of: "[2001:db8:1:2:bbbb:cccc:dddd:eeee]:5") == "[2001:db8:1:2::/64]")
        #expect(HTTPServer.addressGroup(of: "[2001:db8:1:3::1]:5") != HTTPServer.addressGroup(of: "[2001:db8:1:2::1]:5"))
        #expect(HTTPServer.addressGroup(of: "[::ffff:192.0.2.7]:80") == "::ffff:192.0.2.7")
        #expect(HTTPServer.addressGroup(of: "192.0.2.7:80") == "192.0.2.7")
    }
}
