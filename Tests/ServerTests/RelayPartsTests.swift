import JSON
import SyncCore
import TestSupport
import Testing

@testable import BrsyncServer
@testable import ServerStore

/// A large relay is merged a part at a time (``Store/relayPartBytes`` of
/// fields' text each, each part a write transaction of its own), so another
/// account's write waits for one part, never for megabytes. Every record is
/// merged, rejections are told once, and a relay whose parts must go
/// together (a ledger request, pending ledger records) stays whole.
@Suite struct RelayPartsTests {
    /// A relay's request as the server reads it from `records` (each record's fields' text kept).
    static func read(_ request: RelayRequest) throws -> RelayRequest {
        try Wire.read(String(decoding: request.body(), as: UTF8.self), RelayRequest.init(reading:))
    }

    /// A record of about `bytes` of fields' text, in values of 32 KiB at most.
    static func record(_ device: TestDevice, _ key: String, bytes: Int) -> ChangeRecord {
        var fields: [String: JSONValue] = ["browser": .string("firefox")]
        for index in 0..<(bytes + 32767) / 32768 {
            fields["note\(index)"] = .string(String(repeating: "n", count: min(32768, bytes - index * 32768)))
        }
        return device.change(key, fields)
    }

    @Test func aLargeRelayIsCutIntoPartsInOrder() throws {
        let fixture = try ServerFixture()
        let device = try fixture.device("alice", "laptop")
        let part = Store.relayPartBytes
        // Three records of 0.45 of a part each: two fit a part, the third starts the next.
        let records = (0..<5).map { Self.record(device, "r\($0).example", bytes: part * 45 / 100) }
        let parts = SyncStore.relayParts(try Self.read(RelayRequest(records: records, keyID: "0123456789abcdef")))
        #expect(
            parts.map { $0.records.map(\.key) } == [
                ["r0.example", "r1.example"], ["r2.example", "r3.example"], ["r4.example"],
            ])
        #expect(parts.allSatisfy { $0.keyID == "0123456789abcdef" })
        // A record larger than a part is a part alone; small records share one.
        let large = Self.record(device, "large.example", bytes: part * 2)
        let small = (0..<50).map { Self.record(device, "s\($0).example", bytes: 100) }
        let mixed = SyncStore.relayParts(try Self.read(RelayRequest(records: small + [large] + small)))
        #expect(mixed.map(\.records.count) == [50, 1, 50])
        // A relay carrying pending ledger records, and a ledger request, stay whole.
        var withLedger = try Self.read(RelayRequest(records: records))
        withLedger.ledger = [Self.record(device, "pending", bytes: 10)]
        #expect(SyncStore.relayParts(withLedger).count == 1)
        // A record's versions count: a vector of many long device ids makes a record a part alone.
        var wide = (0..<3).map { Self.record(device, "v\($0).example", bytes: 100) }
        for index in wide.indices {
            wide[index].state.versions = VersionVector(
                Dictionary(uniqueKeysWithValues: (0..<1024).map { ("d\($0)" + String(repeating: "y", count: 55), 1) }))
        }
        #expect(SyncStore.relayParts(try Self.read(RelayRequest(records: wide))).count == 3)
        var ledgerRequest = try Self.read(RelayRequest(records: records))
        ledgerRequest.ledgerOf = device.deviceID
        #expect(SyncStore.relayParts(ledgerRequest).count == 1)
    }

    @Test func recordsOverALimitAreRejectedOnceWithTheFirstPart() throws {
        let fixture = try ServerFixture()
        let device = try fixture.device("alice", "laptop")
        var records = (0..<4).map { Self.record(device, "r\($0).example", bytes: Store.relayPartBytes * 3 / 4) }
        records.insert(
            device.change("big.example", ["note": .string(String(repeating: "v", count: Wire.maxValueBytes + 1))]),
            at: 2)
        let request = try Self.read(RelayRequest(records: records))
        #expect(request.unreadable.count == 1)
        let parts = SyncStore.relayParts(request)
        #expect(parts.count == 4)
        #expect(parts.map(\.unreadable.count) == [1, 0, 0, 0])
    }

    /// Through the server, on both stores: every record of a relay cut into
    /// parts is merged and pulled, a record refused in a later part is named
    /// once, and relaying the same again changes nothing.
    @Test(arguments: StoreKind.allCases) func aRelayInPartsMergesEveryRecord(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let device = try fixture.device("alice", "laptop")
        var records = (0..<6).map { Self.record(device, "r\($0).example", bytes: Store.relayPartBytes * 4 / 10) }
        // In the third part: a key over the limit, refused alone.
        records.insert(device.change(String(repeating: "k", count: 3000), ["browser": .string("x")]), at: 5)
        let body = RelayRequest(records: records).body()
        #expect(SyncStore.relayParts(try Self.read(RelayRequest(records: records))).count == 3)
        let answer = try device.post("/v1/relay", body: body)
        #expect(answer.status == 200, "\(answer.text.prefix(300))")
        let relayed = try PushResponse(json: try JSONValue.parse(answer.text))
        #expect(relayed.applied == 6)
        #expect(relayed.rejected.count == 1)
        #expect(relayed.rejected.first?.reason.contains("a key must be 1 to 2048 bytes") == true)
        let pulled = try device.pullAll().records
        #expect(Set(pulled.keys) == Set((0..<6).map { "rules/r\($0).example" }))
        for record in records.prefix(5) + records.suffix(1) {
            #expect(pulled["rules/\(record.key)"]?.state == record.state)
        }
        // The same relay again (a retry whose answer was lost): nothing more merged.
        let again = try PushResponse(json: try JSONValue.parse(try device.post("/v1/relay", body: body).text))
        #expect(again.applied == 0)
        #expect(again.rejected.count == 1)
    }

    /// A record read ahead of a write (outside SQLite's write lock) is used
    /// only while it is still the stored version: one written since, or
    /// made since where it was absent, is read again inside the write.
    @Test func aRecordReadAheadIsTakenOnlyWhileItIsStillStored() throws {
        let fixture = try ServerFixture()
        let store = fixture.store
        let device = try fixture.device("alice", "laptop")
        #expect(try device.push([device.change("kept.example", ["browser": .string("firefox")])]).status == 200)
        #expect(try device.push([device.change("moved.example", ["browser": .string("firefox")])]).status == 200)
        let account = try #require(try store.accounts().first { $0.name == "alice" }).id
        let places: [(collection: RecordCollection, key: String)] = [
            (.rules, "kept.example"), (.rules, "moved.example"), (.rules, "new.example"), (.rules, "absent.example"),
        ]
        var ahead = try #require(try store.dialect.readAhead(account: account, keys: places))
        // Written after the read: a new version, and a record where there was none.
        #expect(try device.push([device.change("moved.example", ["browser": .string("chrome")])]).status == 200)
        #expect(try device.push([device.change("new.example", ["browser": .string("chrome")])]).status == 200)
        // The version read ahead of "kept.example", marked so that taking it shows.
        let keptPlace = Store.ReadAhead.Place(collection: .rules, key: "kept.example")
        var marked = try #require(ahead.records[keptPlace] ?? nil)
        marked.state.fields["marked"] = StampedValue(.bool(true), stamp: marked.state.fields["browser"]!.stamp)
        ahead.records[keptPlace] = .some(marked)
        let (kept, moved, new, absent) = try store.writing(account: account, readAhead: ahead) { transaction in
            (
                try transaction.record(account: account, collection: .rules, key: "kept.example"),
                try transaction.record(account: account, collection: .rules, key: "moved.example"),
                try transaction.record(account: account, collection: .rules, key: "new.example"),
                try transaction.record(account: account, collection: .rules, key: "absent.example")
            )
        }
        #expect(kept?.state.fields["marked"] != nil, "the version read ahead, still stored, is taken as read")
        #expect(moved?.state.fields["browser"]?.value == .string("chrome"))
        #expect(new?.state.fields["browser"]?.value == .string("chrome"))
        #expect(absent == nil)
        // Another account's write never takes this account's reads.
        let other = try fixture.device("bob", "laptop")
        #expect(try other.push([other.change("kept.example", ["browser": .string("x")])]).status == 200)
        let bob = try #require(try store.accounts().first { $0.name == "bob" }).id
        let theirs = try store.writing(account: bob, readAhead: ahead) { transaction in
            try transaction.record(account: bob, collection: .rules, key: "kept.example")
        }
        #expect(theirs?.state.fields["browser"]?.value == .string("x"))
    }

    /// A relay of several parts past a limit is refused (507) at the part
    /// that crosses it; the parts before stay merged, as after a crash
    /// between them, and the account holds no more than its limit.
    @Test(arguments: StoreKind.allCases) func aRelayInPartsPastALimitKeepsThePartsBefore(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let device = try fixture.device("alice", "laptop")
        try fixture.store.setLimits(account: "alice", records: 3, bytes: nil, devices: nil)
        let records = (0..<6).map { Self.record(device, "r\($0).example", bytes: Store.relayPartBytes * 4 / 10) }
        let answer = try device.post("/v1/relay", body: RelayRequest(records: records).body())
        #expect(answer.status == 507 && answer.errorCode == .quotaExceeded, "\(answer.text.prefix(300))")
        #expect(answer.errorMessage.contains("2 record(s) of the parts before this one were applied"), "\(answer.text)")
        let pulled = try device.pullAll().records
        #expect(Set(pulled.keys) == ["rules/r0.example", "rules/r1.example"])
        #expect(try #require(try fixture.store.accounts().first { $0.name == "alice" }).records == 2)
    }

    /// How a device is cut off while its request is under way.
    enum CutOff: CaseIterable, Sendable { case revoked, newToken }

    /// A relay (in every part's transaction) and a push check their device
    /// and its token inside the write: one authenticated before `device
    /// revoke` or `device token` (a large relay still being merged) writes
    /// nothing after it.
    @Test(arguments: StoreKind.allCases, CutOff.allCases)
    func aRequestAuthenticatedBeforeItsDeviceIsCutOffWritesNothing(
        _ kind: StoreKind, _ cut: CutOff
    ) throws {
        let fixture = try ServerFixture(kind)
        let device = try fixture.device("alice", "laptop")
        let other = try fixture.device("alice", "desktop")
        let authenticated = try fixture.store.authenticate(token: device.token)
        switch cut {
        case .revoked: try fixture.store.revokeDevice(account: "alice", name: "laptop")
        case .newToken: _ = try fixture.store.reissueToken(account: "alice", device: "laptop")
        }
        let records = (0..<3).map { Self.record(device, "r\($0).example", bytes: Store.relayPartBytes * 6 / 10) }
        let relay = try Self.read(RelayRequest(records: records))
        #expect(SyncStore.relayParts(relay).count == 3)
        let change = device.change("p.example", ["browser": .string("x")])
        let push = PushRequest(device: device.deviceID, from: change.sequence, to: change.sequence, changes: [change])
        let refusals = [
            #expect(throws: ServerError.self) {
                _ = try fixture.store.relay(
                    relay, from: authenticated, authority: .unsigned, maxClockOffsetMilliseconds: 60_000)
            },
            #expect(throws: ServerError.self) {
                _ = try fixture.store.push(
                    try Wire.read(String(decoding: push.body(), as: UTF8.self), PushRequest.init(reading:)),
                    from: authenticated, authority: .unsigned, maxClockOffsetMilliseconds: 60_000)
            },
        ]
        for error in refusals {
            switch (cut, error) {
            case (.revoked, .revoked?): break
            case (.newToken, .unauthorized(let message)?) where message.contains("was given a new token"): break
            default: Issue.record("\(cut): \(String(describing: error))")
            }
        }
        #expect(try other.pullAll().records.isEmpty)
        #expect(try #require(try fixture.store.accounts().first { $0.name == "alice" }).records == 0)
    }

    /// A relay stopped between parts (its device revoked, its token
    /// replaced) says how many records the parts before applied, with the
    /// refusal's own status and code.
    @Test func aRefusalBetweenPartsSaysWhatWasApplied() {
        for refusal in [ServerError.revoked, .unauthorized("this device was given a new token")] {
            let stopped = ServerError.inRelay(refusal, applied: 7)
            #expect(stopped.httpStatus == 401 && stopped.code == refusal.code)
            #expect(stopped.wire.message.hasPrefix(refusal.description))
            #expect(stopped.wire.message.contains("7 record(s) of the parts before this one were applied"))
            #expect(SyncAPI.answer(stopped).headers["WWW-Authenticate"] != nil)
        }
    }

    /// A relay's `applied` counts records changed: one key relayed three
    /// times (each copy newer) is one record.
    @Test func aRecordRelayedThreeTimesIsAppliedOnce() throws {
        let fixture = try ServerFixture()
        let device = try fixture.device("alice", "laptop")
        let copies = ["firefox", "chrome", "brave"].map { device.change("repeat.example", ["browser": .string($0)]) }
        let other = device.change("other.example", ["browser": .string("firefox")])
        let answer = try device.post("/v1/relay", body: RelayRequest(records: copies + [other]).body())
        #expect(answer.status == 200, "\(answer.text.prefix(300))")
        #expect(try PushResponse(json: try JSONValue.parse(answer.text)).applied == 2)
        #expect(
            try device.pullAll().records["rules/repeat.example"]?.state.fields["browser"]?.value == .string("brave"))
    }
}
