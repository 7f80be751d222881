import Foundation
import HTTP
import TestSupport
import Testing

@testable import Net

/// A real server on 127.0.0.1 with an ephemeral port, TLS from a fresh CA.
final class TLSFixture: @unchecked Sendable {
    // Set up once in init, then only read.
    let directory: TemporaryDirectory
    let certificates: TestCertificates
    var authority: CertificateAuthority { certificates.authority }
    var caFile: String { certificates.caFile }

    init() throws {
        directory = try TemporaryDirectory(prefix: "brsync-tls")
        certificates = try TestCertificates(in: directory)
    }

    deinit { directory.remove() }

    func serverContext() throws -> TLSContext {
        try TLSContext.server(
            certificateChainFile: certificates.certificateFile, privateKeyFile: certificates.keyFile)
    }

    /// A raw TLS stream to the server on 127.0.0.1:`port` (no HTTP client),
    /// connected and shaken hands within `milliseconds`.
    func stream(port: UInt16, milliseconds: Int = 2000) throws -> TLSStream {
        let socket = try Socket.connect(
            to: SocketAddress(host: "127.0.0.1", port: port), deadline: .after(milliseconds: milliseconds))
        return try TLSStream.connect(
            socket: socket, context: TLSContext.client(caFile: caFile), serverName: "localhost",
            deadline: .after(milliseconds: milliseconds))
    }

    /// Starts a server on 127.0.0.1 (an ephemeral port) with this fixture's
    /// certificate; the caller shuts it down.
    func serve(
        limits: HTTPLimits = HTTPLimits(), quick: HTTPServer.Quick? = nil, handler: @escaping HTTPServer.Handler
    ) throws -> (server: HTTPServer, port: UInt16) {
        try Self.serve(limits: limits, tls: serverContext(), quick: quick, handler: handler)
    }

    /// The same without TLS (`tls: false`).
    static func serve(
        limits: HTTPLimits = HTTPLimits(), tls: Bool, quick: HTTPServer.Quick? = nil,
        handler: @escaping HTTPServer.Handler
    ) throws -> (server: HTTPServer, port: UInt16) {
        try serve(limits: limits, tls: nil as TLSContext?, quick: quick, handler: handler)
    }

    private static func serve(
        limits: HTTPLimits, tls: TLSContext?, quick: HTTPServer.Quick?, handler: @escaping HTTPServer.Handler
    ) throws -> (server: HTTPServer, port: UInt16) {
        let server = try HTTPServer(
            addresses: [SocketAddress(host: "127.0.0.1", port: 0)], tls: tls, limits: limits, quick: quick,
            handler: handler)
        return (server, try server.start()[0])
    }

    func client(port: UInt16, serverName: String = "localhost", caFile: String? = nil) throws -> HTTPClient {
        HTTPClient(
            .init(
                address: SocketAddress(host: "127.0.0.1", port: port), serverName: serverName,
                tls: try TLSContext.client(caFile: caFile ?? self.caFile)))
    }
}

let slowRequestsStarted = LockedBox<Int>()

@Suite(.serialized) struct HTTPServerTests {
    static func echo(_ request: HTTPRequest, _ context: HTTPServer.RequestContext) -> HTTPResponse {
        if request.path == "/slow" {
            slowRequestsStarted.set((slowRequestsStarted.get() ?? 0) + 1)
            usleep(300_000)
        }
        return HTTPResponse(
            status: 200, headers: ["Content-Type": "text/plain"],
            body: Array("\(request.method) \(request.target) \(request.body.count)".utf8))
    }

    @Test func servesOverTLSWithKeepAlive() throws {
        let fixture = try TLSFixture()
        let (server, port) = try fixture.serve(handler: Self.echo)
        defer { server.shutdown(graceMilliseconds: 2000) }
        let client = try fixture.client(port: port)
        for index in 0..<3 {
            let response = try client.send(method: "POST", target: "/echo?i=\(index)", body: Array("hello".utf8))
            #expect(response.status == 200)
            #expect(String(decoding: response.body, as: UTF8.self) == "POST /echo?i=\(index) 5")
        }
        #expect(server.openConnections == 1, "one keep-alive connection served all three")
    }

    /// Work given to `send` runs once, after the request is written and
    /// while the server works on it (a push prepares its next batch then),
    /// also when the idle connection had been closed and is opened again
    /// (the request is sent again; the work is not done twice).
    @Test func workWhileWaitingRunsOnceAfterTheRequestIsWritten() throws {
        let fixture = try TLSFixture()
        var limits = HTTPLimits()
        limits.idleTimeoutMilliseconds = 200
        let (server, port) = try fixture.serve(limits: limits, handler: Self.echo)
        defer { server.shutdown(graceMilliseconds: 2000) }
        let client = try fixture.client(port: port)
        for round in 0..<2 {
            let startedBefore = slowRequestsStarted.get() ?? 0
            var runs = 0
            var serverHadStarted = false
            let response = try client.send(method: "POST", target: "/slow", body: Array("batch".utf8)) {
                runs += 1
                // The request is on its way: the server takes it up while this runs.
                for _ in 0..<200 where (slowRequestsStarted.get() ?? 0) == startedBefore { usleep(5_000) }
                serverHadStarted = (slowRequestsStarted.get() ?? 0) > startedBefore
            }
            #expect(response.status == 200 && String(decoding: response.body, as: UTF8.self) == "POST /slow 5")
            #expect(runs == 1, "round \(round)")
            // (On a connection the server had closed, the first write goes
            // nowhere: the request is sent again, the work is not run again.)
            if round == 0 { #expect(serverHadStarted) }
            // The server closes the idle connection; the next send opens another.
            usleep(500_000)
        }
    }

    @Test func malformedRequestsGet4xxAndClose() throws {
        let fixture = try TLSFixture()
        var limits = HTTPLimits()
        limits.maxBodyBytes = 100
        let (server, port) = try fixture.serve(limits: limits, handler: Self.echo)
        defer { server.shutdown(graceMilliseconds: 2000) }
        let cases: [(String, Int)] = [
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\n", 413),
            ("GET /" + String(repeating: "a", count: 9000) + " HTTP/1.1\r\nHost: a\r\n\r\n", 414),
            ("GET / HTTP/1.1\r\nHost: a\r\nX: " + String(repeating: "b", count: 17000) + "\r\n\r\n", 431),
        ]
        for (raw, status) in cases {
            let client = try fixture.client(port: port)
            let response = try client.sendRaw(Array(raw.utf8))
            #expect(response.status == status)
            #expect(response.headers["Connection"] == "close")
        }
    }

    @Test func aSlowClientDoesNotBlockAFastOne() throws {
        let fixture = try TLSFixture()
        var limits = HTTPLimits()
        limits.headerReadTimeoutMilliseconds = 1500
        let (server, port) = try fixture.serve(limits: limits, handler: Self.echo)
        defer { server.shutdown(graceMilliseconds: 2000) }
        // The slow client sends part of a request and stalls.
        let slowStream = try fixture.stream(port: port)
        try slowStream.write(Array("GET / HTTP/1.1\r\nHo".utf8), deadline: .after(milliseconds: 1000))
        let started = Date()
        let fast = try fixture.client(port: port)
        #expect(try fast.send(method: "GET", target: "/fast").status == 200)
        #expect(Date().timeIntervalSince(started) < 1.0, "the fast client was served while the slow one stalled")
        // The stalled request is ended by the header-read timeout with 408.
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count =
            try buffer.withUnsafeMutableBytes {
                try slowStream.read(into: $0, deadline: .after(milliseconds: 5000), wakeup: nil, what: "test")
            } ?? 0
        let answer = String(decoding: buffer[0..<count], as: UTF8.self)
        #expect(answer.hasPrefix("HTTP/1.1 408"))
        // Worded by the server itself: plain text unless the protocol above words it.
        #expect(
            answer.contains("Content-Type: text/plain; charset=utf-8")
                && answer.hasSuffix("\r\n\r\nthe headers did not arrive in time\n"), "\(answer)")
    }

    @Test func gracefulShutdownFinishesInFlightRequests() throws {
        let fixture = try TLSFixture()
        let (server, port) = try fixture.serve(handler: Self.echo)
        // Used by the one background task only.
        nonisolated(unsafe) let client = try fixture.client(port: port)
        let idle = try fixture.client(port: port)
        #expect(try idle.send(method: "GET", target: "/warm").status == 200)
        let result = LockedBox<Int>()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            result.set((try? client.send(method: "GET", target: "/slow").status) ?? -1)
            done.signal()
        }
        let before = slowRequestsStarted.get() ?? 0
        for _ in 0..<500 where (slowRequestsStarted.get() ?? 0) == before { usleep(10_000) } // until the handler runs
        #expect(server.shutdown(graceMilliseconds: 5000))
        done.wait()
        #expect(result.get() == 200, "the in-flight request finished")
        #expect(server.openConnections == 0, "idle connections were closed")
        #expect(throws: NetError.self) { try fixture.client(port: port).send(method: "GET", target: "/") }
    }

    @Test func untrustedServersAreRefusedWithTheReason() throws {
        let fixture = try TLSFixture()
        let (server, port) = try fixture.serve(handler: Self.echo)
        defer { server.shutdown(graceMilliseconds: 2000) }
        let otherCA = try CertificateAuthority(name: "someone else")
        let otherFile = fixture.directory.file("other-ca.pem")
        try otherCA.certificatePEM.write(toFile: otherFile, atomically: true, encoding: .utf8)
        #expect {
            _ = try fixture.client(port: port, caFile: otherFile).send(method: "GET", target: "/")
        } throws: { String(describing: $0).contains("unable to get local issuer certificate") }
        #expect {
            _ = try fixture.client(port: port, serverName: "example.com").send(method: "GET", target: "/")
        } throws: { String(describing: $0).contains("hostname mismatch") }
    }

    /// A server that hangs up without a TLS close, after the handshake or
    /// in it, closed the connection: it is not called untrusted.
    @Test func aServerThatHangsUpIsNotCalledUntrusted() throws {
        let fixture = try TLSFixture()
        let listener = try Socket.listen(on: SocketAddress(host: "127.0.0.1", port: 0))
        defer { listener.close() }
        let context = try fixture.serverContext()
        let done = DispatchSemaphore(value: 0)
        let afterHandshake = Thread {
            defer { done.signal() }
            for handshake in [true, false] {
                var accepted: Socket?
                for _ in 0..<500 where accepted == nil {
                    accepted = try? listener.accept()?.0
                    if accepted == nil { usleep(10_000) }
                }
                guard let socket = accepted else { return }
                if handshake {
                    // The handshake, the request read, then the socket closed without close_notify.
                    guard
                        let stream = try? TLSStream.accept(
                            socket: socket, context: context, deadline: .after(milliseconds: 5000))
                    else { return }
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    _ = try? buffer.withUnsafeMutableBytes {
                        try stream.read(into: $0, deadline: .after(milliseconds: 5000), wakeup: nil, what: "test")
                    }
                    _ = stream
                }
                socket.close()
            }
        }
        afterHandshake.start()
        for _ in 0..<2 {
            var configuration = HTTPClient.Configuration(
                address: SocketAddress(host: "127.0.0.1", port: listener.localPort), serverName: "localhost",
                tls: try TLSContext.client(caFile: fixture.caFile))
            configuration.readTimeoutMilliseconds = 5000
            #expect {
                _ = try HTTPClient(configuration).send(method: "GET", target: "/")
            } throws: { error in
                guard let error = error as? NetError else { return false }
                if case .tls = error { return false }
                return true
            }
        }
        done.wait()
    }

    @Test func badCertificateFilesSayWhatIsWrong() throws {
        let fixture = try TLSFixture()
        let other = try fixture.authority.issue(hosts: ["localhost"])
        let otherKey = fixture.directory.file("other.key")
        try other.privateKeyPEM.write(toFile: otherKey, atomically: true, encoding: .utf8)
        #expect {
            _ = try TLSContext.server(
                certificateChainFile: fixture.certificates.certificateFile, privateKeyFile: otherKey)
        } throws: {
            String(describing: $0).contains("does not match")
        }
        #expect {
            _ = try TLSContext.server(
                certificateChainFile: "/nonexistent.pem", privateKeyFile: fixture.certificates.keyFile)
        } throws: {
            String(describing: $0).contains("cannot read /nonexistent.pem")
        }
        #expect {
            _ = try TLSContext.server(
                certificateChainFile: fixture.certificates.keyFile, privateKeyFile: fixture.certificates.keyFile)
        } throws: {
            String(describing: $0).contains("is not a PEM certificate chain")
        }
    }

    @Test func aPortInUseIsAnError() throws {
        let first = try HTTPServer(
            addresses: [SocketAddress(host: "127.0.0.1", port: 0)], tls: nil, limits: HTTPLimits(), handler: Self.echo)
        let port = try first.start()[0]
        defer { first.shutdown(graceMilliseconds: 1000) }
        let second = try HTTPServer(
            addresses: [SocketAddress(host: "127.0.0.1", port: port)], tls: nil, limits: HTTPLimits(),
            handler: Self.echo)
        #expect { try second.start() } throws: { ($0 as? NetError)?.errnoCode == EADDRINUSE }
    }
}

/// A value set by one thread and read by another, guarded by a lock.
final class LockedBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T?
    func set(_ newValue: T) { lock.lock(); value = newValue; lock.unlock() }
    func get() -> T? { lock.lock(); defer { lock.unlock() }; return value }
}

@Suite struct HTTPServerLimitTests {
    static func ok(_ request: HTTPRequest, _ context: HTTPServer.RequestContext) -> HTTPResponse {
        HTTPResponse(status: 200, body: Array("ok".utf8))
    }

    @Test func servesIPv6AndNegotiatesALPNAndModernTLS() throws {
        let fixture = try TLSFixture()
        let server = try HTTPServer(
            addresses: [SocketAddress(host: "::1", port: 0), SocketAddress(host: "127.0.0.1", port: 0)],
            tls: fixture.serverContext(), limits: HTTPLimits(), handler: Self.ok)
        let ports = try server.start()
        defer { server.shutdown(graceMilliseconds: 1000) }
        let socket = try Socket.connect(
            to: SocketAddress(host: "::1", port: ports[0]), deadline: .after(milliseconds: 2000))
        let stream = try TLSStream.connect(
            socket: socket, context: TLSContext.client(caFile: fixture.caFile), serverName: "::1",
            deadline: .after(milliseconds: 2000))
        let negotiated = stream.negotiated
        #expect(negotiated.alpn == "http/1.1")
        #expect(negotiated.version == "TLSv1.3" || negotiated.version == "TLSv1.2")
        try stream.write(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8), deadline: .after(milliseconds: 2000))
        var buffer = [UInt8](repeating: 0, count: 512)
        let count =
            try buffer.withUnsafeMutableBytes {
                try stream.read(into: $0, deadline: .after(milliseconds: 2000), wakeup: nil, what: "test")
            } ?? 0
        #expect(String(decoding: buffer[0..<count], as: UTF8.self).hasPrefix("HTTP/1.1 200 OK"))
        #expect(try fixture.client(port: ports[1]).send(method: "GET", target: "/").status == 200)
    }

    @Test func oldTLSVersionsAreRefused() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") else {
            Issue.record("the openssl CLI is missing (scripts/setup installs openssl)")
            return
        }
        let fixture = try TLSFixture()
        let (server, port) = try fixture.serve(handler: Self.ok)
        defer { server.shutdown(graceMilliseconds: 1000) }
        let old = try ProcessRunner.run(
            "/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-tls1_1", "-CAfile", fixture.caFile],
            stdin: "", timeout: 20)
        #expect(old.status != 0, "TLS 1.1 must fail: \(old.stdout.prefix(300))")
        let modern = try ProcessRunner.run(
            "/usr/bin/openssl",
            [
                "s_client", "-connect", "127.0.0.1:\(port)", "-tls1_2", "-CAfile", fixture.caFile, "-servername",
                "localhost",
            ], stdin: "", timeout: 20)
        #expect(modern.stdout.contains("Verify return code: 0 (ok)"), "\(modern.stdout.suffix(400))")
        #expect(modern.stdout.contains("Compression: NONE"))
    }

    @Test func theConnectionCapRefusesTheExtraConnection() throws {
        var limits = HTTPLimits()
        limits.maxConnections = 2
        let (server, port) = try TLSFixture.serve(limits: limits, tls: false, handler: Self.ok)
        defer { server.shutdown(graceMilliseconds: 1000) }
        let address = SocketAddress(host: "127.0.0.1", port: port)
        let first = HTTPClient(.init(address: address, serverName: "localhost", tls: nil))
        let second = HTTPClient(.init(address: address, serverName: "localhost", tls: nil))
        #expect(try first.send(method: "GET", target: "/").status == 200)
        #expect(try second.send(method: "GET", target: "/").status == 200)
        let third = HTTPClient(.init(address: address, serverName: "localhost", tls: nil))
        let refused = try third.send(method: "GET", target: "/")
        #expect(refused.status == 503)
        first.close()
        for _ in 0..<200 where server.openConnections > 1 { usleep(10_000) }
        #expect(
            try HTTPClient(.init(address: address, serverName: "localhost", tls: nil)).send(method: "GET", target: "/")
                .status == 200)
    }

    /// Handshake, idle and body timeouts each end a connection that stalls.
    @Test func stalledConnectionsAreClosedByTheirTimeouts() throws {
        let fixture = try TLSFixture()
        var limits = HTTPLimits()
        limits.tlsHandshakeTimeoutMilliseconds = 300
        limits.idleTimeoutMilliseconds = 300
        limits.bodyReadTimeoutMilliseconds = 300
        let (server, port) = try fixture.serve(limits: limits, handler: Self.ok)
        defer { server.shutdown(graceMilliseconds: 1000) }
        let address = SocketAddress(host: "127.0.0.1", port: port)

        // A client that never starts the handshake.
        let silent = try Socket.connect(to: address, deadline: .after(milliseconds: 1000))
        var byte = [UInt8](repeating: 0, count: 16)
        let closedAfterHandshakeTimeout = try byte.withUnsafeMutableBytes {
            try silent.read(into: $0, deadline: .after(milliseconds: 3000), what: "test")
        }
        #expect(closedAfterHandshakeTimeout == 0)

        // An idle keep-alive connection.
        let idle = try fixture.client(port: port)
        #expect(try idle.send(method: "GET", target: "/").status == 200)
        usleep(600_000)
        for _ in 0..<200 where server.openConnections > 0 { usleep(10_000) }
        #expect(server.openConnections == 0, "the idle connection was closed")

        // A body that stops arriving.
        let socket = try Socket.connect(to: address, deadline: .after(milliseconds: 1000))
        let stream = try TLSStream.connect(
            socket: socket, context: TLSContext.client(caFile: fixture.caFile), serverName: "localhost",
            deadline: .after(milliseconds: 1000))
        try stream.write(
            Array("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly part".utf8),
            deadline: .after(milliseconds: 1000))
        var buffer = [UInt8](repeating: 0, count: 512)
        let count =
            try buffer.withUnsafeMutableBytes {
                try stream.read(into: $0, deadline: .after(milliseconds: 3000), wakeup: nil, what: "test")
            } ?? 0
        #expect(String(decoding: buffer[0..<count], as: UTF8.self).hasPrefix("HTTP/1.1 408"))
    }
}

@Suite struct HTTPServerPipeliningTests {
    @Test func pipelinedRequestsAreAnsweredInOrder() throws {
        let fixture = try TLSFixture()
        let (server, port) = try fixture.serve { request, _ in
            HTTPResponse(status: 200, body: Array(request.target.utf8))
        }
        defer { server.shutdown(graceMilliseconds: 1000) }
        let stream = try fixture.stream(port: port)
        let requests =
            (1...5).map { "GET /\($0) HTTP/1.1\r\nHost: x\r\n\r\n" }.joined()
            + "GET /last HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        try stream.write(Array(requests.utf8), deadline: .after(milliseconds: 2000))
        var parser = HTTPResponseParser()
        var bodies: [String] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bodies.count < 6 {
            while let response = try parser.next() { bodies.append(String(decoding: response.body, as: UTF8.self)) }
            if bodies.count == 6 { break }
            let count =
                try buffer.withUnsafeMutableBytes {
                    try stream.read(into: $0, deadline: .after(milliseconds: 3000), wakeup: nil, what: "test")
                } ?? 0
            if count == 0 { break }
            parser.feed(buffer[0..<count])
        }
        #expect(bodies == ["/1", "/2", "/3", "/4", "/5", "/last"])
    }
}
