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

@Suite struct StoredRecordTests {
    @Test func directEncodingMatchesTheJSONValueForm() throws {
        let stamp = HLCTimestamp(wallMillis: 0x18b_cfe5_680a, counter: 0x2a, device: "dev-1")
        let fields: [String: StampedValue] = [
            "browser": StampedValue(.string("fire\"fox\n"), stamp: stamp),
            "priority": StampedValue(.int(-3), stamp: stamp),
            "deleted": StampedValue(.bool(false), stamp: stamp),
            "extra": StampedValue(.object(["b": .array([.null, .double(1.5)])]), stamp: stamp),
        ]
        let direct = RecordState.encodeFields(fields)
        #expect(direct == JSONValue.object(fields.mapValues(\.json)).jsonText)
        #expect(try StoredRecord.decode(fields: direct, versions: "{}").fields == fields)
        #expect(stamp.description == "0000018bcfe5680a-0000002a-dev-1")
        #expect(HLCTimestamp(text: "0000018bcfe5680a-0000002a-dev\"1") == nil, "device ids never need escaping")
    }
}

extension StoredRecordTests {
    /// The spliced pull answer is a pull response that says what the store holds.
    @Test(arguments: StoreKind.allCases) func pullTextIsThePullResponseOfWhatIsStored(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let device = try fixture.device("alice", "laptop")
        #expect(
            try device.push(
                (0..<7).map {
                    device.change("s\($0).example", ["browser": .string("b\"\($0)"), "priority": .int(Int64($0))])
                }
            ).status == 200)
        let stored = try fixture.store.records(account: "alice")
        for (since, limit) in [(Int64(0), 3), (3, 3), (6, 3), (7, 3), (0, 100)] {
            let text = try fixture.store.pullText(
                token: device.token, since: since, limit: limit, clientDevice: nil, origin: CursorOrigin(),
                reconciling: false, clientProtocol: Wire.protocolVersion, clientKeyID: nil, clientSigningKey: nil,
                chainOf: nil,
                maxBytes: 1 << 20)
            let page = try text.withUnsafeBufferPointer { bytes throws(Wire.ReadError) in
                try PullResponse(reading: bytes)
            }
            let expected = Array(stored.filter { $0.sequence > since }.prefix(limit))
            #expect(page.changes == expected)
            #expect(page.more == (stored.filter { $0.sequence > since }.count > limit))
            #expect(page.next == (page.more ? expected.last!.sequence : 7) && page.epoch == fixture.store.epoch)
        }
    }
}

@Suite struct TombstoneTests {
    /// A tombstone stays until every active device of the account has pulled past it.
    @Test(arguments: StoreKind.allCases) func tombstonesGoOnlyWhenEveryDeviceHasThem(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let laptop = try fixture.device("alice", "laptop")
        let desktop = try fixture.device("alice", "desktop")
        #expect(try laptop.push([laptop.change("gone.example", ["browser": .string("x")])]).status == 200)
        #expect(try laptop.push([laptop.change("gone.example", ["deleted": .bool(true)])]).status == 200)
        #expect(try laptop.push([laptop.change("kept.example", ["browser": .string("y")])]).status == 200)
        _ = try laptop.pullAll()
        #expect(
            try fixture.store.purgeTombstones(retentionMilliseconds: 0) == 0, "the desktop has not seen the deletion")
        let seen = try desktop.pullAll()
        #expect(seen.records["rules/gone.example"]?.state.isDeleted == true)
        // Cursors are acknowledged with the next pull.
        _ = try desktop.pull(since: seen.cursor)
        _ = try laptop.pull(since: seen.cursor)
        #expect(try fixture.store.purgeTombstones(retentionMilliseconds: 3_600_000) == 0, "younger than the retention")
        #expect(try fixture.store.purgeTombstones(retentionMilliseconds: 0) == 1)
        #expect(try fixture.store.counts().records == 1)
        // A revoked device does not hold tombstones back; a new device never sees the record.
        let phone = try fixture.device("alice", "phone")
        #expect(try phone.pullAll().records.keys.sorted() == ["rules/kept.example"])
    }
}
