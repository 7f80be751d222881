import Foundation
import Model
import Storage
import TestSupport

@testable import Replica

/// A replica in a temporary home with a controllable clock.
final class ReplicaFixture: @unchecked Sendable {
    // Used from one test at a time; the clock is only touched by that test's thread.
    let directory: TemporaryDirectory
    var wallMillis: Int64 = 1_700_000_000_000
    lazy var replica: Replica = try! Replica.initialize(
        home: directory.path, deviceName: "test", now: { [unowned self] in wallMillis }
    ).replica

    init() throws {
        directory = try TemporaryDirectory(prefix: "brsync-replica")
    }

    deinit { directory.remove() }

    var home: String { directory.path }
    var file: String { "\(home)/\(Replica.fileName)" }

    /// Adds a browser usable here.
    func usable(_ id: String) throws {
        try replica.addBrowser(id: id, name: nil, format: nil, scheme: nil, exec: "\(id) %u")
    }
}
