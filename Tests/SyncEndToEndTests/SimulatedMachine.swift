import Replica
import SyncCore
import SystemServices

/// A replica with a clock of its own (skewed, and sometimes set back).
final class SimulatedMachine: @unchecked Sendable {
    // Used by the test thread only.
    let name: String
    let replica: Replica
    var token: String
    var skewMilliseconds: Int64
    let clock: SkewedClock
    /// The protocol its syncs say (``SyncClient/Options/protocolVersion``).
    var protocolVersion = Wire.protocolVersion

    init(name: String, home: String, token: String, skewMilliseconds: Int64) throws {
        self.name = name
        self.token = token
        self.skewMilliseconds = skewMilliseconds
        let clock = SkewedClock()
        clock.skew = skewMilliseconds
        replica = try Replica.initialize(home: home, deviceName: name, now: { clock.now() }).replica
        self.clock = clock
    }

    /// A machine around a replica opened elsewhere (a copied or restored home), on this machine's clock.
    init(name: String, replica: Replica, token: String) {
        self.name = name
        self.replica = replica
        self.token = token
        skewMilliseconds = 0
        clock = SkewedClock()
    }

    func setSkew(_ value: Int64) {
        skewMilliseconds = value
        clock.skew = value
    }
}

final class SkewedClock: @unchecked Sendable {
    // Read and written by the test thread only.
    var skew: Int64 = 0
    func now() -> Int64 { Clock.wallMillis() + skew }
}
