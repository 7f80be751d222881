import Foundation
import Glibc
import HTTP
import Testing

@testable import Net

/// The client's `Expect: 100-continue` against a hand-written peer that
/// records every byte it receives: a body leaves only after `100 Continue`.
@Suite struct HTTPClientTests {
    /// What the peer does once it has read a request's head.
    enum Peer: Sendable {
        /// Answers with a final status at once, then listens for 300 ms more.
        case refuse
        /// Says `100 Continue`, reads the body, answers 200.
        case accept
        /// Says nothing for 300 ms, then hangs up.
        case silent
    }

    /// Runs `peer` for one connection on a plaintext listener; returns the
    /// port and a function that waits for the peer and gives every byte it received.
    static func listen(_ peer: Peer) throws -> (port: UInt16, received: () -> [UInt8]) {
        let listener = try Socket.listen(on: SocketAddress(host: "127.0.0.1", port: 0))
        let port = listener.localPort
        let thread = ThreadJob<[UInt8]> {
            var received: [UInt8] = []
            let deadline = Deadline.after(milliseconds: 5_000)
            guard (try? listener.wait(for: Int16(POLLIN), until: deadline, what: "accepting")) != nil,
                let (socket, _) = try? listener.accept()
            else { return received }
            var buffer = [UInt8](repeating: 0, count: 4096)
            func readSome(_ until: Deadline) -> Bool {
                let count = buffer.withUnsafeMutableBytes {
                    (try? socket.read(into: $0, deadline: until, what: "reading")) ?? 0
                }
                received += buffer[0..<count]
                return count > 0
            }
            func write(_ text: String) {
                let bytes = Array(text.utf8)
                bytes.withUnsafeBytes { try? socket.write($0, deadline: .after(milliseconds: 1_000)) }
            }
            while !received.containsSequence([13, 10, 13, 10]) { guard readSome(deadline) else { return received } }
            switch peer {
            case .refuse:
                write(
                    "HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\nContent-Length: 11\r\nConnection: close\r\n\r\n{\"error\":1}"
                )
                let linger = Deadline.after(milliseconds: 300)
                while !linger.hasPassed, readSome(linger) {}
            case .accept:
                write("HTTP/1.1 100 Continue\r\n\r\n")
                while !received.containsSequence(Array("secret-body".utf8)) {
                    guard readSome(deadline) else { return received }
                }
                write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            case .silent:
                let linger = Deadline.after(milliseconds: 300)
                while !linger.hasPassed, readSome(linger) {}
            }
            socket.close()
            return received
        }
        return (port, { thread.wait() })
    }

    static func client(_ port: UInt16, timeout: Int = 5_000) -> HTTPClient {
        var configuration = HTTPClient.Configuration(
            address: SocketAddress(host: "127.0.0.1", port: port), serverName: "localhost", tls: nil)
        configuration.readTimeoutMilliseconds = timeout
        return HTTPClient(configuration)
    }

    @Test func aRefusalOnTheHeadKeepsTheBodyHere() throws {
        let (port, received) = try Self.listen(.refuse)
        let response = try Self.client(port).send(
            method: "POST", target: "/v1/push", body: Array("secret-body".utf8), expectContinue: true)
        #expect(response.status == 409 && response.body == Array("{\"error\":1}".utf8))
        let bytes = received()
        #expect(
            bytes.containsSequence(Array("Expect: 100-continue\r\n".utf8)), "\(String(decoding: bytes, as: UTF8.self))")
        #expect(
            !bytes.containsSequence(Array("secret-body".utf8)),
            "the body left: \(String(decoding: bytes, as: UTF8.self))")
    }

    @Test func theBodyGoesAfterContinue() throws {
        let (port, received) = try Self.listen(.accept)
        var workedAfterTheBody = false
        let response = try Self.client(port).send(
            method: "POST", target: "/v1/push", body: Array("secret-body".utf8), expectContinue: true,
            whileWaiting: { workedAfterTheBody = true })
        #expect(response.status == 200 && response.body == Array("ok".utf8))
        #expect(workedAfterTheBody)
        #expect(received().containsSequence(Array("secret-body".utf8)))
    }

    @Test func noContinueNoBody() throws {
        let (port, received) = try Self.listen(.silent)
        #expect(throws: NetError.self) {
            _ = try Self.client(port, timeout: 200).send(
                method: "POST", target: "/v1/push", body: Array("secret-body".utf8), expectContinue: true)
        }
        #expect(!received().containsSequence(Array("secret-body".utf8)))
    }

    /// The interim answer has no body, whatever headers it carries, and the final one follows in the same bytes.
    @Test func interimAnswersHaveNoBody() throws {
        var parser = HTTPResponseParser()
        parser.feed(
            Array(
                "HTTP/1.1 100 Continue\r\nContent-Length: 5\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
        )
        #expect(try parser.next()?.status == 100)
        let final = try #require(try parser.next())
        #expect(final.status == 200 && final.body == Array("ok".utf8))
    }
}

extension Array where Element == UInt8 {
    func containsSequence(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, count >= needle.count else { return needle.isEmpty }
        return (0...(count - needle.count)).contains { self[$0..<$0 + needle.count].elementsEqual(needle) }
    }
}
