import SyncCore
import Testing

@testable import Replica

/// The records pulls set aside, kept in the replica (``PulledAside``).
struct PulledAsideBoundTests {
    /// A server that sends ever new records that do not open cannot fill the
    /// replica: at most ``Replica/pulledAsideKept`` are kept, the newest, and
    /// a reason is kept to its first 500 bytes.
    @Test func recordsSetAsideAreBounded() throws {
        let fixture = try ReplicaFixture()
        let replica = fixture.replica
        fixture.wallMillis += 1
        let long = String(repeating: "é", count: 900)
        var skipped: [String] = []
        let batch = 300
        for round in 0..<4 {
            fixture.wallMillis += 1_000
            let aside = (0..<batch).map { index in
                PulledAside(
                    collection: "rules", filedKey: "h1.made-up-\(round)-\(index)", shownKey: nil,
                    sequence: Int64(round * batch + index), why: long)
            }
            try replica.applyPulled([], cursor: Int64((round + 1) * batch), epoch: "e", aside: aside, skipped: &skipped)
        }
        #expect(try replica.pulledAsideCount() == Replica.pulledAsideKept)
        // The oldest left: 200 of round 0 (a round comes at one time).
        let kept = try replica.pulledAside(limit: 20_000)
        #expect(kept.count == Replica.pulledAsideKept)
        #expect(kept.filter { $0.filedKey.hasPrefix("h1.made-up-0-") }.count == batch - 200)
        #expect(kept.filter { $0.filedKey.hasPrefix("h1.made-up-3-") }.count == batch)
        let newest = try replica.pulledAside(limit: 1).first
        #expect(newest?.why.utf8.count ?? 0 <= Replica.pulledAsideWhyBytes && newest?.why.hasPrefix("éé") == true)
        #expect(try replica.syncState().pullCursor == Int64(4 * batch))
    }
}
