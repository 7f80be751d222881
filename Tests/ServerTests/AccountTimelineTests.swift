import HTTP
import JSON
import SyncCore
import Testing
import TestSupport
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
        #expect(aliceBefore == bobBefore && aliceBefore == storeBefore, "no account has a timeline of its own yet (an upgrade changes nothing)")
        // Alice's client says it has seen far past her account: a new epoch for her, and only her.
        let beyond = try alice.pull(since: 999_999_999)
        #expect(beyond.status == 200)
        let aliceAfter = try Self.epoch(alice)
        #expect(aliceAfter != aliceBefore && aliceAfter.hasPrefix(storeBefore) && SessionRules.isPlainEpoch(aliceAfter), "\(aliceAfter)")
        #expect(try Self.epoch(bob) == bobBefore)
        #expect(fixture.store.epoch == storeBefore)
        // Again and again: still only hers; her records stay.
        for _ in 0..<3 { _ = try alice.pull(since: 999_999_999) }
        #expect(try Self.epoch(bob) == bobBefore)
        #expect(try alice.pullAll().records.count == 1 && bob.pullAll().records.count == 1)
        // A push past what the account applied (a stream the store lost) moves only that account too.
        let carol = try fixture.device("carol", "desk")
        carol.protocolVersion = Wire.protocolVersion
        #expect(try carol.push([carol.change("a.example", ["browser": .string("firefox")])]).status == 200)
        let carolBefore = try Self.epoch(carol)
        carol.nextSequence = 5
        let gap = try carol.push([carol.change("b.example", ["browser": .string("firefox")])])
        #expect(gap.errorCode == .gap, "\(gap.text)")
        #expect(try Self.epoch(carol) != carolBefore, "the store lost what it acknowledged to her: a rollback of her account")
        #expect(try Self.epoch(bob) == bobBefore)
    }

    /// The operator's reset gives the account a timeline of its own: every
    /// machine of it re-syncs and sends what it holds.
    @Test(arguments: StoreKind.allCases) func aResetMovesOnlyItsAccount(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let alice = try fixture.device("alice", "laptop")
        let bob = try fixture.device("bob", "phone")
        for device in [alice, bob] { device.protocolVersion = Wire.protocolVersion }
        alice.signingKey = EncryptedAccountTests.firstSigner
        #expect(try EncryptedAccountTests.encrypt(alice).status == 200)
        let (aliceBefore, bobBefore) = (try Self.epoch(alice), try Self.epoch(bob))
        #expect(try fixture.store.resetEncryption(account: "alice"))
        #expect(try Self.epoch(alice) != aliceBefore)
        #expect(try Self.epoch(bob) == bobBefore)
    }
}
