import Replica
import SyncClient
import SyncCore
import Synchronization
import TestSupport
import Testing

/// A sync stopped by whoever started it (a window's Stop,
/// ``SyncClient/Options/stopRequested``) ends before its next request,
/// keeps what came before, records no problem, and the next sync goes on
/// from there, losing nothing.
@Suite struct StopTests {
    @Test(arguments: [1, 3, 6, 9]) func aSyncStoppedAfterSomeRequestsLosesNothing(_ requests: Int) throws {
        let world = try SyncWorld()
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        for index in 0..<23 { try a.replica.write(.settings, key: "a\(index)", changes: ["value": .int(Int64(index))]) }
        try world.sync(a)
        for index in 0..<17 { try b.replica.write(.settings, key: "b\(index)", changes: ["value": .int(Int64(index))]) }
        // Stopped once `requests` requests were asked for: b has pushed and pulled part of it.
        let asked = Atomic<Int>(0)
        let client = try world.client(b) { asked.add(1, ordering: .relaxed).newValue > requests }
        #expect(throws: SyncError.cancelled) { try client.sync() }
        #expect(asked.load(ordering: .relaxed) == requests + 1, "stopped at the first request past the limit")
        let problem = try b.replica.syncState().problem
        #expect(problem.isEmpty, "a stop asked for is no problem: \(problem)")
        // The next syncs go on from there: both machines hold everything.
        try world.sync(b)
        try world.sync(a)
        for machine in [a, b] {
            let keys = Set(try machine.replica.records(.settings).map(\.0).filter { !$0.hasPrefix("device_name/") })
            #expect(keys.count == 40, "\(machine.name): \(keys.count)")
        }
        #expect(try b.replica.unpushedCount() == 0)
    }
}
