import BrsyncServer
import Foundation
import HTTP
import Model
import Net
import Replica
import SyncClient
import SyncCore
import TestSupport
import Testing

/// A key change whose answer is lost after the server committed it.
@Suite struct LostKeyChangeAnswerTests {
    /// A gateway in front of the server (a reverse proxy) that forwards every
    /// request and, for key changes, answers 502 with its own page once the
    /// server has answered: the change happened, the machine never hears.
    final class Gateway: Sendable {
        let server: HTTPServer
        let port: UInt16

        /// With the world's certificate (in `directory`) and its CA; each
        /// answer goes through `rewrite` (by default: key changes answered
        /// 502 once the server has answered, the rest as it is).
        init(
            upstreamPort: UInt16, directory: TemporaryDirectory, caFile: String,
            target: @escaping @Sendable (String) -> String = { $0 },
            rewrite: @escaping @Sendable (HTTPRequest, HTTPResponse) -> HTTPResponse = Gateway.garbleKeyChanges
        ) throws {
            let upstreamTLS = try TLSContext.client(caFile: caFile)
            server = try HTTPServer(
                addresses: [SocketAddress(host: "127.0.0.1", port: 0)],
                tls: TLSContext.server(
                    certificateChainFile: directory.file("server.pem"), privateKeyFile: directory.file("server.key")),
                limits: HTTPLimits()
            ) { request, _ in
                var sent = request
                sent.target = target(request.target)
                return rewrite(request, FaultProxy.forward(sent, to: upstreamPort, tls: upstreamTLS))
            }
            port = try server.start()[0]
        }

        static let garbleKeyChanges: @Sendable (HTTPRequest, HTTPResponse) -> HTTPResponse = { request, answer in
            guard request.path == "/v1/account/encrypt" else { return answer }
            return HTTPResponse(
                status: 502, headers: ["Content-Type": "text/html"], body: Array("<h1>502 Bad Gateway</h1>".utf8))
        }

        deinit { server.shutdown(graceMilliseconds: 1000) }
    }

    /// `key init` and `key rotate` through the gateway: the server took the
    /// new key, the machine got a 502. The key stays pending (never deleted
    /// on an answer that is not a refusal), the next sync settles it, and
    /// every machine goes on with it.
    @Test(arguments: StoreKind.allCases, [false, true]) func aKeyChangeWhoseAnswerIsLostKeepsTheKey(
        _ kind: StoreKind, _ rotating: Bool
    ) throws {
        let world = try SyncWorld(kind)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        try KeyChangeTests.rule(a, "a-rule.com")
        try world.sync(a)
        var old: AccountKey?
        if rotating {
            old = try KeyChangeTests.changeKey(world, a).0
            try KeyChangeTests.addKey(world, b, old!)
        } else {
            try world.sync(b)
        }
        let gateway = try Gateway(upstreamPort: world.port, directory: world.directory, caFile: world.caFile)
        let serverPort = world.port
        world.port = gateway.port
        let key = AccountKey.generate()
        #expect {
            _ = try world.client(a).changeAccountKey(to: key) { _ in }
        } throws: { error in
            guard case SyncError.badAnswer = error else { return false }
            return true
        }
        world.port = serverPort
        #expect(
            try AccountKeyFile.read(home: a.replica.home, pending: true) == key,
            "the key is kept until a definite refusal")
        #expect(try world.client(a).accountKeyID() == key.id, "the server took it")
        // The next sync settles it (as `brsync sync` does first), and a goes on with the new key.
        #expect(try AccountKeyFile.settle(home: a.replica.home) { try world.client(a).accountKeyID() } == true)
        #expect(try AccountKeyFile.read(home: a.replica.home) == key)
        if let old { #expect(try AccountKeyFile.readOlder(home: a.replica.home) == [old]) }
        try world.sync(a)
        try KeyChangeTests.rule(b, "b-rule.com")
        try KeyChangeTests.addKey(world, b, key)
        try world.sync(a)
        for machine in [a, b] {
            #expect(
                try SyncWorld.rules(machine.replica).keys.sorted() == ["a-rule.com", "b-rule.com"], "\(machine.name)")
        }
    }

    /// A server that names the key a machine brings as the account's while
    /// its records are sealed with another: `key add` and `join` open a
    /// record before they keep a code, so the lie is caught and nothing is
    /// saved.
    @Test func aCodeIsCheckedByOpeningARecordNotByTheServersWord() throws {
        let world = try SyncWorld()
        let a = try world.machine("a")
        try KeyChangeTests.rule(a, "a-rule.com")
        let (key, _) = try KeyChangeTests.changeKey(world, a)
        let other = AccountKey.generate()
        let (real, claimed) = (#""key":"\#(key.id)""#, #""key":"\#(other.id)""#)
        let gateway = try Gateway(
            upstreamPort: world.port, directory: world.directory, caFile: world.caFile,
            target: { $0.replacingOccurrences(of: other.id, with: key.id) }
        ) { _, answer in
            // Claims the other key, and lets pulls that name it through as if they named the real one.
            let text = String(decoding: answer.body, as: UTF8.self).replacingOccurrences(of: real, with: claimed)
            return HTTPResponse(status: answer.status, headers: answer.headers, body: Array(text.utf8))
        }
        let serverPort = world.port
        world.port = gateway.port
        defer { world.port = serverPort }
        let b = try world.machine("b")
        #expect(try world.client(b).accountKeyID() == other.id, "the server lies about the key")
        #expect {
            try world.client(b).checkKey(other)
        } throws: { error in
            guard case SyncError.usage(let message) = error else { return false }
            return message.contains("does not open")
        }
        world.port = serverPort
        try world.client(b).checkKey(key) // the real code passes against the honest server
    }
}
