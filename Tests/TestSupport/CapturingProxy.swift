import Foundation
import Glibc
import Net
import Synchronization

/// A TLS proxy in front of a server that holds the server's certificate and
/// keeps every byte a client sends it, after TLS: what an attacker who holds
/// the server's certificate (or the server itself) sees leave a machine. It
/// relays bytes as they come, both ways, so `Expect: 100-continue` and a
/// refusal on a request's head pass through as they would to the server.
public final class CapturingProxy: Sendable {
    public let port: UInt16
    private let listener: Socket
    /// What the proxy's threads share.
    private final class Shared: Sendable {
        /// What each connection's client sent (one entry per connection).
        let sent = Mutex<[[UInt8]]>([])
        let stopping = Atomic<Bool>(false)
        let connections = Mutex<[ThreadJob<Void>]>([])
    }

    private let shared = Shared()
    private let accepting: ThreadJob<Void>

    /// - Parameters:
    ///   - upstreamPort: the server's port on 127.0.0.1 (TLS, its certificate for `localhost`).
    ///   - caFile: the CA the server's certificate is checked against.
    ///   - certificateFile, keyFile: what the proxy presents (the server's own).
    public init(upstreamPort: UInt16, caFile: String, certificateFile: String, keyFile: String) throws {
        listener = try Socket.listen(on: SocketAddress(host: "127.0.0.1", port: 0))
        port = listener.localPort
        let serverTLS = try TLSContext.server(certificateChainFile: certificateFile, privateKeyFile: keyFile)
        let upstreamTLS = try TLSContext.client(caFile: caFile)
        let (listener, shared) = (listener, shared)
        accepting = ThreadJob {
            while !shared.stopping.load(ordering: .relaxed) {
                guard
                    (try? listener.wait(for: Int16(POLLIN), until: .after(milliseconds: 100), what: "accepting"))
                        != nil,
                    let (socket, _) = try? listener.accept()
                else { continue }
                let job = ThreadJob {
                    Self.relay(
                        socket, serverTLS: serverTLS, upstreamPort: upstreamPort, upstreamTLS: upstreamTLS,
                        shared: shared)
                }
                shared.connections.withLock { $0.append(job) }
            }
        }
    }

    /// Everything clients sent, connection after connection.
    public var captured: [UInt8] { shared.sent.withLock { $0.flatMap { $0 } } }

    /// A request as it left a machine: its head, and its body when one was sent.
    public struct Request: Sendable {
        public let head: String
        public let body: [UInt8]
        public var bodyText: String { String(decoding: body, as: UTF8.self) }
    }

    /// The requests clients sent, read from each connection's bytes. A body
    /// is taken as sent when bytes follow the head that do not start another
    /// request (a client waiting for `100 Continue` sends none after a refusal).
    public var requests: [Request] {
        var requests: [Request] = []
        for bytes in shared.sent.withLock({ $0 }) {
            var rest = bytes[...]
            while let end = Self.find([13, 10, 13, 10], in: rest) {
                let head = String(decoding: rest[rest.startIndex..<end], as: UTF8.self)
                rest = rest[(end + 4)...]
                let length =
                    head.split(separator: "\r\n").lazy.compactMap { line -> Int? in
                        let parts = line.split(separator: ":", maxSplits: 1)
                        guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                        return Int(parts[1].trimmingCharacters(in: .whitespaces))
                    }.first ?? 0
                let startsRequest = ["GET ", "POST ", "HEAD ", "PUT "].contains { rest.starts(with: Array($0.utf8)) }
                let body = length > 0 && !startsRequest ? Array(rest.prefix(length)) : []
                rest = rest.dropFirst(body.count)
                requests.append(Request(head: head, body: body))
            }
        }
        return requests
    }

    private static func find(_ needle: [UInt8], in bytes: ArraySlice<UInt8>) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        return (bytes.startIndex...(bytes.endIndex - needle.count)).first {
            bytes[$0..<$0 + needle.count].elementsEqual(needle)
        }
    }

    /// Whether `text` appears in what clients sent.
    public func saw(_ text: String) -> Bool {
        let needle = Array(text.utf8)
        let bytes = captured
        guard !needle.isEmpty, bytes.count >= needle.count else { return false }
        return (0...(bytes.count - needle.count)).contains {
            bytes[$0] == needle[0] && bytes[$0..<$0 + needle.count].elementsEqual(needle)
        }
    }

    /// Forgets what was captured so far.
    public func clear() { shared.sent.withLock { $0 = $0.map { _ in [] } } }

    /// Stops accepting and ends every connection (within a tenth of a second).
    public func stop() {
        guard !shared.stopping.exchange(true, ordering: .relaxed) else { return }
        accepting.wait()
        for job in shared.connections.withLock({ $0 }) { job.wait() }
        listener.close()
    }

    deinit { stop() }

    /// One client's connection: TLS with the client, TLS to the server, bytes
    /// relayed both ways until either side closes or the proxy stops.
    private static func relay(
        _ socket: Socket, serverTLS: TLSContext, upstreamPort: UInt16, upstreamTLS: TLSContext,
        shared: Shared
    ) {
        let deadline = Deadline.after(milliseconds: 5_000)
        guard let client = try? TLSStream.accept(socket: socket, context: serverTLS, deadline: deadline) else { return }
        defer { client.close() }
        guard
            let upstreamSocket = try? Socket.connect(
                to: SocketAddress(host: "127.0.0.1", port: upstreamPort), deadline: deadline),
            let upstream = try? TLSStream.connect(
                socket: upstreamSocket, context: upstreamTLS, serverName: "localhost", deadline: deadline)
        else { return }
        defer { upstream.close() }
        let connection = shared.sent.withLock { sent in
            sent.append([])
            return sent.count - 1
        }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        /// Moves what arrived from `from` to `to`; false once either side is gone.
        func pass(_ from: TLSStream, _ to: TLSStream, record: Bool) -> (open: Bool, moved: Bool) {
            var moved = false
            while true {
                let step = buffer.withUnsafeMutableBytes { raw in (try? from.readNow(into: raw)) ?? .closed }
                switch step {
                case .bytes(let count):
                    let bytes = Array(buffer[0..<count])
                    if record { shared.sent.withLock { $0[connection] += bytes } }
                    guard (try? to.write(bytes, deadline: .after(milliseconds: 5_000))) != nil else {
                        return (false, moved)
                    }
                    moved = true
                case .nothing, .needsWait:
                    return (true, moved)
                case .closed:
                    return (false, moved)
                }
            }
        }
        while !shared.stopping.load(ordering: .relaxed) {
            let up = pass(client, upstream, record: true)
            let down = pass(upstream, client, record: false)
            guard up.open, down.open else { return }
            if up.moved || down.moved { continue }
            var descriptors = [
                pollfd(fd: client.socket.descriptor, events: Int16(POLLIN), revents: 0),
                pollfd(fd: upstream.socket.descriptor, events: Int16(POLLIN), revents: 0),
            ]
            _ = poll(&descriptors, 2, 50)
        }
    }
}
