import Foundation
import HTTP
import Net
import SyncCore
import Synchronization
import TestSupport

/// A TLS proxy in front of the real server that injects faults, chosen by a
/// seeded random source: an answer dropped after the server committed, a
/// request sent twice, a 503 with Retry-After before forwarding.
final class FaultProxy: Sendable {
    struct Counts: Sendable { var dropped = 0, duplicated = 0, busy = 0, forwarded = 0 }

    let server: HTTPServer
    let port: UInt16
    final class CountsBox: Sendable {
        let value = Mutex(Counts())
        func withLock<T>(_ body: (inout Counts) -> T) -> T { value.withLock { body(&$0) } }
    }

    let counts = CountsBox()

    /// Where requests go (the server restarts on another port after a restore).
    final class PortBox: Sendable {
        let value = Mutex<UInt16>(0)
    }

    let upstream = PortBox()

    func retarget(_ port: UInt16) { upstream.value.withLock { $0 = port } }

    init(
        upstreamPort: UInt16, caFile: String, certificateFile: String, keyFile: String, seed: UInt64, faultRate: Double
    ) throws {
        let random = Mutex(SeededRandom(seed: seed))
        upstream.value.withLock { $0 = upstreamPort }
        let target = upstream
        let upstreamTLS = try TLSContext.client(caFile: caFile)
        let counts = self.counts
        server = try HTTPServer(
            addresses: [SocketAddress(host: "127.0.0.1", port: 0)],
            tls: TLSContext.server(certificateChainFile: certificateFile, privateKeyFile: keyFile), limits: HTTPLimits()
        ) { request, _ in
            let roll = random.withLock { Double.random(in: 0..<1, using: &$0) }
            let fault = roll < faultRate ? random.withLock { Int.random(in: 0..<3, using: &$0) } : -1
            if fault == 2 {
                counts.withLock { $0.busy += 1 }
                return HTTPResponse(
                    status: 503, headers: ["Retry-After": "0"],
                    body: Array(#"{"error":"busy","message":"injected"}"#.utf8))
            }
            let port = target.value.withLock { $0 }
            func forward() -> HTTPResponse { Self.forward(request, to: port, tls: upstreamTLS) }
            var response = forward()
            counts.withLock { $0.forwarded += 1 }
            if fault == 1 {
                response = forward() // the same request again: the server must not apply it twice
                counts.withLock { $0.duplicated += 1 }
            }
            if fault == 0 {
                counts.withLock { $0.dropped += 1 }
                return HTTPResponse(status: 0) // the server committed; the client never hears
            }
            return response
        }
        port = try server.start()[0]
    }

    func stop() { server.shutdown(graceMilliseconds: 1000) }

    /// `request` sent on to the server at `port`, and its answer as a proxy
    /// passes it back (JSON, with the server's clock, `Retry-After` and its
    /// content coding: compressed, what `Accept-Encoding` it takes);
    /// 502 when the server does not answer.
    static func forward(_ request: HTTPRequest, to port: UInt16, tls: TLSContext) -> HTTPResponse {
        let client = HTTPClient(
            .init(address: SocketAddress(host: "127.0.0.1", port: port), serverName: "localhost", tls: tls))
        var headers = HTTPHeaders()
        for (name, value) in request.headers where name.lowercased() != "host" && name.lowercased() != "content-length"
        {
            headers.add(name, value)
        }
        guard
            let answer = try? client.send(
                method: request.method, target: request.target, headers: headers, body: request.body)
        else {
            return HTTPResponse(status: 502)
        }
        var passed: HTTPHeaders = ["Content-Type": "application/json"]
        for name in [Wire.timeHeader, "Retry-After", "Content-Encoding", "Vary", "Accept-Encoding"] {
            if let value = answer.headers[name] { passed.add(name, value) }
        }
        return HTTPResponse(status: answer.status, headers: passed, body: answer.body)
    }
}
