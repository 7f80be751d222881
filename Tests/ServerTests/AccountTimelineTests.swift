import HTTP
import JSON
import SyncCore
import TestSupport
import Testing

@testable import BrsyncServer

/// One account's timeline never moves another's: a cursor or a change number
/// beyond what an account holds (a rollback, or a client that says so)
/// starts a new epoch for that account only. A store restored or copied as a
/// whole still moves every account (HistoryTests, DatabaseIdentity).
@Suite struct AccountTimelineTests {
    static func epoch(_ device: TestDevice) throws -> String {
        try Wire.read(try device.pull().text, PullResponse.init(reading:)).epoch
    }

    @Test(arguments: StoreKind.allCases) func aCursorPastOneAccountMovesOnlyThatAccount(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let alice = try fixture.device("alice", "laptop")
        let bob = try fixture.device("bob", "phone")
        for device in [alice, bob] {
            device.protocolVersion = Wire.protocolVersion
            #expect(try device.push([device.change("kept.example", ["browser": .string("firefox")])]).status == 200)
        }
        let (aliceBefore, bobBefore, storeBefore) = (try Self.epoch(alice), try Self.epoch(bob), fixture.store.epoch)
        #expect(
            aliceBefore == bobBefore && aliceBefore == storeBefore,
            "no account has a timeline of its own yet (an upgrade changes nothing)")
        // Alice's client says it has seen far past her account: a new epoch for her, and only her.
        let beyond = try alice.pull(since: 999_999_999)
        #expect(beyond.status == 200)
        let aliceAfter = try Self.epoch(alice)
        #expect(
            aliceAfter != aliceBefore && aliceAfter.hasPrefix(storeBefore) && SessionRules.isPlainEpoch(aliceAfter),
            "\(aliceAfter)")
        #expect(try Self.epoch(bob) == bobBefore)
        #expect(fixture.store.epoch == storeBefore)
        // Again and again: still only hers; her records stay.
        for _ in 0..<3 { _ = try alice.pull(since: 999_999_999) }
        #expect(try Self.epoch(bob) == bobBefore)
        #expect(try alice.pullAll().records.count == 1 && bob.pullAll().records.count == 1)
        // A push past what the account applied (a stream the store lost) moves only that account too.
        let carol = try fixture.device("carol", "desk", protocol: Wire.protocolVersion)
        #expect(try carol.push([carol.change("a.example", ["browser": .string("firefox")])]).status == 200)
        let carolBefore = try Self.epoch(carol)
        carol.nextSequence = 5
        let gap = try carol.push([carol.change("b.example", ["browser": .string("firefox")])])
        #expect(gap.errorCode == .gap, "\(gap.text)")
        #expect(
            try Self.epoch(carol) != carolBefore,
            "the store lost what it acknowledged to her: a rollback of her account")
        #expect(try Self.epoch(bob) == bobBefore)
    }

    /// The operator's reset gives the account a timeline of its own: every
    /// machine of it re-syncs and sends what it holds.
    @Test(arguments: StoreKind.allCases) func aResetMovesOnlyItsAccount(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let alice = try fixture.device("alice", "laptop", protocol: Wire.protocolVersion)
        let bob = try fixture.device("bob", "phone", protocol: Wire.protocolVersion)
        alice.signingKey = EncryptedAccountTests.firstSigner
        #expect(try EncryptedAccountTests.encrypt(alice).status == 200)
        let (aliceBefore, bobBefore) = (try Self.epoch(alice), try Self.epoch(bob))
        #expect(try fixture.store.resetEncryption(account: "alice"))
        #expect(try Self.epoch(alice) != aliceBefore)
        #expect(try Self.epoch(bob) == bobBefore)
    }
}

/// Who may start an account's new timeline: in an encrypted account only a
/// key holder, signed; a join code's secret never; a readable account's
/// devices at most once a minute, logged.
extension AccountTimelineTests {
    /// A GET of `target` with `token` as the bearer (a join code's secret, say).
    static func get(_ device: TestDevice, _ target: String, token: String) throws -> HTTPResponseParser.ParsedResponse {
        try device.client.send(
            method: "GET", target: target, headers: ["Authorization": "Bearer \(token)", Wire.protocolHeader: "3"])
    }

    @Test(arguments: StoreKind.allCases) func onlyAKeyHolderStartsAnEncryptedAccountsTimeline(_ kind: StoreKind) throws
    {
        let fixture = try ServerFixture(kind)
        let (laptop, desktop) = try EncryptedAccountTests.encryptedAccount(fixture)
        #expect(try laptop.push([EncryptedAccountTests.sealed(laptop, "one")]).status == 200)
        let before = try Self.epoch(laptop)
        let secret = try fixture.store.joinSecret("alice", "phone")
        // Twenty pulls from the future by a token without the key, twenty by a join code's secret: nothing moves.
        for _ in 0..<20 {
            let keyless = try desktop.pull(since: 999_999_999)
            #expect(
                keyless.status == 409 && keyless.errorCode == .rollbackUnconfirmed
                    && keyless.errorMessage.contains("key holder"), "\(keyless.text)")
            let joining = try Self.get(desktop, "/v1/pull?since=999999999", token: secret)
            #expect(joining.status == 409 && joining.errorCode == .rollbackUnconfirmed, "\(joining.text)")
            let noEpoch = try Self.get(desktop, "/v1/pull?since=123456&limit=5", token: desktop.token)
            #expect(noEpoch.errorCode == .rollbackUnconfirmed)
        }
        #expect(try Self.epoch(laptop) == before)
        // A confirmation must be signed with the account key.
        let confirmation = TimelineRequest(since: 999_999_999, epoch: before).body
        #expect(try desktop.post("/v1/account/timeline", body: confirmation).errorCode == .signatureRequired)
        #expect(
            try desktop.post("/v1/account/timeline", body: confirmation, signedBy: EncryptedAccountTests.secondSigner)
                .errorCode == .signingKeyMismatch)
        #expect(try Self.get(desktop, "/v1/account/timeline", token: desktop.token).status == 405)
        #expect(try laptop.post("/v1/account/timeline", body: Array(#"{"since":-1,"epoch":"x"}"#.utf8)).status == 400)
        #expect(try Self.epoch(laptop) == before)
        // The key holder's confirmation starts it, once: a replay, or a cursor that is not ahead, changes nothing.
        let confirmed = try laptop.post("/v1/account/timeline", body: confirmation)
        let answer = try TimelineResponse(json: try #require(confirmed.json))
        #expect(confirmed.status == 200 && answer.changed && answer.epoch != before, "\(confirmed.text)")
        #expect(try Self.epoch(laptop) == answer.epoch)
        let replayed = try TimelineResponse(
            json: try #require(try laptop.post("/v1/account/timeline", body: confirmation).json))
        #expect(!replayed.changed && replayed.epoch == answer.epoch)
        let behind = try laptop.post("/v1/account/timeline", body: TimelineRequest(since: 1, epoch: answer.epoch).body)
        #expect(
            try TimelineResponse(json: try #require(behind.json))
                == TimelineResponse(epoch: answer.epoch, changed: false))
        // A readable account starts its timeline with the pull: no confirmation to give.
        let bob = try fixture.device("bob", "phone", protocol: Wire.protocolVersion)
        let readable = try bob.post("/v1/account/timeline", body: TimelineRequest(since: 5, epoch: before).body)
        #expect(readable.errorCode == .notEncrypted, "\(readable.text)")
        // Said as it is: the request holds no sealed record.
        #expect(
            readable.text.contains("starts anew with the pull") && !readable.text.contains("sealed records"),
            "\(readable.text)")
    }

    @Test(arguments: StoreKind.allCases) func aReadableAccountsTimelineStartsAtMostOnceAMinute(_ kind: StoreKind) throws
    {
        let fixture = try ServerFixture(kind)
        let bob = try fixture.device("bob", "phone", protocol: Wire.protocolVersion)
        #expect(try bob.push([bob.change("kept.example", ["browser": .string("firefox")])]).status == 200)
        let before = try Self.epoch(bob)
        #expect(try bob.pull(since: 999_999_999).status == 200)
        let started = try Self.epoch(bob)
        #expect(started != before)
        // Again within the minute: refused, with when to come back; the timeline stays.
        let again = try bob.pull(since: 999_999_999)
        #expect(
            again.status == 429 && again.errorCode == .timelineLimited
                && (Int(again.headers["Retry-After"] ?? "") ?? 0) > 0, "\(again.text)")
        #expect(try Self.epoch(bob) == started)
        // Pushes from further than the store has the device wait as well.
        bob.nextSequence = 9
        let gap = try bob.push([bob.change("b.example", ["browser": .string("firefox")])])
        #expect(gap.status == 429 && gap.errorCode == .timelineLimited, "\(gap.text)")
        #expect(try Self.epoch(bob) == started)
        // A join code's secret never starts one.
        let secret = try fixture.store.joinSecret("bob", "tablet")
        #expect(try Self.get(bob, "/v1/pull?since=999999999", token: secret).errorCode == .rollbackUnconfirmed)
    }
}

/// A home pointed at another account's token brings that account's cursor:
/// it restarts nothing here (two accounts that never started a timeline of
/// their own share the store's epoch, so only the account tells them apart).
extension AccountTimelineTests {
    static func page(_ device: TestDevice) throws -> PullResponse {
        try Wire.read(try device.pull().text, PullResponse.init(reading:))
    }

    @Test(arguments: StoreKind.allCases) func aCursorOfAnotherAccountStartsNoTimeline(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let alice = try fixture.device("alice", "laptop", protocol: Wire.protocolVersion)
        let bob = try fixture.device("bob", "phone", protocol: Wire.protocolVersion)
        #expect(try alice.push([alice.change("a.example", ["browser": .string("firefox")])]).status == 200)
        #expect(
            try bob.push((1...5).map { bob.change("b\($0).example", ["browser": .string("firefox")]) }).status == 200)
        let (alicePage, bobPage) = (try Self.page(alice), try Self.page(bob))
        #expect(alicePage.epoch == bobPage.epoch && alicePage.account != bobPage.account)
        // Alice's token in a home that synced with Bob's account: his cursor 5, his epoch, his account.
        alice.origin = CursorOrigin(epoch: bobPage.epoch, account: bobPage.account)
        let pulled = try alice.pull(since: 5)
        #expect(pulled.status == 200, "\(pulled.text)")
        let answer = try Wire.read(pulled.text, PullResponse.init(reading:))
        #expect(answer.account == alicePage.account && answer.epoch == alicePage.epoch)
        #expect(try Self.page(alice).epoch == alicePage.epoch, "a cursor of Bob's account restarted Alice's")
        // Nor does a push that names Bob's account from further than Alice's stream.
        alice.nextSequence = 9
        let gap = try alice.push([alice.change("b.example", ["browser": .string("firefox")])])
        #expect(gap.errorCode == .gap, "\(gap.text)")
        #expect(try Self.page(alice).epoch == alicePage.epoch)
        // Her own account's cursor past her records still does (the server was rolled back).
        alice.origin = CursorOrigin(epoch: alicePage.epoch, account: alicePage.account)
        #expect(try alice.pull(since: 5).status == 200)
        #expect(try Self.page(alice).epoch != alicePage.epoch)
        #expect(try Self.page(bob).epoch == bobPage.epoch)
    }

    /// What a client sends as its account is checked like its epoch.
    @Test func anAccountThatIsNoIdIsRefused() throws {
        var clock = HybridLogicalClock(device: "d")
        var vector = VersionVector()
        vector.increment("d")
        let stamp = clock.tick(wallMillis: 1_700_000_000_000)
        let change = ChangeRecord(
            sequence: 1, collection: .rules, key: "a.example",
            state: RecordState(fields: ["browser": StampedValue(.string("firefox"), stamp: stamp)], versions: vector))
        var push = PushRequest(device: "d", from: 1, to: 1, changes: [change])
        push.account = "0123abcdef"
        #expect(try Wire.read(String(decoding: push.body(), as: UTF8.self), PushRequest.init(reading:)) == push)
        #expect(try PullRequest(query: ["since": "1", "account": "0123abcdef"], maxLimit: 10).account == "0123abcdef")
        for bad in ["", "ABC", "a/b", String(repeating: "a", count: 65), "a b"] {
            #expect(throws: Wire.Problem.self) { try PullRequest(query: ["since": "1", "account": bad], maxLimit: 10) }
            push.account = bad
            let body = String(decoding: push.body(), as: UTF8.self)
            #expect(throws: Wire.ReadError.self, "\(body)") { try Wire.read(body, PushRequest.init(reading:)) }
        }
        // Not a string at all.
        let number = String(decoding: push.body(), as: UTF8.self).replacingOccurrences(
            of: #""account":"a b""#, with: #""account":12"#)
        #expect(throws: Wire.ReadError.self) { try Wire.read(number, PushRequest.init(reading:)) }
        #expect(
            throws: Wire.Problem.self,
            "records by key take no account"
        ) { try PullRequest(query: ["keys": "rules:h1.x", "account": "0123"], maxLimit: 10) }
    }
}
