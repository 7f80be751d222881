import Foundation
import HTTP
import JSON
import Model
import Net
import SyncCore
import SystemServices
import TestSupport
import Testing

@testable import BrsyncServer
@testable import ServerStore

@Suite struct SyncAPITests {
    @Test(arguments: StoreKind.allCases) func authenticationIsRequiredAndChecked(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let device = try fixture.device("alice", "laptop")
        let anonymous = try device.client.send(method: "GET", target: "/v1/pull")
        #expect(anonymous.status == 401 && anonymous.errorCode == .unauthorized)
        #expect(anonymous.headers["WWW-Authenticate"]?.hasPrefix("Bearer") == true)
        let wrong = try device.client.send(
            method: "GET", target: "/v1/pull", headers: ["Authorization": "Bearer brs_nope"])
        #expect(wrong.status == 401 && wrong.errorCode == .unauthorized)
        let basic = try device.client.send(method: "GET", target: "/v1/pull", headers: ["Authorization": "Basic YTpi"])
        #expect(basic.status == 401)
        #expect(try device.pull().status == 200)
        try fixture.store.revokeDevice(account: "alice", name: "laptop")
        let revoked = try device.pull()
        #expect(revoked.status == 401 && revoked.errorCode == .revoked)
        #expect(try device.push([device.change("a.com", ["browser": .string("x")])]).status == 401)
    }

    @Test(arguments: StoreKind.allCases) func accountsAreIsolated(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let alice = try fixture.device("alice", "laptop")
        let bob = try fixture.device("bob", "laptop")
        #expect(try alice.push([alice.change("github.com", ["browser": .string("firefox")])]).status == 200)
        #expect(try bob.pullAll().records.isEmpty, "bob sees nothing of alice's")
        #expect(try bob.push([bob.change("github.com", ["browser": .string("chrome")])]).status == 200)
        let aliceView = try alice.pullAll().records
        #expect(aliceView["rules/github.com"]?.state.values["browser"] == .string("firefox"))
        #expect(try bob.pullAll().records["rules/github.com"]?.state.values["browser"] == .string("chrome"))
    }

    /// One push editing a record twice (an offline machine's log): the second
    /// edit merges into the first, read back within the push.
    @Test(arguments: StoreKind.allCases) func oneRecordEditedTwiceInOnePush(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let device = try fixture.device("alice", "laptop")
        let first = device.change("twice.example", ["browser": .string("firefox"), "priority": .int(1)])
        let second = device.change(
            "twice.example", ["browser": .string("chrome")], versions: VersionVector([device.deviceID: 2]))
        let others = (0..<70).map { device.change("o\($0).example", ["browser": .string("b")]) }
        #expect(try device.push([first, second] + others).status == 200)
        let stored = try #require(try device.pullAll().records["rules/twice.example"])
        #expect(stored.state.fields["browser"]?.value == .string("chrome"))
        #expect(stored.state.fields["priority"]?.value == .int(1))
        #expect(stored.state.versions == VersionVector([device.deviceID: 2]))
    }

    @Test(arguments: StoreKind.allCases) func aRetriedPushIsAcknowledgedAndNotAppliedTwice(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let device = try fixture.device("alice", "laptop")
        let changes = [
            device.change("a.com", ["browser": .string("x")]), device.change("b.com", ["browser": .string("y")]),
            device.change("c.com", ["browser": .string("z")]),
        ]
        let first = try PushResponse(json: try #require(device.push(changes).json))
        #expect(first.acknowledged == 3 && first.applied == 3)
        let before = try device.pullAll()
        let retry = try PushResponse(json: try #require(device.push(changes).json))
        #expect(retry.acknowledged == 3 && retry.applied == 0)
        let after = try device.pullAll()
        #expect(after.cursor == before.cursor, "no new sequence numbers")
        // An overlapping push applies only what is new.
        let more = [device.change("d.com", ["browser": .string("w")])]
        let overlap = try PushResponse(json: try #require(device.push(changes + more).json))
        #expect(overlap.acknowledged == 4 && overlap.applied == 1)
    }

    /// Edits of records the store does not have (a copied home's changes,
    /// renumbered under a new id) are named all at once: the push is
    /// acknowledged up to the first, nothing after it applies, and the
    /// client can relay every such record in one go instead of one request
    /// a record.
    @Test(arguments: StoreKind.allCases) func everyEditOfARecordTheServerLacksIsNamedInOneAnswer(
        _ kind: StoreKind
    ) throws {
        let fixture = try ServerFixture(kind)
        let device = try fixture.device("alice", "laptop")
        let elsewhere = VersionVector(["0123456789abcdef": 3, device.deviceID: 1])
        let changes =
            [device.change("new.example", ["browser": .string("firefox")])]
            + (0..<30).map { device.change("lacked\($0).example", ["browser": .string("chrome")], versions: elsewhere) }
            + [device.change("after.example", ["browser": .string("firefox")])]
        let answer = try PushResponse(json: try #require(device.push(changes).json))
        #expect(answer.acknowledged == 1 && answer.applied == 1)
        #expect(answer.needed == Array(2...31), "\(answer.needed)")
        let stored = try device.pullAll().records
        #expect(
            stored["rules/new.example"] != nil && stored["rules/after.example"] == nil,
            "nothing after the first is applied")
    }

    @Test(arguments: StoreKind.allCases) func aGapIsRefused(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let device = try fixture.device("alice", "laptop")
        #expect(try device.push([device.change("a.com", ["browser": .string("x")])]).status == 200)
        device.nextSequence = 5
        let gap = try device.push([device.change("e.com", ["browser": .string("x")])])
        #expect(gap.status == 409 && gap.errorCode == .gap)
        #expect(gap.text.contains("expects 2"))
        #expect(try device.pullAll().records.count == 1)
    }

    @Test(arguments: StoreKind.allCases) func pullPagesInSequenceOrder(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let device = try fixture.device("alice", "laptop")
        let changes = (0..<25).map { device.change("site\($0).example", ["browser": .string("b\($0)")]) }
        #expect(try device.push(changes).status == 200)
        var cursor: Int64 = 0
        var seen: [Int64] = []
        var pages = 0
        while true {
            let page = try Wire.read(try device.pull(since: cursor, limit: 10).text, PullResponse.init(reading:))
            seen += page.changes.map(\.sequence)
            cursor = page.next
            pages += 1
            if !page.more { break }
        }
        #expect(pages == 3)
        #expect(seen == Array(1...25))
        let empty = try Wire.read(try device.pull(since: cursor).text, PullResponse.init(reading:))
        #expect(empty.changes.isEmpty && !empty.more && empty.next == cursor)
    }

    @Test(arguments: StoreKind.allCases) func stampsTooFarAheadAreRefusedWithTheOffset(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let device = try fixture.device("alice", "laptop")
        let response = try device.push([device.change("a.com", ["browser": .string("x")], skewMilliseconds: 600_000)])
        #expect(response.status == 422 && response.errorCode == .clockSkew)
        #expect(response.text.contains("600") || response.text.contains("599"))
        #expect(try device.pullAll().records.isEmpty)
    }

    /// No run of pushes or relays walks an account's clock forward: each is
    /// measured from the server's clock, not from the newest stamp taken
    /// (which may sit at the limit); a stamp at that newest wall time (an
    /// edit made after seeing it) is still taken.
    @Test(arguments: StoreKind.allCases) func pushesCannotWalkTheClockForward(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let device = try fixture.device("alice", "laptop")
        let minute: Int64 = 60_000
        #expect(
            try device.push([device.change("a.com", ["browser": .string("x")], skewMilliseconds: 4 * minute)]).status
                == 200)
        let walked = try device.push([device.change("b.com", ["browser": .string("x")], skewMilliseconds: 8 * minute)])
        #expect(walked.status == 422 && walked.errorCode == .clockSkew, "\(walked.text)")
        // The device's clock (an HLC) stays at the newest wall time it saw: taken.
        device.nextSequence = 2
        var seen = device.change("c.com", ["browser": .string("x")], skewMilliseconds: 4 * minute)
        let newest = try device.pullAll().records["rules/a.com"]!.state.fields["browser"]!.stamp
        seen.state.fields["browser"] = StampedValue(
            .string("x"),
            stamp: HLCTimestamp(wallMillis: newest.wallMillis, counter: newest.counter + 1, device: device.deviceID))
        seen.state.fields = seen.state.fields.filter { $0.key == "browser" }
        #expect(try device.push([seen]).status == 200)
        // Relays too: 23 hours ahead is taken (a fast clock's values after a restore), 46 are not.
        let hour: Int64 = 3_600_000
        for (key, skew, status) in [("relay1.com", 23 * hour, 200), ("relay2.com", 46 * hour, 200)] {
            let relay = RelayRequest(records: [device.change(key, ["browser": .string("x")], skewMilliseconds: skew)])
            let answer = try device.post("/v1/relay", body: relay.body())
            let rejected = answer.json.flatMap { try? PushResponse(json: $0) }?.rejected ?? []
            #expect(answer.status == status && rejected.isEmpty == (skew < 24 * hour), "\(key): \(answer.text)")
        }
    }

    @Test(arguments: StoreKind.allCases) func devicesPushOnlyTheirOwnStampsWithTheirOwnToken(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let device = try fixture.device("alice", "laptop")
        #expect(try device.push([device.change("a.com", ["browser": .string("x")])]).status == 200)
        // The same token from a second replica (a copied home that took a new
        // device id) has a change stream of its own, numbered from 1.
        let copy = TestDevice(client: device.client, token: device.token, deviceID: "other-replica")
        copy.nextSequence = 2
        let skipped = try copy.push([copy.change("b.com", ["browser": .string("y")])])
        #expect(
            skipped.status == 409 && skipped.errorCode == .gap && skipped.text.contains(#""acknowledged":0"#),
            "\(skipped.text)")
        copy.nextSequence = 1
        #expect(try copy.push([copy.change("b.com", ["browser": .string("y")])]).status == 200)
        // A stamp of another device inside a push is refused.
        var forged = device.change("c.com", ["browser": .string("z")])
        forged.state.fields["browser"]?.stamp = HLCTimestamp(wallMillis: 1, counter: 0, device: "someone-else")
        let foreign = try device.push([forged])
        #expect(foreign.status == 422 && foreign.errorCode == .foreignStamp)
    }

    @Test(arguments: StoreKind.allCases) func concurrentEditsMergeFieldByFieldAndTheLoserLearnsTheWinner(
        _ kind: StoreKind
    ) throws {
        let fixture = try ServerFixture(kind)
        let laptop = try fixture.device("alice", "laptop")
        let desktop = try fixture.device("alice", "desktop")
        let early = laptop.change("github.com", ["browser": .string("firefox"), "priority": .int(1)])
        usleep(5_000)
        let late = desktop.change("github.com", ["browser": .string("chrome")])
        #expect(try desktop.push([late]).status == 200)
        let response = try PushResponse(json: try #require(laptop.push([early]).json))
        #expect(response.lost.map(\.field) == ["browser"])
        #expect(response.lost.first?.winner.value == .string("chrome"))
        #expect(response.lost.first?.lost.value == .string("firefox"))
        let record = try #require(try laptop.pullAll().records["rules/github.com"])
        #expect(record.state.values == ["browser": .string("chrome"), "priority": .int(1)])
        #expect(record.state.versions == VersionVector(["alice-laptop": 1, "alice-desktop": 1]))
        #expect(response.clock > late.state.fields["browser"]!.stamp, "the server's clock moved past what it saw")
    }

    @Test(arguments: StoreKind.allCases) func badRequestsGetClearErrors(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let device = try fixture.device("alice", "laptop")
        let cases: [(String, String)] = [
            ("not json", "not JSON"),
            ("[]", "must be a JSON object"),
            (#"{"device":"d","from":1,"to":2,"changes":[]}"#, "is not the 0 change(s) sent"),
            (#"{"device":"d","from":1,"to":9223372036854775807,"changes":[]}"#, "is not the 0 change(s) sent"),
            (#"{"device":"d","from":1,"to":500000000,"changes":[]}"#, "is not the 0 change(s) sent"),
            (
                #"{"device":"d","from":2,"to":2,"changes":[{"seq":1,"collection":"rules","key":"k","fields":{},"versions":{}}]}"#,
                "numbered 2 to 2"
            ),
            (#"{"device":"d","from":0,"to":0,"changes":[]}"#, "1 <= from <= to"),
            (
                #"{"device":"d","from":1,"to":1,"changes":[{"seq":1,"collection":"tabs","key":"k","fields":{},"versions":{}}]}"#,
                "browsers, rules or settings"
            ),
            (
                #"{"device":"d","from":1,"to":1,"changes":[{"seq":1,"collection":"rules","key":"k","fields":{"a":{"v":1,"s":"bad"}},"versions":{}}]}"#,
                "HLC stamp"
            ),
        ]
        for (body, message) in cases {
            let response = try device.client.send(
                method: "POST", target: "/v1/push", headers: device.authorization, body: Array(body.utf8))
            #expect(response.status == 400 && response.errorCode == .badRequest, "\(body)")
            #expect(response.text.contains(message), "\(response.text)")
        }
        #expect(
            try device.client.send(method: "GET", target: "/v1/pull?since=-1", headers: device.authorization).status
                == 400)
        #expect(
            try device.client.send(method: "GET", target: "/v1/pull?limit=0", headers: device.authorization).status
                == 400)
        // 405 names what the endpoint takes (RFC 9110 §15.5.6), on the head and on the whole request.
        let wrongMethod = try device.client.send(method: "GET", target: "/v1/push", headers: device.authorization)
        #expect(wrongMethod.status == 405 && wrongMethod.headers["Allow"] == "POST", "\(wrongMethod.headers)")
        let wrongWithBody = try device.client.send(
            method: "PUT", target: "/v1/relay", headers: device.authorization, body: Array("{}".utf8))
        #expect(wrongWithBody.status == 405 && wrongWithBody.headers["Allow"] == "POST", "\(wrongWithBody.headers)")
        let health = try device.client.send(method: "DELETE", target: "/v1/health")
        #expect(health.status == 405 && health.headers["Allow"] == "GET, HEAD", "\(health.headers)")
        #expect(try device.client.send(method: "GET", target: "/nope").status == 404)
    }

    /// A value one byte over the limit: its change is rejected alone.
    static let overALimit = JSONValue.string(String(repeating: "x", count: Wire.maxValueBytes + 1))

    /// Three changes, the second over a limit.
    static func secondOverALimit(_ device: TestDevice) -> [ChangeRecord] {
        [
            device.change("a.example", ["browser": .string("firefox")]),
            device.change("b.example", ["browser": overALimit]),
            device.change("c.example", ["browser": .string("chromium")]),
        ]
    }

    /// A change that is well formed but over a limit (a value, a key, a
    /// name, a version vector) is rejected alone: the rest of its push
    /// applies, its number counts as pushed, and the device's chain goes on
    /// through it, so the device is never stuck behind it and a copied home
    /// is still told apart. A relay rejects such a record alone too.
    @Test(arguments: StoreKind.allCases) func aChangeOverALimitIsRejectedAloneAndTheChainGoesOn(
        _ kind: StoreKind
    ) throws {
        let fixture = try ServerFixture(kind)
        let device = try fixture.device("alice", "laptop")
        let batch = Self.secondOverALimit(device)
        let answer = try device.push(batch)
        let response = try PushResponse(json: try JSONValue.parse(answer.text))
        #expect(
            answer.status == 200 && response.acknowledged == 3 && response.applied == 2, "\(answer.text.prefix(300))")
        #expect(response.rejected.map(\.sequence) == [2] && response.rejected.map(\.key) == ["b.example"])
        #expect(response.rejected.first?.reason == #"field "browser" of change 2: a value is larger than 65536 bytes"#)
        #expect(response.acknowledgedDigest == device.chains[3], "the chain goes on through the rejected change")
        // A retry is the same changes: acknowledged, nothing applied again.
        let retried = try PushResponse(
            json: try JSONValue.parse(
                try device.post(
                    "/v1/push",
                    body: PushRequest(
                        device: device.deviceID, from: 1, to: 3, changes: batch
                    ).body()
                ).text))
        // It is told the refusal again: a client whose first answer was lost
        // learns which of its changes were never applied.
        #expect(retried.acknowledged == 3 && retried.applied == 0 && retried.rejected == response.rejected)
        // Another change 2 (a copied home) is still told apart, over a limit or not.
        var other = batch
        other[1].state.fields["browser"]?.value = .string(String(repeating: "y", count: Wire.maxValueBytes + 1))
        let copied = try device.post(
            "/v1/push", body: PushRequest(device: device.deviceID, from: 1, to: 3, changes: other).body())
        #expect(copied.status == 409 && copied.errorCode == .diverged, "\(copied.text.prefix(300))")
        // The device goes on from its own chain.
        let next = try device.push([device.change("d.example", ["browser": .string("firefox")])])
        #expect(next.status == 200, "\(next.text)")
        let records = try device.pullAll().records
        #expect(Set(records.keys) == ["rules/a.example", "rules/c.example", "rules/d.example"])
        // A record's fields as text are bounded as a whole (a page holds the budget and one record).
        var large: [String: JSONValue] = [:]
        for index in 0..<9 { large["f\(index)"] = .string(String(repeating: "z", count: 60_000)) }
        let tooLarge = try PushResponse(
            json: try JSONValue.parse(try device.push([device.change("large.example", large)]).text))
        #expect(tooLarge.rejected.first?.reason.contains("larger than 512 KiB") == true, "\(tooLarge)")
        // A relay takes the rest and rejects the record over a limit by itself.
        let relay = RelayRequest(records: [
            device.change("e.example", ["browser": .string("x")]),
            device.change(String(repeating: "k", count: 3000), ["browser": .string("x")]),
        ])
        let relayed = try device.post("/v1/relay", body: relay.body())
        let relayAnswer = try PushResponse(json: try JSONValue.parse(relayed.text))
        #expect(
            relayed.status == 200 && relayAnswer.applied == 1
                && relayAnswer.rejected.first?.reason.contains("a key must be 1 to 2048 bytes") == true,
            "\(relayed.text.prefix(300))")
    }

    /// The server keeps a push's refusals and names them in every answer to
    /// a push that covers them: a retry of the whole batch, a retry that
    /// overlaps it and goes on, and not once its stream is
    /// ``Store/refusalsKept`` changes past them. Without this a client whose
    /// answer was lost would count a refused change as applied.
    @Test(arguments: StoreKind.allCases) func refusalsAreToldAgainOnRetriesUntilFarBehind(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let device = try fixture.device("alice", "laptop")
        let huge = Self.overALimit
        let batch = Self.secondOverALimit(device)
        let first = try PushResponse(json: try JSONValue.parse(try device.push(batch).text))
        #expect(first.rejected.map(\.sequence) == [2])
        func answer(_ changes: [ChangeRecord], base: String? = nil) throws -> PushResponse {
            let sent = try device.post(
                "/v1/push",
                body: PushRequest(
                    device: device.deviceID, from: changes[0].sequence, to: changes[changes.count - 1].sequence,
                    changes: changes, base: base ?? device.chains[changes[0].sequence - 1]
                ).body())
            #expect(sent.status == 200, "\(sent.text.prefix(300))")
            return try PushResponse(json: try JSONValue.parse(sent.text))
        }
        // A retry that overlaps and goes on: the old refusal, then the new one.
        let more = [
            device.change("d.example", ["browser": .string("x")]), device.change("e.example", ["browser": huge]),
        ]
        let overlapping = try answer(batch + more)
        #expect(overlapping.acknowledged == 5 && overlapping.applied == 1)
        #expect(
            overlapping.rejected.map(\.sequence) == [2, 5]
                && overlapping.rejected.map(\.key) == ["b.example", "e.example"])
        #expect(overlapping.rejected.first == first.rejected.first, "the refusal is told as it was")
        // A retry of the later part only names the refusals it covers.
        #expect(try answer(more).rejected.map(\.sequence) == [5])
        #expect(try answer(Array(batch[2...])).rejected.isEmpty)
        // Far behind the stream, refusals are forgotten: kept through
        // refusalsKept changes past them, not one more.
        let filler = Int(Store.refusalsKept) - 4
        var sent = 0
        while sent < filler {
            let count = min(1_000, filler - sent)
            let part = (0..<count).map { device.change("f\(sent + $0).example", ["browser": .string("b")]) }
            #expect(try device.push(part).status == 200)
            sent += count
        }
        #expect(device.nextSequence - 1 == Store.refusalsKept + 1)
        #expect(try answer(batch).rejected.map(\.sequence) == [2], "kept while the stream is refusalsKept past it")
        #expect(try answer(more).rejected.map(\.sequence) == [5])
        let last = try PushResponse(
            json: try JSONValue.parse(try device.push([device.change("g.example", ["browser": .string("b")])]).text))
        #expect(try answer(batch).rejected.isEmpty, "forgotten one change later")
        #expect(try answer(more).rejected.map(\.sequence) == [5])
        // A refused key holding any character (a NUL, here) is told again as it came.
        let odd = [device.change("nul\u{0}key.example", ["browser": .string("b")])]
        let oddFirst = try answer(odd, base: last.acknowledgedDigest)
        #expect(oddFirst.rejected.map(\.key) == ["nul\u{0}key.example"], "\(oddFirst)")
        #expect(try answer(odd, base: last.acknowledgedDigest).rejected == oddFirst.rejected)
    }

    /// Many small edits that lose to one large record make an answer that
    /// lists the values they lost within a budget (the rest counted), never
    /// one that repeats the large winner for each: a 300-change push of a few
    /// bytes each does not make a 140 MB answer.
    @Test(arguments: StoreKind.allCases) func lostValuesAreListedWithinABudget(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let owner = try fixture.device("alice", "laptop")
        var large: [String: JSONValue] = [:]
        for index in 0..<8 { large["f\(index)"] = .string(String(repeating: "w", count: 60_000)) }
        #expect(try owner.push([owner.change("big.example", large)]).status == 200)
        let other = try fixture.device("alice", "desktop")
        var changes: [ChangeRecord] = []
        var versions = VersionVector()
        for _ in 0..<300 {
            versions.increment(other.deviceID)
            var small: [String: JSONValue] = [:]
            for index in 0..<8 { small["f\(index)"] = .string("a") }
            changes.append(other.change("big.example", small, skewMilliseconds: -7_200_000, versions: versions))
        }
        let answer = try other.push(changes)
        let response = try PushResponse(json: try JSONValue.parse(answer.text))
        #expect(answer.status == 200 && response.acknowledged == 300, "\(answer.text.prefix(300))")
        #expect(answer.body.count < 2 << 20, "an answer of \(answer.body.count) bytes")
        #expect(
            !response.lost.isEmpty && response.lostOmitted > 0 && response.lost.count + response.lostOmitted == 300 * 8)
        #expect(
            response.lost.allSatisfy { $0.winner.value.stringValue?.count == 60_000 && $0.lost.value == .string("a") })
    }

    /// Health on the sync port; metrics only on a listener of their own
    /// (plain HTTP, for the host or a private network), never on the sync port.
    @Test(arguments: StoreKind.allCases) func healthAndMetrics(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind) { $0.metricsListen = [SocketAddress(host: "127.0.0.1", port: 0)] }
        let device = try fixture.device("alice", "laptop")
        let health = try device.client.send(method: "GET", target: "/v1/health")
        #expect(
            health.status == 200
                && health.json
                    == .object([
                        "status": .string("ok"), "epoch": .string(fixture.store.epoch),
                        "version": .string(BrsyncVersion.current),
                    ])
        )
        #expect(try device.push([device.change("a.com", ["browser": .string("x")])]).status == 200)
        _ = try device.pull()
        let onSyncPort = try device.client.send(method: "GET", target: "/metrics")
        #expect(onSyncPort.status == 404 && !onSyncPort.text.contains("brsyncd_"), "\(onSyncPort.text)")
        let port = try #require(fixture.server.metricsPorts.first)
        let scraper = HTTPClient(
            .init(address: SocketAddress(host: "127.0.0.1", port: port), serverName: "localhost", tls: nil))
        #expect(
            try scraper.send(method: "GET", target: "/v1/health").status == 404,
            "the metrics listener serves /metrics only")
        #expect(
            try scraper.send(method: "POST", target: "/metrics", body: Array("x".utf8)).status == 413,
            "it takes no body")
        let metrics = try scraper.send(method: "GET", target: "/metrics").text
        #expect(metrics.contains(#"brsyncd_requests_total{route="/v1/push",status="200"} 1"#))
        #expect(metrics.contains("brsyncd_records 1"))
        #expect(metrics.contains("brsyncd_pushes_total 1"))
        #expect(metrics.contains("brsyncd_open_connections 1"), "the device's connection to the sync port")
        #expect(metrics.contains("brsyncd_watches 0"))
        #expect(metrics.contains(#"brsyncd_request_duration_milliseconds_bucket{le="+Inf"}"#))
    }

    /// A pull page stops at its byte budget as well as its count: large
    /// records come a few per page, one larger than the budget comes alone,
    /// and nothing is skipped or sent twice.
    @Test(arguments: StoreKind.allCases) func pullPagesAreCutByBytes(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind) { $0.maxPageBytes = 40_000 }
        let device = try fixture.device("alice", "laptop")
        // About 10 KB each (stored with their stamps), and one of about 60 KB.
        let big = String(repeating: "x", count: 3_000)
        func small(_ index: Int) -> ChangeRecord {
            device.change("r\(index).example", ["a": .string(big), "b": .string(big), "c": .string(big)])
        }
        let changes =
            (0..<5).map(small) + [
                device.change(
                    "huge.example", Dictionary(uniqueKeysWithValues: (0..<20).map { ("f\($0)", JSONValue.string(big)) })
                )
            ]
            + (5..<12).map(small)
        let pushed = try device.push(changes)
        #expect(pushed.status == 200, "\(pushed.text.prefix(300))")
        let reader = try fixture.device("alice", "desktop")
        var cursor: Int64 = 0
        var seen: [Int64] = []
        var pages = 0
        while true {
            let response = try reader.pull(since: cursor, limit: 100)
            #expect(response.status == 200)
            let page = try Wire.read(response.text, PullResponse.init(reading:))
            pages += 1
            #expect(!page.changes.isEmpty, "every page carries at least one record")
            #expect(
                response.body.count < 40_000 + 70_000, "at most the budget and one record: \(response.body.count) bytes"
            )
            if page.changes.contains(where: { $0.key == "huge.example" }) {
                #expect(page.changes.count == 1 || page.changes.last?.key == "huge.example")
            }
            seen += page.changes.map(\.sequence)
            #expect(page.next > cursor)
            cursor = page.next
            if !page.more { break }
            #expect(pages < 20, "the pull ends")
            if pages >= 20 { break }
        }
        #expect(seen == Array(1...13), "every record once, in order: \(seen)")
        #expect(pages >= 4, "\(pages) pages")
    }

    /// Pushes commit while a device pulls in a loop: the puller ends with
    /// exactly the server's state, so no pull skipped a concurrent commit.
    @Test(arguments: StoreKind.allCases) func pullsNeverSkipConcurrentCommits(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let writers = try (0..<4).map { try fixture.device("alice", "writer\($0)") }
        let reader = try fixture.device("alice", "reader")
        let finished = LockedFlag()
        let group = DispatchGroup()
        for (index, writer) in writers.enumerated() {
            group.enter()
            DispatchQueue.global().async {
                defer { group.leave() }
                for round in 0..<15 {
                    // Overlapping keys: writers also update each other's records.
                    let changes = (0..<5).map {
                        writer.change(
                            "site\((round * 5 + $0 + index) % 40).example", ["browser": .string("w\(index)-\(round)")])
                    }
                    _ = try? writer.push(changes)
                }
            }
        }
        group.notify(queue: .global()) { finished.set() }
        var cursor: Int64 = 0
        var mirror: [String: ChangeRecord] = [:]
        while true {
            let writersDone = finished.isSet // read before pulling: a drain after this sees every commit
            let page = try Wire.read(try reader.pull(since: cursor, limit: 7).text, PullResponse.init(reading:))
            for change in page.changes {
                #expect(change.sequence > cursor)
                mirror[change.key] = change
            }
            cursor = page.next
            if !page.more && writersDone { break }
            if !page.more { usleep(2_000) }
        }
        let truth = try reader.pullAll().records
        #expect(mirror.count == truth.count)
        for (key, record) in truth {
            #expect(mirror[String(key.dropFirst("rules/".count))]?.state == record.state, "\(key) was skipped")
        }
    }
}

/// A flag set by one thread and read by another.
final class LockedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.lock(); value = true; lock.unlock() }
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
}
