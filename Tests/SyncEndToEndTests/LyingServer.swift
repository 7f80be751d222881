import ContentCoding
import Foundation
import HTTP
import JSON
import Net
import SyncCore
import Synchronization
import TestSupport

/// A hostile server, as a TLS proxy in front of the real one: every answer
/// passes through `rewrite`, which may change it (drop records from a page,
/// set `reset`, serve an old register…) or leave it alone (nil). What the
/// machines must do with what it says is in Deploy/SECURITY.md ("A lying
/// server").
final class LyingServer: Sendable {
    typealias Rewrite = @Sendable (_ request: HTTPRequest, _ status: Int, _ body: JSONValue?) -> JSONValue?

    let server: HTTPServer
    let port: UInt16
    /// How many answers `rewrite` changed.
    final class Counter: Sendable { let value = Atomic<Int>(0) }
    let rewritten = Counter()

    /// - Parameters:
    ///   - headers: rewrites every answer's headers too (a lying clock).
    ///   - answering: may answer a request itself (the real server never
    ///     sees it); `headers` and `rewrite` still apply.
    init(
        in world: SyncWorld, headers: (@Sendable (inout HTTPHeaders) -> Void)? = nil,
        answering: (@Sendable (HTTPRequest) -> HTTPResponse?)? = nil, rewrite: @escaping Rewrite
    ) throws {
        let upstream = world.port
        let upstreamTLS = try TLSContext.client(caFile: world.caFile)
        let count = rewritten
        server = try HTTPServer(
            addresses: [SocketAddress(host: "127.0.0.1", port: 0)],
            tls: TLSContext.server(
                certificateChainFile: world.directory.file("server.pem"),
                privateKeyFile: world.directory.file("server.key")),
            limits: HTTPLimits()
        ) { request, _ in
            // What a readable account's push or relay says, read as sent
            // (it may come compressed); forwarded as it came.
            var read = request
            if request.headers["Content-Encoding"] == Gzip.name,
                let plain = try? Gzip.decompress(request.body, limit: 1 << 26)
            {
                read.body = plain
                read.headers.remove("Content-Encoding")
            }
            let own = answering?(read)
            if own != nil { count.value.add(1, ordering: .relaxed) }
            var answer = own ?? FaultProxy.forward(request, to: upstream, tls: upstreamTLS)
            // A readable account's page may come compressed: read, and sent on, as plain JSON
            // (an answer of its own goes as it was made).
            if own == nil, answer.headers["Content-Encoding"] == Gzip.name,
                let plain = try? Gzip.decompress(answer.body, limit: 1 << 26)
            {
                answer.body = plain
                answer.headers.remove("Content-Encoding")
            }
            headers?(&answer.headers)
            if let changed = rewrite(
                read, answer.status, try? JSONValue.parse(String(decoding: answer.body, as: UTF8.self)))
            {
                answer.body = Array(WireText.of(changed).utf8)
                count.value.add(1, ordering: .relaxed)
            }
            return answer
        }
        port = try server.start()[0]
    }

    /// Points the world's machines at this server for `body`, then back.
    @discardableResult
    func serving<T>(_ world: SyncWorld, _ body: () throws -> T) rethrows -> T {
        let honest = world.port
        world.port = port
        defer { world.port = honest }
        return try body()
    }

    func stop() { server.shutdown(graceMilliseconds: 1000) }
}
