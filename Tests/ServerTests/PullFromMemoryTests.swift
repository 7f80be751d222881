import Foundation
import HTTP
import JSON
import Logging
import Storage
import SyncCore
import SystemServices
import TestSupport
import Testing

@testable import BrsyncServer
@testable import Net
@testable import ServerStore

/// A no-change pull is answered from memory (``Store/TokenCache``) while
/// nothing was heard of the account: every change this process makes or
/// hears of is seen by the very next pull, and one nothing announced within
/// the cache's lifetime.
@Suite struct PullFromMemoryTests {
    static func page(_ response: HTTPResponseParser.ParsedResponse) throws -> PullResponse {
        try Wire.read(response.text, PullResponse.init(reading:))
    }

    /// Pushes, revocations and tokens issued again are seen at once by a
    /// device whose no-change pulls come from memory.
    @Test(arguments: StoreKind.allCases) func everyChangeIsSeenByTheNextPull(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let (laptop, desktop) = (try fixture.device("alice", "laptop"), try fixture.device("alice", "desktop"))
        #expect(try laptop.push([laptop.change("one.example", ["browser": .string("firefox")])]).status == 200)
        let cursor = try desktop.pullAll().cursor
        for _ in 0..<3 {
            let again = try Self.page(try desktop.pull(since: cursor))
            #expect(again.changes.isEmpty && again.next == cursor && !again.more)
        }
        // A push: the next pull has it.
        #expect(try laptop.push([laptop.change("two.example", ["browser": .string("chrome")])]).status == 200)
        let moved = try Self.page(try desktop.pull(since: cursor))
        #expect(moved.changes.map(\.key) == ["two.example"] && moved.next == cursor + 1)
        for _ in 0..<3 { #expect(try Self.page(try desktop.pull(since: cursor + 1)).changes.isEmpty) }
        // A pull behind, or of another timeline, is read from the store as ever.
        #expect(try Self.page(try desktop.pull(since: cursor)).changes.count == 1)
        // Revoked: refused at once.
        try fixture.store.revokeDevice(account: "alice", name: "desktop")
        let revoked = try desktop.pull(since: cursor + 1)
        #expect(revoked.status == 403 || revoked.status == 401, "\(revoked.status) \(revoked.text)")
        #expect(revoked.text.contains("revoked"), "\(revoked.text)")
        // A token issued again: the old one is refused at once.
        for _ in 0..<2 { #expect(try laptop.pull(since: cursor + 1).status == 200) }
        _ = try fixture.store.reissueToken(account: "alice", device: "laptop")
        #expect(try laptop.pull(since: cursor + 1).status == 401)
    }

    /// A change made behind the server's back: on SQLite (another
    /// process writing the store file, as an administration command does)
    /// the WAL shows it and the next pull reads the store; on PostgreSQL a
    /// write that does not `NOTIFY` (every brsyncd and administration
    /// command does) is seen once the remembered device is older than its
    /// lifetime, and until then the pull is answered from memory.
    @Test(arguments: StoreKind.allCases) func aChangeBehindTheServersBackIsSeen(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let (laptop, desktop) = (try fixture.device("alice", "laptop"), try fixture.device("alice", "desktop"))
        #expect(try laptop.push([laptop.change("one.example", ["browser": .string("firefox")])]).status == 200)
        let remembered = SystemServices.Clock.monotonicMillis()
        let cursor = try desktop.pullAll().cursor
        #expect(try Self.page(try desktop.pull(since: cursor)).next == cursor)
        let behindItsBack = "UPDATE accounts SET next_seq = next_seq + 1 WHERE name = 'alice'"
        switch fixture.store.postgres {
        case let store?:
            _ = try store.withConnection { try $0.run(behindItsBack) }
            let next = try Self.page(try desktop.pull(since: cursor)).next
            // Unless this (busy) machine took longer than the memory's lifetime to get here.
            let young = SystemServices.Clock.monotonicMillis() - remembered < TokenCache.lifetimeMillis
            #expect(next == cursor || !young, "answered from memory")
            usleep(UInt32(TokenCache.lifetimeMillis + 300) * 1000)
        case nil:
            try Database(path: fixture.directory.file("store.sqlite")).run(behindItsBack)
        }
        #expect(try Self.page(try desktop.pull(since: cursor)).next == cursor + 1, "read from the store")
    }

    /// A watch arriving is authenticated from memory too (a machine's
    /// watches come every minute or so): a change behind the server's back
    /// that nothing announced (PostgreSQL without `NOTIFY`) is not seen by
    /// it, one SQLite's WAL shows is; a revocation, announced, is seen at once.
    @Test(arguments: StoreKind.allCases) func aWatchArrivingIsAuthenticatedFromMemory(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let (laptop, desktop) = (try fixture.device("alice", "laptop"), try fixture.device("alice", "desktop"))
        #expect(try laptop.push([laptop.change("one.example", ["browser": .string("firefox")])]).status == 200)
        let cursor = try desktop.pullAll().cursor
        #expect(
            WatchTests.changed(
                WatchTests.watch(fixture, token: desktop.token, query: "since=\(cursor)&wait=1").wait().1) == false)
        let behindItsBack = "UPDATE accounts SET next_seq = next_seq + 1 WHERE name = 'alice'"
        let announced: Bool
        switch fixture.store.postgres {
        case let store?:
            _ = try store.withConnection { try $0.run(behindItsBack) }
            announced = false
        case nil:
            try Database(path: fixture.directory.file("store.sqlite")).run(behindItsBack)
            announced = true
        }
        #expect(
            WatchTests.changed(
                WatchTests.watch(fixture, token: desktop.token, query: "since=\(cursor)&wait=1").wait().1) == announced)
        try fixture.store.revokeDevice(account: "alice", name: "desktop")
        #expect(WatchTests.watch(fixture, token: desktop.token, query: "since=\(cursor)&wait=1").wait().0 == 401)
    }

    /// SQLite has no NOTIFY: another process's commit while watches wait
    /// (an administration command revoking a device, a backup restored into
    /// the live file, here made with the sqlite3 CLI) wakes them within a
    /// quarter second or so, and the store's new epoch is answered at once
    /// after it, not the one this process held.
    @Test func anOutsideCommitWakesWaitingWatchesAndReloadsTheEpoch() throws {
        let fixture = try ServerFixture(.sqlite)
        let (laptop, desktop) = (try fixture.device("alice", "laptop"), try fixture.device("alice", "desktop"))
        #expect(try laptop.push([laptop.change("one.example", ["browser": .string("firefox")])]).status == 200)
        let cursor = try desktop.pullAll().cursor
        let path = fixture.directory.file("store.sqlite")
        // A waiting watch, and a revocation by another connection (another process's commit, as far as the counter tells).
        let waiting = WatchTests.watch(fixture, token: desktop.token, query: "since=\(cursor)&wait=20")
        usleep(300_000)
        let started = Date()
        try Database(path: path).run("UPDATE devices SET revoked = 1 WHERE name = 'desktop'")
        #expect(waiting.wait().0 == 401, "the revoked device's watch was told at once")
        #expect(Date().timeIntervalSince(started) < 5, "woken, not answered at the end of its wait")
        // The store's epoch changed behind its back (a restore gives the copy a new one).
        let before = fixture.store.epoch
        let timeline = try #require(
            try laptop.pull(since: cursor).json.flatMap { json -> String? in
                if case .object(let page) = json, case .string(let epoch)? = page["epoch"] { return epoch }
                return nil
            })
        let laptopWatch = WatchTests.watch(
            fixture, token: laptop.token, query: "since=\(cursor)&epoch=\(timeline)&wait=20")
        usleep(300_000)
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3") {
            let cli = try ProcessRunner.run(
                "/usr/bin/sqlite3", [path, "UPDATE meta SET value = 'restored0123abcd' WHERE key = 'epoch';"])
            #expect(cli.status == 0, "\(cli)")
        } else {
            try Database(path: path).run("UPDATE meta SET value = 'restored0123abcd' WHERE key = 'epoch'")
        }
        let (status, body) = laptopWatch.wait()
        #expect(status == 200 && WatchTests.changed(body) == true, "\(String(describing: body))")
        #expect(
            fixture.store.epoch != before && fixture.store.epoch.hasPrefix("restored0123abcd"), "\(fixture.store.epoch)"
        )
    }

    /// One process serves an SQLite store: a second `serve` of the same file
    /// is refused, naming the first; once it stops, the file can be served.
    @Test func aSecondServerOfOneSQLiteFileIsRefused() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("store.sqlite")
        let first = try SyncStore(sqlite: path, connections: 1)
        try first.startListening()
        let second = try SyncStore(sqlite: path, connections: 1)
        #expect {
            try second.startListening()
        } throws: { error in
            "\(error)".contains("another brsyncd (process \(getpid())) serves") && "\(error)".contains("PostgreSQL")
        }
        first.close()
        try second.startListening()
        second.close()
    }

    /// The event loops answer a no-change pull from memory alone
    /// (``SyncStore/pullFromMemory(token:since:limit:clientDevice:origin:clientProtocol:clientKeyID:clientSigningKey:)``):
    /// the same answer a thread makes from the store, but for the clock;
    /// nothing for a cursor behind, a token not seen, a join secret or a
    /// revoked device, which go to a thread.
    @Test(arguments: StoreKind.allCases) func theLoopsAnswerIsTheStoresAnswer(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        // Both speak this build's protocol, as the loop's pull below does (a
        // device whose protocol changed is first noted by a thread).
        let (laptop, desktop) = (
            try fixture.device("alice", "laptop", protocol: Wire.protocolVersion),
            try fixture.device("alice", "desktop", protocol: Wire.protocolVersion)
        )
        #expect(try laptop.push([laptop.change("one.example", ["browser": .string("firefox")])]).status == 200)
        let cursor = try desktop.pullAll().cursor
        func fromMemory(_ token: String, since: Int64) -> [UInt8]? {
            fixture.store.pullFromMemory(
                token: token, since: since, limit: 100, clientDevice: nil, origin: CursorOrigin(),
                clientProtocol: Wire.protocolVersion, clientKeyID: nil, clientSigningKey: nil)
        }
        func withoutClock(_ text: String) throws -> JSONValue {
            guard case .object(var object) = try JSONValue.parse(text) else { return .null }
            object["clock"] = nil
            return .object(object)
        }
        // The first pull at the cursor notes it (a write: on SQLite the WAL
        // moves, so the one after reads the store again); then memory holds.
        _ = try desktop.pull(since: cursor)
        let fromStore = try desktop.pull(since: cursor)
        let memory = try #require(fromMemory(desktop.token, since: cursor))
        let expected = try withoutClock(fromStore.text)
        let made = try withoutClock(String(decoding: memory, as: UTF8.self))
        #expect(made == expected)
        let overHTTP = try desktop.pull(since: cursor)
        let answered = try withoutClock(overHTTP.text)
        #expect(overHTTP.status == 200 && answered == expected)
        // Headers as a thread's answer has them: chosen by Accept-Encoding.
        #expect(fromStore.headers["Vary"] == "Accept-Encoding" && overHTTP.headers["Vary"] == "Accept-Encoding")
        #expect(fromMemory(desktop.token, since: cursor - 1) == nil, "a cursor behind reads the store")
        #expect(fromMemory("not-a-token", since: cursor) == nil)
        #expect(fromMemory(laptop.token + "x", since: cursor) == nil)
        try fixture.store.revokeDevice(account: "alice", name: "desktop")
        #expect(fromMemory(desktop.token, since: cursor) == nil, "a revoked device is refused by a thread")
        let refused = try desktop.pull(since: cursor)
        #expect(refused.status == 403 || refused.status == 401, "\(refused.status) \(refused.text)")
    }

    /// A watch arriving while its device is remembered starts waiting on
    /// the event loop (``SyncAPI/quick(_:_:)`` gives a later answer); one
    /// not remembered, a revoked one, or one with bad parameters goes to a
    /// thread (nil), which reads the store or refuses it.
    @Test(arguments: StoreKind.allCases) func aRememberedWatchWaitsOnTheLoop(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let (laptop, desktop) = (try fixture.device("alice", "laptop"), try fixture.device("alice", "desktop"))
        #expect(try laptop.push([laptop.change("one.example", ["browser": .string("firefox")])]).status == 200)
        let api = SyncAPI(
            store: fixture.store, configuration: ServerConfiguration(), metrics: ServerMetrics(),
            logger: Logger(label: "test"))
        func watch(_ token: String, _ query: String) -> HTTPResponse? {
            api.quick(
                HTTPRequest(method: "GET", target: "/v1/watch?" + query, headers: ["Authorization": "Bearer \(token)"]),
                HTTPServer.RequestContext(peer: "test"))
        }
        #expect(watch(desktop.token, "since=0") == nil, "not remembered yet: a thread reads the store")
        let cursor = try desktop.pullAll().cursor
        // (The first pull at the cursor notes it: on SQLite a write, which the next one reads past.)
        for _ in 0..<2 { _ = try desktop.pull(since: cursor) }
        let waiting = try #require(watch(desktop.token, "since=\(cursor)&wait=5"))
        let later = try #require(waiting.later, "it waits")
        #expect(fixture.store.watches.count == 1)
        later.end()
        #expect(fixture.store.watches.count == 0)
        #expect(watch(desktop.token, "since=x") == nil, "refused by a thread")
        #expect(watch(desktop.token + "x", "since=\(cursor)") == nil)
        try fixture.store.revokeDevice(account: "alice", name: "desktop")
        #expect(watch(desktop.token, "since=\(cursor)") == nil)
    }
}
