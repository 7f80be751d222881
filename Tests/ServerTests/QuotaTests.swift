import Foundation
import JSON
import Postgres
import Storage
import SyncCore
import TestSupport
import Testing

@testable import BrsyncServer
@testable import ServerStore

/// No account fills the server for the others: what an account holds is
/// counted whatever writes it, and a push or relay past a limit is refused
/// whole, nothing applied (a relay committed in parts, at the part that
/// crosses it: `RelayPartsTests`).
@Suite struct QuotaTests {
    func usage(_ fixture: ServerFixture, _ account: String) throws -> Store.Account {
        try #require(try fixture.store.accounts().first { $0.name == account })
    }

    @Test(arguments: StoreKind.allCases) func aPushOrRelayPastALimitIsRefusedWhole(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let laptop = try fixture.device("alice", "laptop", protocol: Wire.protocolVersion)
        #expect(try usage(fixture, "alice").limits == Store.Limits())
        try fixture.store.setLimits(account: "alice", records: 3, bytes: nil, devices: nil)
        #expect(
            try laptop.push([
                laptop.change("one.example", ["browser": .string("a")]),
                laptop.change("two.example", ["browser": .string("a")]),
            ]).status == 200)
        // Two more would make four: refused whole, nothing applied, the limit named.
        let refused = try laptop.push([
            laptop.change("three.example", ["browser": .string("a")]),
            laptop.change("four.example", ["browser": .string("a")]),
        ])
        #expect(
            refused.status == 507 && refused.errorCode == .quotaExceeded && refused.errorMessage.contains("limit of 3"),
            "\(refused.text)")
        #expect(try laptop.pullAll().records.count == 2)
        #expect(try usage(fixture, "alice").records == 2)
        // One more fits; the same push again (a retry) is acknowledged.
        laptop.nextSequence = 3
        #expect(try laptop.push([laptop.change("three.example", ["browser": .string("a")])]).status == 200)
        // Past a lowered limit, what does not grow the account is taken: an edit, a deletion.
        try fixture.store.setLimits(account: "alice", records: 1, bytes: nil, devices: nil)
        #expect(try laptop.push([laptop.change("one.example", ["browser": .string("b")])]).status == 200)
        #expect(try laptop.push([laptop.change("two.example", ["deleted": .bool(true)])]).status == 200)
        // A relay is held to it too.
        let relay = RelayRequest(records: [laptop.change("five.example", ["browser": .string("a")])])
        let relayed = try laptop.post("/v1/relay", body: relay.body())
        #expect(relayed.status == 507 && relayed.errorCode == .quotaExceeded, "\(relayed.text)")
        // Bytes: a record larger than what is left.
        try fixture.store.setLimits(account: "alice", records: 100, bytes: 4096, devices: nil)
        laptop.nextSequence = 6 // the relayed record took no change number
        let big = try laptop.push([
            laptop.change("big.example", ["browser": .string(String(repeating: "x", count: 5000))])
        ])
        #expect(big.status == 507 && big.errorMessage.contains("bytes"), "\(big.text)")
        #expect(try laptop.pullAll().records.count == 3)
        // Another account is not touched by alice's limits.
        let bob = try fixture.device("bob", "phone")
        #expect(
            try bob.push([bob.change("bob.example", ["browser": .string(String(repeating: "y", count: 5000))])]).status
                == 200)
    }

    /// The counts stay exact whatever writes the records: pushes, edits,
    /// relays, a purge, the deletion of a key change, an account removed.
    @Test(arguments: StoreKind.allCases) func theCountsFollowEveryWrite(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let laptop = try fixture.device("alice", "laptop", protocol: Wire.protocolVersion)
        func check(_ what: String) throws {
            let counted = try usage(fixture, "alice")
            let stored = try fixture.store.records(account: "alice")
            #expect(counted.records == Int64(stored.count), "\(what)")
            let bytes = stored.reduce(Int64(0)) {
                $0
                    + Int64(
                        RecordState.encodeFields($1.state.fields).utf8.count
                            + RecordState.encodeVersions($1.state.versions).utf8.count)
            }
            #expect(counted.bytes == bytes, "\(what): counted \(counted.bytes), stored \(bytes)")
        }
        #expect(
            try laptop.push((0..<20).map { laptop.change("site\($0).example", ["browser": .string("firefox")]) }).status
                == 200)
        try check("a push")
        #expect(
            try laptop.push(
                (0..<5).map { laptop.change("site\($0).example", ["browser": .string("a much longer browser name")]) }
            ).status == 200)
        try check("edits")
        #expect(
            try laptop.push((5..<10).map { laptop.change("site\($0).example", ["deleted": .bool(true)]) }).status == 200
        )
        let relay = RelayRequest(records: [laptop.change("relayed.example", ["browser": .string("x")])])
        #expect(try laptop.post("/v1/relay", body: relay.body()).status == 200)
        try check("deletions and a relay")
        let cursor = try laptop.pullAll().cursor
        _ = try laptop.pull(since: cursor) // every device has the tombstones now
        #expect(try fixture.store.purgeTombstones(retentionMilliseconds: -60_000) == 5)
        try check("a purge")
        laptop.signingKey = EncryptedAccountTests.firstSigner
        #expect(try EncryptedAccountTests.encrypt(laptop).status == 200)
        try check("the records deleted by encryption")
        #expect(try usage(fixture, "alice").records == 0)
    }

    /// SQLite: a push counts its new records itself, once, and leaves the
    /// trigger to count any other insert: nothing marks an account as
    /// counted by a writer after a push, a refused one or a relay.
    @Test func newRecordsAreCountedOnceAndOutsideWritesStillAre() throws {
        let fixture = try ServerFixture(.sqlite)
        let laptop = try fixture.device("alice", "laptop", protocol: Wire.protocolVersion)
        #expect(
            try laptop.push((0..<50).map { laptop.change("site\($0).example", ["browser": .string("firefox")]) }).status
                == 200)
        try fixture.store.setLimits(account: "alice", records: 51, bytes: nil, devices: nil)
        let refused = try laptop.push((50..<60).map { laptop.change("site\($0).example", ["browser": .string("x")]) })
        #expect(refused.status == 507, "\(refused.text)")
        let relay = RelayRequest(records: [laptop.change("relayed.example", ["browser": .string("x")])])
        #expect(try laptop.post("/v1/relay", body: relay.body()).status == 200)
        let database = try Database(path: fixture.directory.file("store.sqlite"))
        #expect(try database.scalar("SELECT COUNT(*) FROM accounts WHERE counted_by_writer <> 0")?.int64Value == 0)
        #expect(try usage(fixture, "alice").records == 51)
        // An operator's insert, outside brsyncd: the trigger counts it.
        let row = try #require(
            try database.queryFirst("SELECT fields, versions, seq FROM records WHERE key = 'site0.example'") {
                (fields: $0.string(0) ?? "", versions: $0.string(1) ?? "", seq: $0.int64(2) ?? 0)
            })
        let before = try usage(fixture, "alice")
        try database.run(
            """
            INSERT INTO records (account_id, collection, key, fields, versions, seq, updated_at)
            SELECT account_id, collection, 'outside.example', fields, versions, 100000, 0 FROM records WHERE key = 'site0.example'
            """)
        let after = try usage(fixture, "alice")
        #expect(after.records == before.records + 1)
        #expect(after.bytes == before.bytes + Int64(row.fields.utf8.count + row.versions.utf8.count))
    }

    /// Counts that writes made outside brsyncd moved away are put right by
    /// a recount, in one transaction, and only the account's own: its
    /// ledger records stay outside, another account's counts are left as
    /// they are right; an unknown name changes nothing.
    @Test(arguments: StoreKind.allCases) func aRecountPutsDriftedCountsRight(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let laptop = try fixture.device("alice", "laptop", protocol: Wire.protocolVersion)
        #expect(
            try laptop.push((0..<5).map { laptop.change("site\($0).example", ["browser": .string("firefox")]) }).status
                == 200)
        let bob = try fixture.device("bob", "desktop", protocol: Wire.protocolVersion)
        #expect(try bob.push([bob.change("bob.example", ["browser": .string("x")])]).status == 200)
        let (alice, bobs) = (try usage(fixture, "alice"), try usage(fixture, "bob"))
        let drift = "UPDATE accounts SET record_count = 99, byte_count = 7 WHERE name = 'alice'"
        if let postgres = fixture.postgres {
            try PostgresConnection(postgres).run(drift)
        } else {
            try Database(path: fixture.directory.file("store.sqlite")).run(drift)
        }
        #expect(try usage(fixture, "alice").records == 99)
        #expect(throws: ServerError.self) { try fixture.store.recount(account: "nobody") }
        #expect(try usage(fixture, "alice").records == 99, "an unknown name changes nothing")
        let counted = try fixture.store.recount()
        let right = Store.Usage(records: Int64(alice.records), bytes: alice.bytes)
        #expect(
            counted == [
                .init(account: "alice", before: Store.Usage(records: 99, bytes: 7), after: right),
                .init(
                    account: "bob", before: Store.Usage(records: 1, bytes: bobs.bytes),
                    after: Store.Usage(records: 1, bytes: bobs.bytes)),
            ], "\(counted)")
        #expect(try usage(fixture, "alice") == alice)
        #expect(try fixture.store.recount(account: "alice").map(\.before) == [right])
    }

    @Test(arguments: StoreKind.allCases) func devicesPastTheLimitAreRefused(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        _ = try fixture.device("alice", "laptop")
        try fixture.store.setLimits(account: "alice", records: nil, bytes: nil, devices: 2)
        _ = try fixture.store.addDevice(account: "alice", name: "desktop")
        #expect { try fixture.store.addDevice(account: "alice", name: "phone") } throws: { error in
            guard case ServerError.quotaExceeded(let what, _, let limit) = error else { return false }
            return what == "devices" && limit == 2
        }
        #expect(throws: ServerError.self) {
            try fixture.store.enroll(account: "alice", device: "tablet", adding: true, validMilliseconds: 60_000)
        }
        // A new join code for an existing device is not a device more.
        _ = try fixture.store.enroll(account: "alice", device: "desktop", adding: false, validMilliseconds: 60_000)
        // Limits are at least 1; an unknown account is named.
        #expect(throws: ServerError.self) {
            try fixture.store.setLimits(account: "alice", records: 0, bytes: nil, devices: nil)
        }
        #expect(throws: ServerError.self) {
            try fixture.store.setLimits(account: "nobody", records: 5, bytes: nil, devices: nil)
        }
    }
}

/// Each device id a token pushes under is a stream the store keeps: an
/// account holds at most ``Store/maxStreamsPerAccount`` of them, so one
/// token cannot grow the store without bound by inventing device ids.
@Suite struct StreamLimitTests {
    @Test func anAccountKeepsAtMostItsStreams() throws {
        let fixture = try ServerFixture(.sqlite)
        let device = try fixture.store.authenticate(token: try fixture.device("alice", "laptop").token)
        let stamp = HLCTimestamp(wallMillis: fixture.store.currentMillis(), counter: 0, device: "d0")
        func push(_ id: String) throws -> PushResponse {
            let change = ChangeRecord(
                sequence: 1, collection: .rules, key: "k",
                state: RecordState(
                    fields: [
                        "browser": StampedValue(
                            .string("x"), stamp: HLCTimestamp(wallMillis: stamp.wallMillis, counter: 0, device: id))
                    ],
                    versions: VersionVector([id: 1])))
            return try fixture.store.push(
                PushRequest(device: id, from: 1, to: 1, changes: [change]), from: device, authority: .unsigned,
                maxClockOffsetMilliseconds: 300_000)
        }
        for index in 0..<Int(Store.maxStreamsPerAccount) { _ = try push("d\(index)") }
        #expect(throws: ServerError.self) { try push("one-more") }
        do {
            _ = try push("one-more")
        } catch let error as ServerError {
            #expect(
                error.code == .quotaExceeded && error.description.contains("pushed under 1024 device ids"), "\(error)")
        }
        // A stream it has goes on.
        #expect(try push("d0").acknowledged == 1)
    }
}
