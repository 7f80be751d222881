import Foundation
import HTTP
import JSON
import Logging
import Postgres
import Storage
import SyncCore
import Synchronization
import TestSupport
import Testing

@testable import BrsyncServer
@testable import Net
@testable import ServerStore

/// `GET /v1/watch`: a long poll answered as the account changes, by a push
/// through this brsyncd or, on PostgreSQL, through another one.
@Suite struct WatchTests {
    /// A watch on a connection of its own, on a thread: its status and body.
    static func watch(_ fixture: ServerFixture, token: String, query: String) -> ThreadJob<(Int, JSONValue?)> {
        watch(caFile: fixture.caFile, port: fixture.port, token: token, query: query)
    }

    static func watch(caFile: String, port: UInt16, token: String, query: String) -> ThreadJob<(Int, JSONValue?)> {
        ThreadJob {
            guard let tls = try? TLSContext.client(caFile: caFile) else { return (-1, nil) }
            var configuration = HTTPClient.Configuration(
                address: SocketAddress(host: "127.0.0.1", port: port), serverName: "localhost", tls: tls)
            configuration.readTimeoutMilliseconds = 70_000
            let client = HTTPClient(configuration)
            guard
                let answer = try? client.send(
                    method: "GET", target: "/v1/watch?" + query, headers: ["Authorization": "Bearer \(token)"])
            else { return (-2, nil) }
            return (answer.status, answer.json)
        }
    }

    static func waitUntil(_ condition: () -> Bool) {
        for _ in 0..<2000 where !condition() { usleep(10_000) }
    }

    static func changed(_ body: JSONValue?) -> Bool? {
        guard case .object(let object)? = body, case .bool(let changed)? = object["changed"] else { return nil }
        return changed
    }

    /// A watch at the account's cursor waits (no thread, no slot of its
    /// token: the device still pushes and pulls) until another device's
    /// push, which answers it at once with the new cursor; one behind the
    /// cursor, or of another timeline, is answered at once; one nothing
    /// wakes is answered "no change" when its wait is up.
    @Test(arguments: StoreKind.allCases) func aWatchIsAnsweredByAPush(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let (laptop, desktop) = (try fixture.device("alice", "laptop"), try fixture.device("alice", "desktop"))
        let other = try fixture.device("bob", "phone")
        #expect(try laptop.push([laptop.change("one.example", ["browser": .string("firefox")])]).status == 200)
        let cursor = try desktop.pullAll().cursor
        #expect(cursor > 0)
        let epoch = try #require(
            try desktop.pull(since: cursor).json.flatMap { json -> String? in
                if case .object(let page) = json, case .string(let epoch)? = page["epoch"] { return epoch }
                return nil
            })

        let waiting = Self.watch(fixture, token: desktop.token, query: "since=\(cursor)&epoch=\(epoch)")
        let unrelated = Self.watch(fixture, token: other.token, query: "since=0&wait=2")
        Self.waitUntil { fixture.store.watches.count == 2 }
        #expect(fixture.store.watches.count == 2)
        // The watching device's token still pushes and pulls (two requests at once at most).
        #expect(try desktop.pull(since: cursor).status == 200)
        let started = Date()
        #expect(try laptop.push([laptop.change("two.example", ["browser": .string("chrome")])]).status == 200)
        let (status, body) = waiting.wait()
        #expect(status == 200 && Self.changed(body) == true, "\(String(describing: body))")
        #expect(Date().timeIntervalSince(started) < 1.5, "answered as the push committed")
        if case .object(let object)? = body { #expect(object["cursor"] == .int(cursor + 1)) }
        // Another account's watch was not woken: it ends at its wait, unchanged.
        let (otherStatus, otherBody) = unrelated.wait()
        #expect(otherStatus == 200 && Self.changed(otherBody) == false)
        #expect(fixture.store.watches.count == 0)

        // Behind, or another timeline: at once.
        let behind = Self.watch(fixture, token: desktop.token, query: "since=\(cursor)").wait()
        #expect(Self.changed(behind.1) == true)
        let otherTimeline = Self.watch(
            fixture, token: desktop.token, query: "since=\(cursor + 1)&epoch=0123456789abcdef"
        ).wait()
        #expect(Self.changed(otherTimeline.1) == true)
        // A key the account does not use (it uses none): the client's pull will say what to do.
        let otherKey = Self.watch(
            fixture, token: desktop.token, query: "since=\(cursor + 1)&epoch=\(epoch)&key=0123456789abcdef"
        ).wait()
        #expect(Self.changed(otherKey.1) == true)
        let current = Self.watch(fixture, token: desktop.token, query: "since=\(cursor + 1)&epoch=\(epoch)&wait=1")
            .wait()
        #expect(Self.changed(current.1) == false)
    }

    /// A watch whose wait runs out with nothing woken is answered from
    /// memory, without reading the store again: a change no notification
    /// told of (PostgreSQL written without NOTIFY; on SQLite every commit
    /// of another process wakes the watches, see PullFromMemoryTests) is
    /// not in that answer (the next pull past the memory's lifetime sees
    /// it: PullFromMemoryTests.aChangeBehindTheServersBackIsSeen).
    @Test func aWatchThatRanOutIsAnsweredFromMemory() throws {
        let fixture = try ServerFixture(.postgres)
        let store = try #require(fixture.store.postgres)
        let (laptop, desktop) = (try fixture.device("alice", "laptop"), try fixture.device("alice", "desktop"))
        #expect(try laptop.push([laptop.change("one.example", ["browser": .string("firefox")])]).status == 200)
        let cursor = try desktop.pullAll().cursor
        let waiting = Self.watch(fixture, token: desktop.token, query: "since=\(cursor)&wait=1")
        Self.waitUntil { fixture.store.watches.count == 1 }
        _ = try store.withConnection { try $0.run("UPDATE accounts SET next_seq = next_seq + 1 WHERE name = 'alice'") }
        let (status, body) = waiting.wait()
        #expect(status == 200 && Self.changed(body) == false, "\(String(describing: body))")
        if case .object(let object)? = body {
            #expect(object["cursor"] == .int(cursor) && object["epoch"]?.stringValue?.isEmpty == false)
        }
    }

    /// What lets a watch use the read that authenticated it: a change of
    /// its account heard of after the generation was taken says "read
    /// again", another account's does not; so do a lost notification
    /// (every account) and a generation too old to know about.
    @Test func theHubTellsWhetherAnAccountChangedSinceARead() {
        let hub = WatchHub(maxTracked: 3)
        let before = hub.generation
        #expect(!hub.changed(account: 1, since: before))
        hub.changed(account: 2)
        #expect(!hub.changed(account: 1, since: before) && hub.changed(account: 2, since: before))
        let afterTwo = hub.generation
        #expect(!hub.changed(account: 2, since: afterTwo))
        hub.changedAll()
        #expect(hub.changed(account: 1, since: afterTwo) && hub.changed(account: 7, since: afterTwo))
        let afterAll = hub.generation
        #expect(!hub.changed(account: 1, since: afterAll))
        for account in Int64(10)...13 { hub.changed(account: account) }
        // Past three accounts remembered, what came before is not known: read again.
        #expect(hub.changed(account: 1, since: afterAll))
        let late = hub.generation
        hub.changed(account: 13)
        #expect(hub.changed(account: 13, since: late) && !hub.changed(account: 12, since: late))
    }

    /// Bad requests are refused with the reason; a device keeps at most
    /// four watches (a fifth answers its oldest, so a machine whose old
    /// connection died unseen is never locked out); a device revoked while
    /// it watches is told so.
    @Test func badWatchesAreRefusedAndWatchesAreBounded() throws {
        let fixture = try ServerFixture()
        let device = try fixture.device("alice", "laptop")
        for (query, expected) in [
            ("", 400), ("since=-1", 400), ("since=x", 400), ("since=0&wait=0", 400), ("since=0&wait=56", 400),
            ("since=0&wait=1.5", 400), ("since=0&epoch=", 400), ("since=0&key=nothex", 400),
        ] {
            let (status, body) = Self.watch(fixture, token: device.token, query: query).wait()
            #expect(status == expected, "\(query): \(status) \(String(describing: body))")
        }
        #expect(Self.watch(fixture, token: "brs_nope", query: "since=0").wait().0 == 401)
        #expect(
            try device.client.send(
                method: "POST", target: "/v1/watch?since=0", headers: device.authorization, body: Array("{}".utf8)
            ).status == 400)
        #expect(
            try device.client.send(method: "DELETE", target: "/v1/watch?since=0", headers: device.authorization).status
                == 405)

        // One at a time, as a machine opens them (a token has 2 requests in progress at most).
        let first = Self.watch(fixture, token: device.token, query: "since=0")
        Self.waitUntil { fixture.store.watches.count == 1 }
        var more: [ThreadJob<(Int, JSONValue?)>] = []
        for count in 2...4 {
            more.append(Self.watch(fixture, token: device.token, query: "since=0"))
            Self.waitUntil { fixture.store.watches.count == count }
        }
        more.append(Self.watch(fixture, token: device.token, query: "since=0"))
        let displaced = first.wait()
        #expect(displaced.0 == 200 && Self.changed(displaced.1) == false, "the oldest answered")
        Self.waitUntil { fixture.store.watches.count == 4 }
        #expect(fixture.store.watches.count == 4)
        try fixture.store.revokeDevice(account: "alice", name: "laptop")
        for watch in more {
            let (status, body) = watch.wait()
            #expect(status == 401, "\(String(describing: body))")
        }
    }

    /// One push answers every watch of the account, each once (16 devices);
    /// a new timeline of the account (a rollback another of its devices
    /// reported) answers a watch that named the old one; a watch whose
    /// client goes away mid-wait is forgotten.
    @Test(arguments: StoreKind.allCases) func watchesAreAnsweredOnceAndForgottenWhenTheirClientGoes(
        _ kind: StoreKind
    ) throws {
        let fixture = try ServerFixture(kind)
        let devices = try (0..<16).map { try fixture.device("alice", "machine\($0)") }
        let watches = devices.map { Self.watch(fixture, token: $0.token, query: "since=0&wait=30") }
        Self.waitUntil { fixture.store.watches.count == 16 }
        #expect(fixture.store.watches.count == 16)
        #expect(try devices[0].push([devices[0].change("one.example", ["browser": .string("firefox")])]).status == 200)
        for watch in watches {
            let (status, body) = watch.wait()
            #expect(status == 200 && Self.changed(body) == true)
        }
        #expect(fixture.store.watches.count == 0, "each answered once, none left behind")

        let cursor = try devices[1].pullAll().cursor
        let page = try Wire.read(try devices[1].pull(since: cursor).text, PullResponse.init(reading:))
        let waiting = Self.watch(fixture, token: devices[1].token, query: "since=\(cursor)&epoch=\(page.epoch)&wait=30")
        Self.waitUntil { fixture.store.watches.count == 1 }
        _ = try devices[2].pull(since: 999_999_999) // a cursor past the account: its new timeline
        let (status, body) = waiting.wait()
        #expect(status == 200 && Self.changed(body) == true, "\(String(describing: body))")
        if case .object(let answer)? = body { #expect(answer["epoch"] != .string(page.epoch)) }

        // A client that goes away mid-wait.
        let latest = try devices[3].pullAll().cursor
        let deadline = Deadline.after(milliseconds: 5000)
        let socket = try Socket.connect(to: SocketAddress(host: "127.0.0.1", port: fixture.port), deadline: deadline)
        let stream = try TLSStream.connect(
            socket: socket, context: TLSContext.client(caFile: fixture.caFile), serverName: "localhost",
            deadline: deadline)
        try stream.write(
            Array(
                "GET /v1/watch?since=\(latest) HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(devices[3].token)\r\n\r\n"
                    .utf8), deadline: deadline)
        Self.waitUntil { fixture.store.watches.count == 1 }
        stream.close()
        Self.waitUntil { fixture.store.watches.count == 0 }
        #expect(fixture.store.watches.count == 0)
    }

    /// Past three quarters of the requests in progress, a watch gives way:
    /// answered 503 at once with a `Retry-After` of 1 to 5 s (a herd of
    /// machines watching again is spread), while a pull is still served.
    @Test func aLoadedServerShedsWatchesFirst() throws {
        let directory = try TemporaryDirectory(prefix: "brsync-shed")
        defer { directory.remove() }
        let store = try SyncStore(sqlite: directory.file("store.sqlite"))
        defer { store.close() }
        try store.addAccount("alice")
        let token = try store.addDevice(account: "alice", name: "laptop")
        let load = Atomic<Int>(0)
        let api = SyncAPI(
            store: store, configuration: ServerConfiguration(), metrics: ServerMetrics(), logger: Logger(label: "test"),
            activeRequests: { load.load(ordering: .relaxed) })
        let context = HTTPServer.RequestContext(peer: "127.0.0.1")
        let headers: HTTPHeaders = ["Authorization": "Bearer \(token)"]
        let quiet = api.handle(HTTPRequest(method: "GET", target: "/v1/watch?since=5", headers: headers), context)
        #expect(quiet.status == 200, "a watch behind the account is answered at once")
        quiet.whenWritten?.run()
        load.store(ServerConfiguration().limits.maxActiveRequests * 3 / 4 + 1, ordering: .relaxed)
        let shed = api.handle(HTTPRequest(method: "GET", target: "/v1/watch?since=0", headers: headers), context)
        #expect(shed.status == 503 && shed.later == nil)
        #expect(
            shed.headers.values("Retry-After").count == 1
                && (1...5).contains(Int(shed.headers["Retry-After"] ?? "") ?? 0))
        shed.whenWritten?.run()
        let pull = api.handle(HTTPRequest(method: "GET", target: "/v1/pull?since=0", headers: headers), context)
        #expect(pull.status == 200, "pulls are still served")
        pull.whenWritten?.run()
    }

    /// Two brsyncd on one PostgreSQL database: a push through the first
    /// answers a watch waiting on the second (its `LISTEN` connection).
    @Test func aPushThroughOneServerWakesAWatchOnAnother() throws {
        let cluster = try PostgresCluster.shared()
        let url = try cluster.createDatabase()
        let directory = try TemporaryDirectory(prefix: "brsyncd-watch")
        defer { directory.remove() }
        _ = try TestCertificates(in: directory)
        let first = try SyncStore(postgres: try PostgresConfiguration(url: url, password: cluster.password))
        let second = try SyncStore(postgres: try PostgresConfiguration(url: url, password: cluster.password))
        let (server1, port1) = try InProcessServer.start(store: first, certificates: directory)
        let (server2, port2) = try InProcessServer.start(store: second, certificates: directory)
        defer {
            server1.shutdown()
            server2.shutdown()
        }
        let (firstDialect, secondDialect) = (try #require(first.postgres), try #require(second.postgres))
        Self.waitUntil {
            firstDialect.listening.load(ordering: .relaxed) && secondDialect.listening.load(ordering: .relaxed)
        }
        try first.addAccount("alice")
        let (laptopToken, desktopToken) = (
            try first.addDevice(account: "alice", name: "laptop"),
            try first.addDevice(account: "alice", name: "desktop")
        )
        let laptop = TestDevice(
            client: HTTPClient(
                .init(
                    address: SocketAddress(host: "127.0.0.1", port: port1), serverName: "localhost",
                    tls: try TLSContext.client(caFile: directory.file("ca.pem")))),
            token: laptopToken, deviceID: "laptop")
        let waiting = Self.watch(caFile: directory.file("ca.pem"), port: port2, token: desktopToken, query: "since=0")
        Self.waitUntil { second.watches.count == 1 }
        #expect(second.watches.count == 1)
        let started = Date()
        #expect(try laptop.push([laptop.change("one.example", ["browser": .string("firefox")])]).status == 200)
        let (status, body) = waiting.wait()
        #expect(status == 200 && Self.changed(body) == true, "\(String(describing: body))")
        #expect(Date().timeIntervalSince(started) < 2, "woken through NOTIFY, not at its wait")
    }
}
