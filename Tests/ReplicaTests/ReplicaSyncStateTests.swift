import Foundation
import JSON
import Model
import Storage
import SyncCore
import SystemServices
import TestSupport
import Testing

@testable import Replica

@Suite struct ReplicaSyncStateTests {
    /// A machine whose clock is an hour slow stamps in the server's time once
    /// it has heard from the server, and keeps doing so offline.
    @Test func editsAreStampedWithTheServersClock() throws {
        let fixture = try ReplicaFixture()
        try fixture.usable("firefox")
        let server = HLCTimestamp(wallMillis: fixture.wallMillis + 3_600_000, counter: 0, device: "server")
        try fixture.replica.observeServerClock(server)
        #expect(try fixture.replica.syncState().clockOffsetMilliseconds == 3_600_000)
        fixture.wallMillis += 10
        try fixture.replica.addRule(pattern: "a.example", browser: "firefox", priority: nil)
        let stamp = try #require(try fixture.replica.record(.rules, key: "a.example")?.fields["browser"]?.stamp)
        #expect(stamp > server)
        #expect(abs(stamp.wallMillis - server.wallMillis) < 1000, "stamped in the server's time")
        let reopened = try Replica.open(home: fixture.home, now: { [fixture] in fixture.wallMillis })
        try reopened.addRule(pattern: "b.example", browser: "firefox", priority: nil)
        let offline = try #require(try reopened.record(.rules, key: "b.example")?.fields["browser"]?.stamp)
        #expect(offline.wallMillis >= server.wallMillis, "the offset is persisted")
    }

    /// An answer's clock offset costs no commit of its own: it is used at
    /// once, written with the next write (one that fails keeps it for the
    /// one after), and at the latest by `persistServerTime`.
    @Test func theClockOffsetOfAnAnswerIsWrittenWithTheNextWrite() throws {
        let fixture = try ReplicaFixture()
        let replica = fixture.replica
        let file = try Database(path: fixture.file)
        func stored() throws -> String? {
            let value = try file.scalar("SELECT value FROM meta WHERE key = 'clock_offset'")
            return value?.stringValue
        }
        try replica.observeServerTime(fixture.wallMillis + 5_000)
        #expect(try stored() == nil, "not written by itself")
        #expect(try replica.syncState().clockOffsetMilliseconds == 5_000)
        #expect(try replica.serverTime() == fixture.wallMillis + 5_000)
        try fixture.usable("firefox") // a write
        #expect(try stored() == "5000")

        struct Stop: Error {}
        try replica.observeServerTime(fixture.wallMillis - 2_000)
        #expect(throws: Stop.self) { try replica.transaction { throw Stop() } }
        #expect(try stored() == "5000", "rolled back with the write that failed")
        #expect(try replica.syncState().clockOffsetMilliseconds == -2_000)
        try replica.persistServerTime()
        #expect(try stored() == "-2000")
        try replica.persistServerTime() // nothing pending: nothing written
        #expect(try stored() == "-2000")
    }

    @Test func unpushedChangesAndPulledPagesAreTrackedInTransactions() throws {
        let fixture = try ReplicaFixture()
        try fixture.usable("firefox")
        try fixture.replica.addRule(pattern: "a.example", browser: "firefox", priority: nil)
        let changes = try fixture.replica.unpushedChanges(after: 0, limit: 100)
        #expect(changes.map(\.sequence) == [1, 2])
        #expect(try fixture.replica.unpushedCount() == 2)
        try fixture.replica.markPushed(through: 2)
        #expect(try fixture.replica.unpushedCount() == 0)
        // A pulled record from elsewhere merges in, with its cursor, and logs no local change.
        let other = HLCTimestamp(wallMillis: fixture.wallMillis + 5, counter: 0, device: "other")
        let pulled = ChangeRecord(
            sequence: 7, collection: .rules, key: "b.example",
            state: RecordState(
                fields: [
                    "pattern": StampedValue(.string("b.example"), stamp: other),
                    "browser": StampedValue(.string("firefox"), stamp: other),
                ],
                versions: VersionVector(["other": 1])))
        let before = try fixture.replica.changeCount()
        #expect(try fixture.replica.applyPulled([pulled], cursor: 7, epoch: "e1") == 1)
        #expect(try fixture.replica.changeCount() == before)
        #expect(try fixture.replica.syncState().pullCursor == 7)
        #expect(try fixture.replica.rules().map(\.pattern).contains("b.example"))
        // A failing page leaves the cursor where it was.
        try fixture.replica.database.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON records BEGIN SELECT RAISE(ABORT, 'no'); END")
        let next = ChangeRecord(sequence: 8, collection: .rules, key: "c.example", state: pulled.state)
        #expect(throws: (any Error).self) { try fixture.replica.applyPulled([next], cursor: 8, epoch: "e1") }
        #expect(try fixture.replica.syncState().pullCursor == 7)
    }

    /// Each change keeps the sealed format it was first sent in: a change
    /// pinned to format 1 stays so after the account turns to format 2
    /// (its retry sends the same bytes); one never sent takes the format of
    /// its first push, or format 2 when it was logged while the account was
    /// marked so. The account's mark is kept, never taken back by a
    /// later answer, and a new server starts over.
    @Test func aChangeKeepsTheSealedFormatItWasFirstSentIn() throws {
        let fixture = try ReplicaFixture()
        try fixture.usable("firefox")
        try fixture.replica.addRule(pattern: "a.example", browser: "firefox", priority: nil)
        func formats() throws -> [Wire.SealedFormat?] {
            try fixture.replica.unpushedChanges(after: 0, limit: 10).map(\.sealedFormat)
        }
        #expect(try formats().allSatisfy { $0 == nil }, "never sent")
        let first = try fixture.replica.unpushedChanges(after: 0, limit: 10).map(\.sequence)
        try fixture.replica.pinSealedFormat(.one, of: first)
        try fixture.replica.pinSealedFormat(.two, of: first)
        #expect(try formats().allSatisfy { $0 == .one })

        #expect(try fixture.replica.sealedFormat() == .one)
        try fixture.replica.noteSealedFormat(.two)
        try fixture.replica.noteSealedFormat(.one)
        #expect(try fixture.replica.sealedFormat() == .two, "the mark is kept")
        // Logged while the account is marked: pinned to format 2 at once,
        // before any push (which then pins nothing).
        try fixture.replica.addRule(pattern: "b.example", browser: "firefox", priority: nil)
        let second = try fixture.replica.unpushedChanges(after: first.last!, limit: 10).map(\.sequence)
        #expect(try formats() == first.map { _ in .one } + second.map { _ in .two }, "pinned when logged")
        try fixture.replica.pinSealedFormat(.one, of: second)
        #expect(try formats() == first.map { _ in .one } + second.map { _ in .two })

        try fixture.replica.setRemote(url: "https://a.example:8443", caFile: nil)
        try fixture.replica.setRemote(url: "https://b.example:8443", caFile: nil)
        #expect(try fixture.replica.sealedFormat() == .one, "a new server starts over")
        #expect(
            try formats() == first.map { _ in .one } + second.map { _ in .two },
            "pins hold: the same server under another name gets the same bytes")

        // Starting over on the server (a new key, or `key forget`) sends
        // every change afresh: the mark and the pins are the old account's.
        try fixture.replica.noteSealedFormat(.two)
        try fixture.replica.endEncryptedSync()
        #expect(try fixture.replica.sealedFormat() == .one)
        #expect(try formats().allSatisfy { $0 == nil })
    }
}
