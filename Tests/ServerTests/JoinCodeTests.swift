import Foundation
import Glibc
import HTTP
import JSON
import Net
import SyncCore
import TestSupport
import Testing

@testable import BrsyncServer
@testable import ServerStore

/// Join codes are enrollment secrets: they read until `POST /v1/join`
/// exchanges them, once and before they expire, for a token the joining
/// machine made; a retry with that token is answered the same.
@Suite struct JoinCodeTests {
    static func client(_ fixture: ServerFixture) throws -> HTTPClient {
        HTTPClient(
            .init(
                address: SocketAddress(host: "127.0.0.1", port: fixture.port), serverName: "localhost",
                tls: try TLSContext.client(caFile: fixture.caFile)))
    }

    static func headers(_ bearer: String) -> HTTPHeaders {
        ["Authorization": "Bearer \(bearer)", Wire.protocolHeader: String(Wire.protocolVersion)]
    }

    static func join(_ client: HTTPClient, secret: String, token: String) throws -> HTTPResponseParser.ParsedResponse {
        try client.send(
            method: "POST", target: "/v1/join", headers: headers(secret), body: JoinRequest(token: token).body)
    }

    @Test(arguments: StoreKind.allCases) func aJoinCodeWorksOnceForTheTokenItWasExchangedFor(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let owner = try fixture.device("alice", "laptop")
        #expect(try owner.push([owner.change("a.example", ["browser": .string("firefox")])]).status == 200)
        let secret = try fixture.store.joinSecret("alice", "phone")
        #expect(secret.hasPrefix("brj_") && secret.utf8.count == 47)
        let client = try Self.client(fixture)

        // Before the exchange the secret reads (a joining machine checks the
        // account and its recovery code first) and writes nothing.
        let read = try client.send(method: "GET", target: "/v1/pull?since=0", headers: Self.headers(secret))
        #expect(read.status == 200 && read.text.contains("a.example"), "\(read.text)")
        let push = PushRequest(
            device: "phone-1", from: 1, to: 1, changes: [owner.change("b.example", ["browser": .string("x")])])
        let written = try client.send(
            method: "POST", target: "/v1/push", headers: Self.headers(secret), body: push.body())
        #expect(written.status == 401 && written.errorMessage.contains("only reads"), "\(written.text)")
        // Nor is the device seen by those reads: it has not joined (`brsyncd device list` says it waits).
        let phone = try #require(try fixture.store.devices(account: "alice").first { $0.name == "phone" })
        #expect(phone.lastSeenMillis == nil && phone.acknowledgedCursor == 0, "\(phone)")

        // The exchange: the machine's own token works, the secret no longer does.
        let token = Tokens.make()
        let joined = try Self.join(client, secret: secret, token: token)
        #expect(joined.status == 200, "\(joined.text)")
        let answer = try JoinResponse(json: try #require(joined.json))
        #expect(answer.device == "phone")
        #expect(try fixture.store.authenticate(token: token).name == "phone")
        let after = try client.send(method: "GET", target: "/v1/pull?since=0", headers: Self.headers(secret))
        #expect(after.status == 401 && after.errorMessage.contains("used already"), "\(after.text)")
        #expect(throws: ServerError.self) { try fixture.store.authenticate(token: secret) }

        // Asked again for the same token (its answer was lost): the same answer.
        let retried = try Self.join(client, secret: secret, token: token)
        #expect(retried.status == 200 && (try? JoinResponse(json: retried.json ?? .null)) == answer, "\(retried.text)")
        // For another token (someone else with the code): refused, and the first token still works.
        let other = try Self.join(client, secret: secret, token: Tokens.make())
        #expect(other.status == 401 && other.errorMessage.contains("used already"), "\(other.text)")
        #expect(try fixture.store.authenticate(token: token).name == "phone")
    }

    @Test(arguments: StoreKind.allCases) func anExpiredReplacedOrRevokedCodeIsRefused(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        _ = try fixture.device("alice", "laptop")
        let client = try Self.client(fixture)
        let token = Tokens.make()

        let expired = try fixture.store.enroll(account: "alice", device: "old", adding: true, validMilliseconds: -1)
            .secret
        let late = try Self.join(client, secret: expired, token: token)
        #expect(late.status == 401 && late.errorMessage.contains("expired at"), "\(late.text)")
        let lateRead = try client.send(method: "GET", target: "/v1/pull?since=0", headers: Self.headers(expired))
        #expect(lateRead.status == 401 && lateRead.errorMessage.contains("expired at"), "\(lateRead.text)")

        // A newer code for the device replaces the older one.
        let first = try fixture.store.joinSecret("alice", "tablet")
        let second = try fixture.store.joinSecret("alice", "tablet", adding: false)
        #expect(try Self.join(client, secret: first, token: token).status == 401)
        // So does a plain token issued since.
        _ = try fixture.store.reissueToken(account: "alice", device: "tablet")
        let replaced = try Self.join(client, secret: second, token: token)
        #expect(replaced.status == 401 && replaced.errorMessage.contains("no longer works"), "\(replaced.text)")

        // A device revoked before it joined stays revoked.
        let revokedSecret = try fixture.store.joinSecret("alice", "lost")
        try fixture.store.revokeDevice(account: "alice", name: "lost")
        let revoked = try Self.join(client, secret: revokedSecret, token: token)
        #expect(revoked.status == 403 || revoked.errorCode == .revoked, "\(revoked.text)")
        #expect(throws: ServerError.self) { try fixture.store.authenticate(token: token) }

        // Adding a device that exists, or a code for one that does not: refused, nothing changed.
        #expect(throws: ServerError.self) {
            try fixture.store.enroll(account: "alice", device: "laptop", adding: true, validMilliseconds: 1000)
        }
        #expect(throws: ServerError.self) {
            try fixture.store.enroll(account: "alice", device: "nobody", adding: false, validMilliseconds: 1000)
        }
    }

    /// Bad exchanges change nothing: a device token or nothing as the
    /// bearer, a body that is not a join request, a weak token, a large body.
    @Test(arguments: StoreKind.allCases) func badJoinRequestsAreRefused(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let owner = try fixture.device("alice", "laptop")
        let secret = try fixture.store.joinSecret("alice", "phone")
        let client = try Self.client(fixture)
        let token = Tokens.make()
        let rows: [(HTTPHeaders, [UInt8], Int, String)] = [
            (Self.headers(owner.token), JoinRequest(token: token).body, 401, "join code's secret"),
            ([:], JoinRequest(token: token).body, 401, "Authorization"),
            (Self.headers(secret), Array("not json".utf8), 400, "not JSON"),
            (Self.headers(secret), Array(#"{"token": "brs_short"}"#.utf8), 400, "43 characters"),
            (
                Self.headers(secret), Array(#"{"token": "brj_\#(String(repeating: "a", count: 43))"}"#.utf8), 400,
                "43 characters"
            ),
            (Self.headers(secret), Array(#"{"token": 7}"#.utf8), 400, "43 characters"),
            (Self.headers(secret), Array(repeating: 0x20, count: 2000), 400, "at most 1024 bytes"),
            (
                Self.headers("brj_" + String(repeating: "b", count: 43)), JoinRequest(token: token).body, 401,
                "not valid"
            ),
        ]
        for (headers, body, status, message) in rows {
            let answer = try client.send(method: "POST", target: "/v1/join", headers: headers, body: body)
            #expect(
                answer.status == status && answer.errorMessage.contains(message),
                "\(message): \(answer.status) \(answer.text)")
        }
        // The code still works after all that.
        #expect(try Self.join(client, secret: secret, token: token).status == 200)
    }

    /// A join's body is small: the event loop reads it, so strangers (or a
    /// holder of a code) sending its headers and no body hold no thread, and
    /// a legitimate join is still served; a secret the server never issued
    /// is refused on the headers where a thread reads them (`Expect:
    /// 100-continue`); a slow join completes.
    @Test(arguments: StoreKind.allCases) func joinsWaitingForTheirBodyHoldNoThread(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let address = SocketAddress(host: "127.0.0.1", port: fixture.port)
        let context = try TLSContext.client(caFile: fixture.caFile)
        func connect() throws -> TLSStream {
            let socket = try Socket.connect(to: address, deadline: .after(milliseconds: 2000))
            return try TLSStream.connect(
                socket: socket, context: context, serverName: "localhost", deadline: .after(milliseconds: 2000))
        }
        func head(_ secret: String, length: Int, expect: Bool = false) -> [UInt8] {
            Array(
                "POST /v1/join HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(secret)\r\nContent-Length: \(length)\r\n\(expect ? "Expect: 100-continue\r\n" : "")\r\n"
                    .utf8)
        }
        let stranger = "brj_" + String(repeating: "x", count: 43)
        var waiting: [TLSStream] = []
        for _ in 0..<40 {
            let stream = try connect()
            try stream.write(head(stranger, length: 200), deadline: .after(milliseconds: 1000))
            waiting.append(stream)
        }
        usleep(300_000)
        #expect(
            fixture.server.activeRequests == 0, "\(fixture.server.activeRequests) threads for 40 joins without a body")
        let owner = try fixture.device("alice", "laptop")
        #expect(try owner.pull().status == 200, "a device is served meanwhile")
        // Asking for 100 Continue: a thread reads the head, and refuses a secret never issued at once.
        let asking = try connect()
        try asking.write(head(stranger, length: 200, expect: true), deadline: .after(milliseconds: 1000))
        #expect(try asking.readText().hasPrefix("HTTP/1.1 401"))
        asking.close()
        for _ in 0..<300 where fixture.server.activeRequests > 0 { usleep(10_000) } // its thread drains and closes
        // A real code whose body comes slowly.
        let secret = try fixture.store.joinSecret("alice", "phone")
        let body = JoinRequest(token: Tokens.make()).body
        let slow = try connect()
        try slow.write(head(secret, length: body.count) + body.prefix(10), deadline: .after(milliseconds: 1000))
        usleep(200_000)
        #expect(fixture.server.activeRequests == 0)
        try slow.write(Array(body.dropFirst(10)), deadline: .after(milliseconds: 1000))
        #expect(try slow.readText().hasPrefix("HTTP/1.1 200"))
        for stream in waiting { stream.close() }
    }
}
