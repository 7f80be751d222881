import BrsyncServer
import Foundation
import HTTP
import JSON
import Logging
import Model
import Net
import Replica
import SyncClient
import SyncCore
import Synchronization
import SystemServices
import TestSupport
import Testing

/// The server's clock, skewed by the test (set before start, jumped while serving).
final class ServerClock: Sendable {
    let skew = Atomic<Int64>(0)
    func now() -> Int64 { Clock.wallMillis() + skew.load(ordering: .relaxed) }
}

/// A sync on a thread of its own, for syncs that overlap others or edits.
final class BackgroundSync: @unchecked Sendable {
    // The client is used by the background thread only, until `wait()` returns.
    let client: SyncClient
    let done = DispatchSemaphore(value: 0)

    init(_ client: SyncClient) { self.client = client }

    func start() {
        Thread { [self] in
            _ = try? client.sync()
            done.signal()
        }.start()
    }

    func wait() { done.wait() }
}

/// One edit as the oracle sees it: which record, field, stamp and value.
struct Edit: Hashable {
    let record: String
    let field: String
    let stamp: HLCTimestamp
    let value: JSONValue
}
