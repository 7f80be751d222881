import Foundation
import Glibc
import HTTP
import JSON
import Model
import SyncCore
import TestSupport
import Testing

@testable import BrsyncServer
@testable import Net
@testable import ServerStore

/// A TLS connection that sends raw bytes and reads whatever comes back, for
/// requests no well-behaved client would send.
final class RawConnection {
    let stream: TLSStream

    /// Connects to `port` on 127.0.0.1, from `source` when given (another
    /// loopback address, to be another client for per-address limits).
    init(port: UInt16, caFile: String, source: String? = nil) throws {
        let socket: Socket
        if let source {
            let descriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            var remote = sockaddr_in()
            remote.sin_family = sa_family_t(AF_INET)
            remote.sin_port = port.bigEndian
            inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            let connected = withUnsafePointer(to: &remote) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0, connected == 0 else { throw NetError.system("connect from \(source)", errno) }
            Socket.makeNonBlocking(descriptor)
            socket = Socket(descriptor: descriptor)
        } else {
            socket = try Socket.connect(
                to: SocketAddress(host: "127.0.0.1", port: port), deadline: .after(milliseconds: 5000))
        }
        stream = try TLSStream.connect(
            socket: socket, context: try TLSContext.client(caFile: caFile), serverName: "localhost",
            deadline: .after(milliseconds: 5000))
    }

    func send(_ bytes: [UInt8]) throws { try stream.write(bytes, deadline: .after(milliseconds: 5000)) }
    func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Everything the server sends until it closes (or `milliseconds` pass).
    /// A reset (the server closed with unread input) is thrown.
    func readAll(milliseconds: Int = 5000) throws -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        let deadline = Deadline.after(milliseconds: milliseconds)
        while true {
            let result = buffer.withUnsafeMutableBytes { raw in
                Result<Int?, NetError> { () throws(NetError) in
                    try stream.read(into: raw, deadline: deadline, wakeup: nil, what: "reading")
                }
            }
            switch result {
            case .success(let count?) where count > 0:
                received += buffer[0..<count]
            case .success:
                return String(decoding: received, as: UTF8.self)
            case .failure(let error):
                if case .timeout = error { return String(decoding: received, as: UTF8.self) }
                throw error
            }
        }
    }

    func close() { stream.close() }
}

/// The real `brsyncd` binary serving over TLS on 127.0.0.1 (ephemeral port),
/// with a fresh store, CA, account and device made with its own commands.
final class BinaryServer: @unchecked Sendable {
    // Built in init; the process is stopped in deinit.
    let directory: TemporaryDirectory
    let caFile: String
    let server: BrsyncdProcess
    let port: UInt16
    let token: String

    init(_ kind: StoreKind = .sqlite) throws {
        directory = try TemporaryDirectory(prefix: "brsyncd-binary")
        caFile = try TestCertificates(in: directory).caFile
        let brsyncd = ProcessRunner.binary("brsyncd")
        let (store, environment) = try kind.brsyncdStore(in: directory)
        #expect(
            try ProcessRunner.run(brsyncd, ["account", "add", "alice"] + store, environment: environment).status == 0)
        let added = try ProcessRunner.run(
            brsyncd, ["device", "add", "alice", "laptop"] + store, environment: environment)
        token = String(added.stdout.split(separator: "\n").last ?? "")
        server = try BrsyncdProcess(store, certificates: directory, environment: environment, binary: brsyncd)
        port = server.port
    }

    deinit {
        server.stop()
        directory.remove()
    }

    /// The device, as the test's client.
    func device(_ clientDevice: String) throws -> TestDevice {
        let client = HTTPClient(
            .init(
                address: SocketAddress(host: "127.0.0.1", port: port), serverName: "localhost",
                tls: try TLSContext.client(caFile: caFile)))
        return TestDevice(client: client, token: token, deviceID: clientDevice)
    }
}

/// Hostile requests against the real server over TLS: each row is answered as
/// stated, and afterwards the server still serves and the account still syncs.
/// (A change that is well formed but over a limit is rejected alone, in a 200
/// answer: its device's later changes must not be stuck behind it.)
@Suite(.serialized) struct HostileInputTests {
    struct Row: Sendable, CustomStringConvertible {
        let name: String
        /// The raw request; `TOKEN` is replaced by a valid token.
        let request: String
        let status: Int
        let text: String
        var description: String { name }
    }

    static func push(_ body: String) -> String {
        "POST /v1/push HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer TOKEN\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
    }

    static func nested(_ depth: Int, _ leaf: String) -> String {
        String(repeating: "[", count: depth) + leaf + String(repeating: "]", count: depth)
    }

    static let stamp = "0000000000000001-00000000-d"

    static let rows: [Row] = [
        Row(
            name: "chunk size with the top bit set",
            request:
                "POST /v1/push HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer TOKEN\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n",
            status: 413, text: "larger than"),
        Row(
            name: "chunk size of 2^63-1",
            request:
                "POST /v1/push HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer TOKEN\r\nTransfer-Encoding: chunked\r\n\r\n7fffffffffffffff\r\nx",
            status: 413, text: "larger than"),
        Row(
            name: "a chunked body before authentication is never read",
            request: "POST /v1/anything HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nx",
            status: 404, text: "no such endpoint"),
        Row(
            name: "Kelvin sign in Transfer-Encoding",
            request: "POST /v1/push HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chun\u{212A}ed\r\n\r\n", status: 400,
            text: "transfer coding"),
        Row(
            name: "push range of 2^63-1 with no changes",
            request: push(#"{"device":"d","from":1,"to":9223372036854775807,"changes":[]}"#), status: 400,
            text: "is not the 0 change(s) sent"),
        Row(
            name: "push range of 500 million with no changes",
            request: push(#"{"device":"d","from":1,"to":500000000,"changes":[]}"#), status: 400,
            text: "is not the 0 change(s) sent"),
        Row(
            name: "a value nested 300 levels deep",
            request: push(
                #"{"device":"d","from":1,"to":1,"changes":[{"seq":1,"collection":"rules","key":"k","fields":{"x":{"s":"\#(stamp)","v":\#(nested(300, "1"))}},"versions":{}}]}"#
            ),
            status: 400, text: "nested deeper"),
        Row(
            name: "a value nested 17 levels deep",
            request: push(
                #"{"device":"h","from":1,"to":1,"changes":[{"seq":1,"collection":"rules","key":"k","fields":{"x":{"s":"0000000000000001-00000000-h","v":\#(nested(17, "1"))}},"versions":{}}]}"#
            ),
            status: 200, text: #""reason":"field \"x\" of change 1: a value is nested deeper than 16 levels""#),
        Row(
            name: "a key with a NUL",
            request: push(
                #"{"device":"h","from":1,"to":1,"changes":[{"seq":1,"collection":"rules","key":"\u0000x","fields":{},"versions":{}}]}"#
            ),
            status: 200, text: #""reason":"change 1: a key must not contain control characters""#),
        Row(
            name: "a body without a token is refused before it is sent",
            request: "POST /v1/push HTTP/1.1\r\nHost: a\r\nContent-Length: 8000000\r\n\r\n", status: 401,
            text: "Authorization"),
        Row(
            name: "a body with a wrong token is refused before it is sent",
            request:
                "POST /v1/push HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer brs_wrong\r\nContent-Length: 8000000\r\n\r\n",
            status: 401, text: "not valid"),
        Row(
            name: "two Authorization headers, the first a good one",
            request:
                "GET /v1/pull?since=0 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer TOKEN\r\nAuthorization: Bearer brs_other\r\nConnection: close\r\n\r\n",
            status: 401, text: "one Authorization header"),
        Row(
            name: "a scheme other than Bearer",
            request:
                "GET /v1/pull?since=0 HTTP/1.1\r\nHost: a\r\nAuthorization: Basic TOKEN\r\nConnection: close\r\n\r\n",
            status: 401, text: "must be 'Bearer TOKEN'"),
        Row(
            name: "Bearer without a token",
            request: "GET /v1/pull?since=0 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \r\nConnection: close\r\n\r\n",
            status: 401, text: "must be 'Bearer TOKEN'"),
        Row(
            name: "the scheme in another case",
            request:
                "GET /v1/pull?since=0 HTTP/1.1\r\nHost: a\r\nAuthorization: bEARER TOKEN\r\nConnection: close\r\n\r\n",
            status: 200, text: "\"changes\""),
        Row(
            name: "a body with two Authorization headers",
            request:
                "POST /v1/push HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer TOKEN\r\nAuthorization: Bearer TOKEN\r\nContent-Length: 8000000\r\n\r\n",
            status: 401, text: "one Authorization header"),
        Row(
            name: "a body to an unknown path",
            request: "POST /v1/nothing HTTP/1.1\r\nHost: a\r\nContent-Length: 8000000\r\n\r\n", status: 404,
            text: "no such endpoint"),
        Row(
            name: "an expectation other than 100-continue",
            request:
                "POST /v1/push HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer TOKEN\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n{}",
            status: 417, text: "100-continue"),
        Row(
            name: "a device id with a NUL (PostgreSQL text cannot hold one)",
            request: push(
                #"{"device":"d\u0000","from":1,"to":1,"changes":[{"seq":1,"collection":"rules","key":"k","fields":{},"versions":{}}]}"#
            ),
            status: 400, text: "device"),
        Row(
            name: "a field name with a NUL",
            request: push(
                #"{"device":"h","from":1,"to":1,"changes":[{"seq":1,"collection":"rules","key":"k","fields":{"a\u0000":{"s":"0000000000000001-00000000-h","v":1}},"versions":{}}]}"#
            ),
            status: 200, text: #""reason":"change 1: a field name must not contain control characters""#),
        Row(
            name: "a value holding a NUL is stored escaped",
            request: push(
                #"{"device":"h","from":1,"to":1,"changes":[{"seq":1,"collection":"rules","key":"k","fields":{"x":{"s":"0000000000000001-00000000-h","v":"a\u0000b"}},"versions":{"h":1}}]}"#
            ),
            status: 200, text: #""acknowledged":1"#),
        Row(
            name: "a pulling replica named with a NUL",
            request:
                "GET /v1/pull?since=0&device=d%00&pushed=1&digest=0000000000000000 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer TOKEN\r\nConnection: close\r\n\r\n",
            status: 400, text: "device"),
        Row(
            name: "a cursor past 2^63",
            request:
                "GET /v1/pull?since=99999999999999999999 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer TOKEN\r\nConnection: close\r\n\r\n",
            status: 400, text: "since"),
        Row(
            name: "a version vector with 2,000 devices",
            request: push(
                #"{"device":"h","from":1,"to":1,"changes":[{"seq":1,"collection":"rules","key":"k","fields":{},"versions":{\#((0..<2000).map { "\"d\($0)\":1" }.joined(separator: ","))}}]}"#
            ),
            status: 200, text: #""reason":"change 1: a version vector has more than 1024 devices""#),
    ]

    /// Every row against the `brsyncd` binary (so a crash is a dead process,
    /// not a failed test in this one), on each store.
    @Test("hostile requests are answered and change nothing", arguments: rows, StoreKind.allCases)
    func hostileRequest(_ row: Row, _ kind: StoreKind) throws {
        let server = try BinaryServer(kind)
        let device = try server.device("d")
        let connection = try RawConnection(port: server.port, caFile: server.caFile)
        try connection.send(row.request.replacingOccurrences(of: "TOKEN", with: device.token))
        let answer = try connection.readAll()
        connection.close()
        #expect(answer.hasPrefix("HTTP/1.1 \(row.status) "), "\(row.name): \(answer.prefix(300))")
        #expect(answer.contains(row.text), "\(row.name): \(answer.prefix(300))")
        // Every answer, the HTTP layer's own refusals too, says gzip bodies are taken (RFC 7694).
        #expect(answer.contains("\r\nAccept-Encoding: gzip\r\n"), "\(row.name): \(answer.prefix(300))")
        try expectServing(port: server.port, caFile: server.caFile, device)
    }

    func expectServing(_ fixture: ServerFixture, _ device: TestDevice) throws {
        try expectServing(port: fixture.port, caFile: fixture.caFile, device)
    }

    /// The server answers health checks and the account pushes and pulls.
    func expectServing(port: UInt16, caFile: String, _ device: TestDevice) throws {
        let health = try HTTPClient(
            .init(
                address: SocketAddress(host: "127.0.0.1", port: port), serverName: "localhost",
                tls: try TLSContext.client(caFile: caFile))
        ).send(method: "GET", target: "/v1/health")
        #expect(health.status == 200)
        let key = "alive\(device.nextSequence).example"
        #expect(try device.push([device.change(key, ["browser": .string("firefox")])]).status == 200)
        #expect(try device.pullAll().records["rules/\(key)"] != nil)
    }

    /// Two pushes of one key with the same stamp and values nested as deep as
    /// allowed merge to the same value in either order (canonical tie-break).
    @Test func equalStampsAreDecidedByTheCanonicalValue() throws {
        let stamp = HLCTimestamp(wallMillis: 1000, counter: 0, device: "d")
        let deep = JSONValue.array([
            .array([
                .array([
                    .array([
                        .array([
                            .array([
                                .array([
                                    .array([
                                        .array([.array([.array([.array([.array([.array([.array([.int(1)])])])])])])])
                                    ])
                                ])
                            ])
                        ])
                    ])
                ])
            ])
        ])
        let other = JSONValue.object(["a": .string("b")])
        let mine = RecordState(fields: ["x": StampedValue(deep, stamp: stamp)])
        let theirs = RecordState(fields: ["x": StampedValue(other, stamp: stamp)])
        #expect(Wire.problem(value: deep) == nil)
        #expect(mine.merged(with: theirs).state == theirs.merged(with: mine).state)
        #expect(mine.merged(with: theirs).state.fields["x"]?.value == other, "{\"a\":…} sorts after [[…")
    }

    /// A second replica of the account pushing 64 other fields to a record
    /// cannot make it unusable: its change is rejected alone, and every later
    /// push and pull of the account works.
    @Test(arguments: StoreKind.allCases) func aMergeThatWouldWidenARecordTooFarIsRejectedAlone(_ kind: StoreKind) throws
    {
        let fixture = try ServerFixture(kind)
        let first = try fixture.device("alice", "laptop")
        let second = try fixture.device("alice", "desktop")
        var wide: [String: JSONValue] = [:]
        for index in 0..<60 { wide["a\(index)"] = .int(Int64(index)) }
        #expect(try first.push([first.change("k.example", wide)]).status == 200)
        var other: [String: JSONValue] = [:]
        for index in 0..<10 { other["b\(index)"] = .int(Int64(index)) }
        let poisoned = try second.push([
            second.change("k.example", other), second.change("fine.example", ["browser": .string("x")]),
        ])
        #expect(poisoned.status == 200, "\(poisoned.text)")
        let response = try PushResponse(json: try JSONValue.parse(poisoned.text))
        #expect(response.acknowledged == 2 && response.rejected.map(\.sequence) == [1], "\(poisoned.text)")
        #expect(response.rejected.first?.reason.contains("more than 64 fields") == true)
        let records = try second.pullAll().records
        #expect(records["rules/k.example"]?.state.fields.count == 60 && records["rules/fine.example"] != nil)
        try expectServing(fixture, second)
    }

    /// A client that asks first learns of a refusal before sending its body;
    /// one with a valid token gets `100 Continue`, then the answer.
    @Test func expectContinueIsAnswered() throws {
        let fixture = try ServerFixture()
        let device = try fixture.device("alice", "laptop", clientDevice: "d")
        let change = device.change("a.example", ["browser": .string("x")])
        let body = String(decoding: PushRequest(device: "d", from: 1, to: 1, changes: [change]).body(), as: UTF8.self)
        let connection = try RawConnection(port: fixture.port, caFile: fixture.caFile)
        try connection.send(
            "POST /v1/push HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(device.token)\r\nExpect: 100-continue\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
        )
        let interim = try connection.readAll(milliseconds: 500)
        #expect(interim == "HTTP/1.1 100 Continue\r\n\r\n")
        try connection.send(body + "GET /v1/health HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        let answers = try connection.readAll()
        #expect(
            answers.hasPrefix("HTTP/1.1 200 ") && answers.contains(#""acknowledged":1"#)
                && answers.contains(#""status":"ok""#), "\(answers)")
    }

    @Test func headAnswersCarryNoBody() throws {
        let fixture = try ServerFixture()
        let connection = try RawConnection(port: fixture.port, caFile: fixture.caFile)
        try connection.send(
            "HEAD /v1/health HTTP/1.1\r\nHost: a\r\n\r\nGET /v1/health HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
        )
        let answers = try connection.readAll()
        // The HEAD answer's headers are followed directly by the GET answer.
        let parts = answers.components(separatedBy: "HTTP/1.1 200 OK")
        #expect(parts.count == 3, "\(answers)")
        #expect(parts[1].hasSuffix("\r\n\r\n") && parts[1].contains("Content-Length: "), "\(parts[1])")
        #expect(parts[2].contains(#""status":"ok""#))
    }

    /// After an error the server closes without a reset: answers already
    /// written arrive whole, even when the client keeps sending and reads late.
    @Test(arguments: StoreKind.allCases) func answersBeforeAnErrorArriveWhole(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let device = try fixture.device("alice", "laptop", clientDevice: "d")
        var changes: [ChangeRecord] = []
        for index in 0..<400 {
            changes.append(device.change("r\(index).example", ["note": .string(String(repeating: "n", count: 2000))]))
        }
        #expect(try device.push(changes).status == 200)
        let connection = try RawConnection(port: fixture.port, caFile: fixture.caFile)
        let pull = "GET /v1/pull?since=0&limit=400 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(device.token)\r\n\r\n"
        try connection.send(pull + "BROKEN\r\n\r\n" + String(repeating: "x", count: 256 * 1024))
        usleep(300_000) // read late: a reset would have destroyed the unread answer by now
        let answers = try connection.readAll()
        #expect(answers.hasPrefix("HTTP/1.1 200 OK"))
        let pulledRecords = answers.components(separatedBy: #""collection":"rules""#).count - 1
        #expect(pulledRecords == 400, "all 400 records of the first answer arrived (\(answers.utf8.count) bytes)")
        #expect(answers.contains("HTTP/1.1 400 Bad Request"), "and then the error")
        #expect(
            answers.hasSuffix(#"{"error":"bad_request","message":"the request line is not 'METHOD TARGET HTTP/1.1'"}"#),
            "worded as every API error: \(answers.suffix(200))")
    }

    /// What the HTTP layer answers itself is worded as every other error of
    /// the API (docs/protocol.md): a JSON object with a stable code.
    @Test func theHTTPLayersOwnAnswersCarryErrorCodes() throws {
        let fixture = try ServerFixture { configuration in
            configuration.limits.headerReadTimeoutMilliseconds = 300
        }
        let slow = try RawConnection(port: fixture.port, caFile: fixture.caFile)
        try slow.send("GET /v1/health HTTP/1.1\r\nHost: a\r\n")
        let timedOut = try slow.readAll()
        #expect(
            timedOut.hasPrefix("HTTP/1.1 408 ")
                && timedOut.hasSuffix(#"{"error":"timeout","message":"the headers did not arrive in time"}"#),
            "\(timedOut)")
        let expecting = try RawConnection(port: fixture.port, caFile: fixture.caFile)
        let device = try fixture.device("alice", "laptop", clientDevice: "d")
        try expecting.send(
            "POST /v1/push HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(device.token)\r\nExpect: something-else\r\nContent-Length: 2\r\n\r\n"
        )
        let refused = try expecting.readAll()
        #expect(
            refused.hasPrefix("HTTP/1.1 417 ")
                && refused.contains(#"{"error":"bad_request","message":"only 'Expect: 100-continue' is supported"}"#),
            "\(refused)")
        // A reason that quotes the request is escaped, never spliced raw.
        let quoting = try RawConnection(port: fixture.port, caFile: fixture.caFile)
        try quoting.send("POST /v1/health HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \"x\\\r\n\r\n")
        let quoted = try quoting.readAll()
        #expect(
            quoted.hasPrefix("HTTP/1.1 400 ")
                && quoted.hasSuffix(
                    #"{"error":"bad_request","message":"the transfer coding '\"x\\' is not supported (only chunked)"}"#),
            "\(quoted)")
    }

    /// One address cannot hold every slot: past its share, its connections are
    /// answered 503 over TLS, and a client from another address is served.
    @Test func oneAddressCannotHoldEveryConnection() throws {
        let fixture = try ServerFixture { configuration in
            configuration.limits.maxConnectionsPerAddress = 4
        }
        var idle: [RawConnection] = []
        for _ in 0..<4 { idle.append(try RawConnection(port: fixture.port, caFile: fixture.caFile)) }
        for _ in 0..<200 where fixture.server.openConnections < 4 { usleep(10_000) }
        let extra = try RawConnection(port: fixture.port, caFile: fixture.caFile)
        let refused = try extra.readAll()
        #expect(refused.hasPrefix("HTTP/1.1 503 ") && refused.contains("Retry-After: 1"), "\(refused)")
        #expect(refused.hasSuffix(#"{"error":"busy","message":"too many connections; retry later"}"#), "\(refused)")
        // Bare TCP connections that never say hello count too.
        let silent = try Socket.connect(
            to: SocketAddress(host: "127.0.0.1", port: fixture.port), deadline: .after(milliseconds: 1000))
        defer { silent.close() }
        let other = try RawConnection(port: fixture.port, caFile: fixture.caFile, source: "127.0.0.2")
        try other.send("GET /v1/health HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        #expect(try other.readAll().hasPrefix("HTTP/1.1 200 OK"), "another address is served")
        for connection in idle { connection.close() }
    }

    /// TLS 1.3 key exchange is X25519, P-256 or P-384: a client offering only
    /// a finite-field group (ffdhe8192 costs the server ~140× X25519) fails.
    @Test func onlyEllipticCurveKeyExchange() throws {
        let fixture = try ServerFixture()
        func handshake(_ groups: String) -> (status: Int32, output: String) {
            Shell.run(
                "openssl s_client -connect 127.0.0.1:\(fixture.port) -servername localhost -CAfile '\(fixture.caFile)' -tls1_3 -groups \(groups) </dev/null 2>&1",
                timeout: 20)
        }
        let modern = handshake("X25519")
        #expect(modern.status == 0 && modern.output.contains("Verify return code: 0"), "\(modern.output.suffix(400))")
        #expect(handshake("P-384").status == 0)
        let finiteField = handshake("ffdhe8192")
        #expect(
            finiteField.status != 0 && finiteField.output.contains("no peer certificate available"),
            "\(finiteField.output.suffix(400))")
        #expect(modern.output.contains("Server Temp Key: X25519"), "\(modern.output.suffix(600))")
    }

    /// No device moves the time others learn: a stamp 299 s ahead is accepted,
    /// and every answer, to any account, still says the server's wall time.
    @Test(arguments: StoreKind.allCases) func noAccountMovesAnothersClock(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let mallory = try fixture.device("mallory", "m")
        let alice = try fixture.device("alice", "a")
        #expect(
            try mallory.push([mallory.change("x.example", ["browser": .string("x")], skewMilliseconds: 299_000)]).status
                == 200)
        let page = try Wire.read(try alice.pull().text, PullResponse.init(reading:))
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        #expect(
            abs(page.clock.wallMillis - now) < 5_000,
            "the server's clock is its wall clock: \(page.clock.wallMillis - now) ms off")
    }

    /// Store, WAL and backups are the owner's alone whatever the umask.
    @Test func storeFilesArePrivate() throws {
        let directory = try TemporaryDirectory(prefix: "brsyncd-mode")
        defer { directory.remove() }
        let previous = umask(0o022)
        defer { umask(previous) }
        let store = try SyncStore(sqlite: directory.file("store.sqlite"))
        try store.addAccount("alice")
        try store.backup(to: directory.file("backup.sqlite"))
        store.close()
        for name in ["store.sqlite", "store.sqlite-wal", "backup.sqlite"] where access(directory.file(name), F_OK) == 0
        {
            var info = stat()
            #expect(stat(directory.file(name), &info) == 0)
            #expect(info.st_mode & 0o077 == 0, "\(name) is \(String(info.st_mode & 0o777, radix: 8))")
        }
    }
}
