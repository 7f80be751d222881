import HTTP
import JSON
import SyncCore
import TestSupport
import Testing

@testable import BrsyncServer
@testable import ServerStore

/// The `ledger` collection on the server (Deploy/SECURITY.md, "A device's
/// own writes, counted"): taken only into encrypted accounts, only from
/// clients that keep ledgers, only in its sealed form, and sent only to them.
@Suite struct LedgerCollectionTests {
    static func ledger(
        _ device: TestDevice, _ key: String, extra: [String: JSONValue] = [:], skewMilliseconds: Int64 = 0
    ) -> ChangeRecord {
        device.change(
            key, ["ledger": .string("e1." + String(repeating: "Ab0-_", count: 12))].merging(extra) { $1 },
            collection: .ledger, skewMilliseconds: skewMilliseconds)
    }

    /// A push of one change with `ledger` as its pending records (its body
    /// read back as the server reads it first).
    static func push(
        _ device: TestDevice, _ change: ChangeRecord, ledger: [ChangeRecord]
    ) throws -> HTTPResponseParser.ParsedResponse {
        var request = PushRequest(
            device: device.deviceID, from: change.sequence, to: change.sequence, changes: [change],
            keyID: device.keyID)
        request.ledger = ledger
        let body = request.body()
        #expect(try Wire.read(String(decoding: body, as: UTF8.self), PushRequest.init(reading:)) == request)
        return try device.post("/v1/push", body: body)
    }

    static func rejections(_ response: HTTPResponseParser.ParsedResponse) throws -> [String] {
        #expect(response.status == 200, "\(response.text)")
        return try PushResponse(json: try #require(response.json)).rejected.map(\.reason)
    }

    /// An encrypted account with a laptop that keeps ledgers (protocol 4)
    /// and a desktop holding the key.
    static func laptopAndDesktop(_ kind: StoreKind) throws -> (ServerFixture, TestDevice, TestDevice) {
        let fixture = try ServerFixture(kind)
        let (laptop, desktop) = try EncryptedAccountTests.encryptedAccount(fixture)
        desktop.keyID = EncryptedAccountTests.firstKey
        desktop.signingKey = EncryptedAccountTests.firstSigner
        laptop.protocolVersion = Wire.ledgerProtocol
        return (fixture, laptop, desktop)
    }

    @Test(arguments: StoreKind.allCases) func ledgersGoToClientsThatKeepThemOnly(_ kind: StoreKind) throws {
        let (fixture, laptop, desktop) = try Self.laptopAndDesktop(kind)
        defer { _ = fixture }
        let rule = EncryptedAccountTests.sealed(laptop, "rule")
        let head = Self.ledger(laptop, "\(laptop.deviceID)/head")
        let pending = Self.ledger(laptop, "\(laptop.deviceID)/pending/0")
        #expect(try Self.rejections(try laptop.push([rule, head, pending])).isEmpty)

        // A client that keeps ledgers pulls them with the records; one that
        // does not never sees them, and its cursor passes them.
        let keeper = try laptop.pullAll().records
        #expect(
            keeper.keys.sorted() == [
                "ledger/\(laptop.deviceID)/head", "ledger/\(laptop.deviceID)/pending/0", "rules/\(rule.key)",
            ])
        let older = try desktop.pullAll()
        #expect(older.records.keys.sorted() == ["rules/\(rule.key)"])
        #expect(older.cursor == (try laptop.pullAll()).cursor)
    }

    /// Withdrawals (`DEVICE/withdrawn/SLOT`) are taken from and sent to
    /// clients of ``Wire/withdrawalProtocol`` only: one of protocol 4 would
    /// set them aside as damaged ledger records.
    @Test(arguments: StoreKind.allCases) func withdrawalsGoToClientsThatReadThemOnly(_ kind: StoreKind) throws {
        let (fixture, laptop, desktop) = try Self.laptopAndDesktop(kind)
        defer { _ = fixture }
        let rule = EncryptedAccountTests.sealed(laptop, "rule")
        let withdrawal = Self.ledger(laptop, "\(laptop.deviceID)/withdrawn/0")
        #expect(
            try Self.rejections(try laptop.push([rule, withdrawal]))
                == ["a withdrawal needs a client of protocol \(Wire.withdrawalProtocol)"])
        laptop.protocolVersion = Wire.withdrawalProtocol
        let again = Self.ledger(laptop, "\(laptop.deviceID)/withdrawn/0")
        #expect(try Self.rejections(try laptop.push([again])).isEmpty)
        #expect(
            try laptop.pullAll().records.keys.sorted() == [
                "ledger/\(laptop.deviceID)/withdrawn/0", "rules/\(rule.key)",
            ])
        desktop.protocolVersion = Wire.ledgerProtocol
        let older = try desktop.pullAll()
        #expect(older.records.keys.sorted() == ["rules/\(rule.key)"], "a client of protocol 4 never sees one")
        #expect(older.cursor == (try laptop.pullAll()).cursor)
        #expect(Wire.sends(collection: .ledger, key: "d/withdrawn/1", toProtocol: Wire.withdrawalProtocol))
        #expect(!Wire.sends(collection: .ledger, key: "d/withdrawn/1", toProtocol: Wire.ledgerProtocol))
        #expect(Wire.sends(collection: .ledger, key: "d/head", toProtocol: Wire.ledgerProtocol))
        #expect(!Wire.sends(collection: .ledger, key: "d/head", toProtocol: Wire.ledgerProtocol - 1))
        #expect(Wire.sends(collection: .rules, key: "h1.x", toProtocol: 1))
    }

    @Test(arguments: StoreKind.allCases) func aLedgerRecordOutOfPlaceIsRefusedAlone(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let (laptop, _) = try EncryptedAccountTests.encryptedAccount(fixture)
        // From a client that does not keep ledgers.
        let early = try Self.rejections(try laptop.push([Self.ledger(laptop, "\(laptop.deviceID)/head")]))
        #expect(early == ["a ledger record needs a client of protocol \(Wire.ledgerProtocol)"])
        laptop.protocolVersion = Wire.ledgerProtocol
        // Not in the sealed form a ledger record has.
        let cases: [(ChangeRecord, String)] = [
            (
                Self.ledger(laptop, "laptop/257"),
                "is not DEVICE/SHARD, DEVICE/head, DEVICE/pending/SLOT or DEVICE/withdrawn/SLOT"
            ),
            (Self.ledger(laptop, "h1." + String(repeating: "A", count: 43)), "is not DEVICE/SHARD"),
            (
                laptop.change("laptop/head", ["ledger": JSONValue.string("readable")], collection: .ledger),
                "is readable"
            ),
            (Self.ledger(laptop, "laptop/head", extra: ["note": .string("e1.AAAA")]), "has a field \"note\""),
            (
                Self.ledger(laptop, "laptop/head", extra: ["deleted": .bool(true)]),
                "a ledger record is never deleted"
            ),
        ]
        for (change, reason) in cases {
            let rejected = try Self.rejections(try laptop.push([change]))
            #expect(rejected.count == 1 && rejected[0].contains(reason), "\(rejected)")
        }
        #expect(try laptop.pullAll().records.isEmpty, "nothing of them was taken")

        // Into an account that is not encrypted.
        let readable = try fixture.device("bob", "laptop", protocol: Wire.ledgerProtocol)
        let refused = try Self.rejections(try readable.push([Self.ledger(readable, "\(readable.deviceID)/head")]))
        #expect(refused == ["a ledger is kept in end-to-end encrypted accounts only"])
    }

    /// A device writes its own ledger only; a relay carries ledgers of
    /// devices that pushed to the account; ledgers sit outside the quotas.
    @Test(arguments: StoreKind.allCases) func ledgersAreBoundedByTheirDevicesNotTheQuota(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let (laptop, desktop) = try EncryptedAccountTests.encryptedAccount(fixture)
        laptop.protocolVersion = Wire.ledgerProtocol
        desktop.protocolVersion = Wire.ledgerProtocol
        desktop.keyID = EncryptedAccountTests.firstKey
        desktop.signingKey = EncryptedAccountTests.firstSigner
        #expect(try Self.rejections(try laptop.push([EncryptedAccountTests.sealed(laptop, "one")])).isEmpty)

        let others = try Self.rejections(try laptop.push([Self.ledger(laptop, "\(desktop.deviceID)/head")]))
        #expect(others == ["a device writes only its own ledger, and this one is device '\(desktop.deviceID)'s"])

        // A full account still takes ledgers, and nothing else.
        try fixture.store.setLimits(account: "alice", records: 1, bytes: nil, devices: nil)
        let ledgers = (0..<20).map { Self.ledger(laptop, "\(laptop.deviceID)/\($0)") }
        #expect(try Self.rejections(try laptop.push(ledgers)).isEmpty)
        let full = try laptop.push([EncryptedAccountTests.sealed(laptop, "two")])
        #expect(full.status == 507 && full.errorCode == .quotaExceeded, "\(full.text)")

        // Relayed: the laptop's ledger (it pushed) is taken, and so is a
        // device's that never pushed here (a server restored from before it
        // did takes it back), up to as many devices' ledgers as an account
        // has streams.
        let relay = RelayRequest(
            records: [Self.ledger(desktop, "\(laptop.deviceID)/pending/2"), Self.ledger(desktop, "nobody/head")],
            keyID: EncryptedAccountTests.firstKey)
        let relayed = try desktop.post("/v1/relay", body: relay.body())
        #expect(try Self.rejections(relayed).isEmpty)
        #expect(try laptop.pullAll().records.keys.contains("ledger/\(laptop.deviceID)/pending/2"))
        let madeUp = (0..<Store.maxStreamsPerAccount - 2).map { Self.ledger(desktop, "other\($0)/head") }
        for part in stride(from: 0, to: madeUp.count, by: 500) {
            let batch = RelayRequest(
                records: Array(madeUp[part..<min(part + 500, madeUp.count)]), keyID: EncryptedAccountTests.firstKey)
            #expect(try Self.rejections(try desktop.post("/v1/relay", body: batch.body())).isEmpty)
        }
        let past = RelayRequest(
            records: [Self.ledger(desktop, "nobody/pending/1"), Self.ledger(desktop, "onemore/head")],
            keyID: EncryptedAccountTests.firstKey)
        #expect(
            try Self.rejections(try desktop.post("/v1/relay", body: past.body())) == [
                "a ledger of device 'onemore', which never pushed to this account, and \(Store.maxStreamsPerAccount) devices' ledgers are held already"
            ])
    }

    /// A batch's pending record goes with it, unnumbered, applied with it
    /// or not at all: one that is not the pusher's own refuses the push.
    @Test(arguments: StoreKind.allCases) func aPendingRecordGoesWithItsBatchWhole(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let (laptop, _) = try EncryptedAccountTests.encryptedAccount(fixture)
        laptop.protocolVersion = Wire.ledgerProtocol
        func push(_ change: ChangeRecord, ledger: [ChangeRecord]) throws -> HTTPResponseParser.ParsedResponse {
            try Self.push(laptop, change, ledger: ledger)
        }
        let rule = EncryptedAccountTests.sealed(laptop, "rule")
        var someoneElses = Self.ledger(laptop, "desktop-id/pending/0")
        someoneElses.sequence = 0
        let refused = try push(rule, ledger: [someoneElses])
        #expect(
            refused.status == 400 && refused.errorMessage.contains("the push is refused whole"),
            "\(refused.status) \(refused.text)")
        #expect(try laptop.pullAll().records.isEmpty, "nothing of it applied")

        var pending = Self.ledger(laptop, "\(laptop.deviceID)/pending/0")
        pending.sequence = 0
        laptop.protocolVersion = Wire.signedWritesProtocol
        let early = try push(rule, ledger: [pending])
        #expect(early.status == 400 && early.errorMessage.contains("protocol \(Wire.ledgerProtocol)"), "\(early.text)")
        laptop.protocolVersion = Wire.ledgerProtocol
        #expect(try Self.rejections(try push(rule, ledger: [pending])).isEmpty)
        let held = try laptop.pullAll().records
        #expect(held.keys.sorted() == ["ledger/\(laptop.deviceID)/pending/0", "rules/\(rule.key)"])

        // A retry of the applied batch carries a pending record made again:
        // not taken (a home restored from an older copy retries so, with a
        // ledger as old as itself), the retry answered as before.
        var again = Self.ledger(laptop, "\(laptop.deviceID)/pending/0", extra: [:])
        again.sequence = 0
        let retried = try push(rule, ledger: [again])
        let retriedRejections = try Self.rejections(retried)
        #expect(retriedRejections.isEmpty, "\(retried.text)")
        let after = try laptop.pullAll().records["ledger/\(laptop.deviceID)/pending/0"]
        #expect(after?.state.fields["ledger"]?.stamp == pending.state.fields["ledger"]?.stamp)
    }

    /// A batch refused for its pending record's clock says which of the
    /// device's changes the server holds, as a refusal for a change's
    /// clock does: a client that found the server restored re-stamps only
    /// the changes after those (re-stamping one the server holds made it
    /// fork, and left the old id's last writes out of every ledger).
    @Test(arguments: StoreKind.allCases) func aPendingRecordTooFarAheadSaysWhereTheDeviceStands(
        _ kind: StoreKind
    ) throws {
        let fixture = try ServerFixture(kind)
        let (laptop, _) = try EncryptedAccountTests.encryptedAccount(fixture)
        laptop.protocolVersion = Wire.ledgerProtocol
        func push(_ change: ChangeRecord, ledger: [ChangeRecord]) throws -> HTTPResponseParser.ParsedResponse {
            try Self.push(laptop, change, ledger: ledger)
        }
        let first = EncryptedAccountTests.sealed(laptop, "first")
        var pending = Self.ledger(laptop, "\(laptop.deviceID)/pending/0")
        pending.sequence = 0
        let taken = try push(first, ledger: [pending])
        #expect(try Self.rejections(taken).isEmpty, "\(taken.text)")
        let digest = try PushResponse(json: try #require(taken.json)).acknowledgedDigest

        var second = EncryptedAccountTests.sealed(laptop, "second")
        second.sequence = first.sequence + 1 // the pending record took a number
        var ahead = Self.ledger(laptop, "\(laptop.deviceID)/pending/1", skewMilliseconds: 2 * 86_400_000)
        ahead.sequence = 0
        let refused = try push(second, ledger: [ahead])
        #expect(refused.status == 422, "\(refused.text)")
        let error = try #require(refused.json.flatMap(WireError.init(json:)), "\(refused.text)")
        #expect(error.code == .clockSkew && error.acknowledged == 1 && error.digest == digest, "\(refused.text)")
        #expect(try laptop.pullAll().records["rules/\(second.key)"] == nil, "nothing of the batch applied")
    }

    /// A device's ledger request (a relay naming the device): its own
    /// ledger records, all taken or none.
    @Test(arguments: StoreKind.allCases) func aLedgerRequestIsTakenWholeOrRefusedWhole(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let (laptop, _) = try EncryptedAccountTests.encryptedAccount(fixture)
        laptop.protocolVersion = Wire.ledgerProtocol
        #expect(try Self.rejections(try laptop.push([EncryptedAccountTests.sealed(laptop, "rule")])).isEmpty)
        func request(_ records: [ChangeRecord], of device: String? = nil) throws -> HTTPResponseParser.ParsedResponse {
            var relay = RelayRequest(records: records, keyID: laptop.keyID)
            relay.ledgerOf = device ?? laptop.deviceID
            let body = relay.body()
            if records.count <= Ledger.maxShards + 1 {
                #expect(try Wire.read(String(decoding: body, as: UTF8.self), RelayRequest.init(reading:)) == relay)
            }
            return try laptop.post("/v1/relay", body: body)
        }
        let shard = Self.ledger(laptop, "\(laptop.deviceID)/0")
        let head = Self.ledger(laptop, "\(laptop.deviceID)/head")
        let ledgerKeys = { try laptop.pullAll().records.keys.filter { $0.hasPrefix("ledger/") }.sorted() }
        for (records, why) in [
            ([shard, Self.ledger(laptop, "desktop-id/head")], "device 'alice-laptop's own ledger records only"),
            ([shard, EncryptedAccountTests.sealed(laptop, "two")], "own ledger records only"),
            (
                [shard, Self.ledger(laptop, "\(laptop.deviceID)/head", extra: ["deleted": .bool(true)])],
                "never deleted"
            ),
        ] {
            let refused = try request(records)
            #expect(refused.status == 400, "\(refused.text)")
            #expect(refused.errorMessage.contains(why), "\(refused.errorMessage)")
            #expect(refused.errorMessage.contains("the ledger request is refused whole"), "\(refused.errorMessage)")
            #expect(try ledgerKeys().isEmpty, "nothing of it applied")
        }
        // A device that never pushed here has no ledger to send.
        let stranger = try request([Self.ledger(laptop, "stranger/head")], of: "stranger")
        #expect(stranger.status == 400, "\(stranger.text)")
        // Too many records for one device's ledger: refused on reading.
        let many = (0...Ledger.maxShards).map { Self.ledger(laptop, "\(laptop.deviceID)/\($0 % 256)") } + [head]
        #expect(try request(many).status == 400)

        let taken = try request([shard, head])
        let takenRejections = try Self.rejections(taken)
        #expect(takenRejections.isEmpty, "\(taken.text)")
        #expect(try ledgerKeys() == ["ledger/\(laptop.deviceID)/0", "ledger/\(laptop.deviceID)/head"])

        // Stamped two days ahead (a relay may be a day ahead): refused with the clock's code, as a push is
        // (the client stamps its next request no further than the server
        // takes), nothing of it applied.
        let before = try laptop.pullAll().records.filter { $0.key.hasPrefix("ledger/") }
        let ahead = try request([
            Self.ledger(laptop, "\(laptop.deviceID)/0", skewMilliseconds: 2 * 86_400_000),
            Self.ledger(laptop, "\(laptop.deviceID)/head", skewMilliseconds: 2 * 86_400_000),
        ])
        #expect(ahead.status == 422, "\(ahead.text)")
        #expect(ahead.errorCode == .clockSkew, "\(ahead.text)")
        #expect(try laptop.pullAll().records.filter { $0.key.hasPrefix("ledger/") } == before)
    }

    /// A relay of a device's new writes carries the pending records that
    /// count them: applied first and whole with it, or the relay is refused.
    @Test(arguments: StoreKind.allCases) func aRelaysPendingRecordsGoWithItWhole(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let (laptop, _) = try EncryptedAccountTests.encryptedAccount(fixture)
        laptop.protocolVersion = Wire.ledgerProtocol
        #expect(try Self.rejections(try laptop.push([EncryptedAccountTests.sealed(laptop, "rule")])).isEmpty)
        func relay(
            _ records: [ChangeRecord], ledger: [ChangeRecord], of device: String? = nil
        ) throws
            -> HTTPResponseParser.ParsedResponse
        {
            var relay = RelayRequest(records: records, keyID: laptop.keyID)
            relay.ledger = ledger
            relay.ledgerOf = device
            return try laptop.post("/v1/relay", body: relay.body())
        }
        func pending(_ device: String, _ slot: Int, extra: [String: JSONValue] = [:]) -> ChangeRecord {
            var record = Self.ledger(laptop, "\(device)/pending/\(slot)", extra: extra)
            record.sequence = 0
            return record
        }
        let moved = EncryptedAccountTests.sealed(laptop, "moved")
        let held = { try laptop.pullAll().records.keys.sorted() }
        let before = try held()
        for (ledger, device, why) in [
            ([pending(laptop.deviceID, 1), pending("desktop-id", 2)], nil, "one device's pending records"),
            ([pending(laptop.deviceID, 1), pending(laptop.deviceID, 1)], nil, "each slot once"),
            ([Self.ledger(laptop, "\(laptop.deviceID)/head")], nil, "one device's pending records"),
            ([pending(laptop.deviceID, 1)], laptop.deviceID, "a ledger request carries no"),
            ([pending(laptop.deviceID, 1, extra: ["deleted": .bool(true)])], nil, "the relay is refused whole"),
        ] as [([ChangeRecord], String?, String)] {
            let refused = try relay([moved], ledger: ledger, of: device)
            #expect(refused.status == 400, "\(refused.text)")
            #expect(refused.errorMessage.contains(why), "\(refused.errorMessage)")
            #expect(try held() == before, "nothing of it applied")
        }
        let taken = try relay([moved], ledger: [pending(laptop.deviceID, 1)])
        #expect(try Self.rejections(taken).isEmpty, "\(taken.text)")
        #expect(
            try held()
                == (before + ["ledger/\(laptop.deviceID)/pending/1", "\(moved.collection.rawValue)/\(moved.key)"])
                .sorted())
    }
}
