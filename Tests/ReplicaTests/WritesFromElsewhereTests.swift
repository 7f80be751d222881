import JSON
import SyncCore
import Testing

@testable import Replica

/// Values under this device's id that a pull brings and the replica did
/// not hold are kept (``Replica/writesFromElsewhere()``), whatever their
/// stamps: another home's writes, which this device's ledger must name.
/// Its own values echoed back are not; a fork forgets them.
@Suite struct WritesFromElsewhereTests {
    static func pulled(_ key: String, field: String = "value", stamp: HLCTimestamp) -> ChangeRecord {
        ChangeRecord(
            sequence: 1, collection: .settings, key: key,
            state: RecordState(
                fields: [field: StampedValue(.string("on"), stamp: stamp)], versions: VersionVector([stamp.device: 1])))
    }

    @Test func anotherHomesWritesAreKeptAndItsOwnEchoesAreNot() throws {
        let fixture = try ReplicaFixture()
        let replica = fixture.replica
        let me = replica.deviceID
        try replica.write(.settings, key: "mine", changes: ["value": .string("here")])
        let own = try #require(try replica.record(.settings, key: "mine")?.fields["value"])
        var skipped: [String] = []
        // Its own value echoed back, another device's, and a value of its
        // id older than anything it wrote (another home's, before its own).
        let older = HLCTimestamp(wallMillis: own.stamp.wallMillis - 60_000, counter: 0, device: me)
        try replica.applyPulled(
            [
                ChangeRecord(
                    sequence: 1, collection: .settings, key: "mine",
                    state: try #require(try replica.record(.settings, key: "mine"))),
                Self.pulled(
                    "theirs", stamp: HLCTimestamp(wallMillis: own.stamp.wallMillis + 5, counter: 0, device: "phone")),
                Self.pulled("copy", stamp: older),
            ], cursor: 3, epoch: "e", skipped: &skipped)
        #expect(skipped.isEmpty, "\(skipped)")
        let kept = try replica.writesFromElsewhere()
        #expect(kept == [WriteFromElsewhere(collection: .settings, key: "copy", field: "value", stamp: older)])
        // Heard again at a newer stamp, the field keeps the newer one; forgetting the older one leaves it.
        let newer = HLCTimestamp(wallMillis: older.wallMillis + 1, counter: 0, device: me)
        try replica.applyPulled([Self.pulled("copy", stamp: newer)], cursor: 4, epoch: "e", skipped: &skipped)
        try replica.forgetWritesFromElsewhere(kept)
        #expect(try replica.writesFromElsewhere().map(\.stamp) == [newer])
        try replica.forgetWritesFromElsewhere(try replica.writesFromElsewhere())
        #expect(try replica.writesFromElsewhere().isEmpty)
        // A value of its own id that loses to what is held here is not held: not kept.
        try replica.applyPulled([Self.pulled("mine", stamp: older)], cursor: 5, epoch: "e", skipped: &skipped)
        #expect(try replica.writesFromElsewhere().isEmpty)
    }

    @Test func aForkForgetsTheOldIdsWrites() throws {
        let fixture = try ReplicaFixture()
        let replica = fixture.replica
        var skipped: [String] = []
        let stamp = HLCTimestamp(wallMillis: fixture.wallMillis, counter: 0, device: replica.deviceID)
        try replica.applyPulled([Self.pulled("copy", stamp: stamp)], cursor: 1, epoch: "e", skipped: &skipped)
        #expect(try replica.writesFromElsewhere().count == 1)
        try replica.forkDeviceID()
        #expect(try replica.writesFromElsewhere().isEmpty, "the old id is another device's now")
    }
}
