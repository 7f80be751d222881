import Replica
import SyncClient
import SyncCore
import TestSupport
import Testing

/// A readable account's records travel compressed both ways (gzip, once
/// the server said it takes it), and arrive whole: the bytes on the wire a
/// record are a fraction of its JSON.
@Suite struct CompressedSyncTests {
    @Test func aReadableAccountsRecordsTravelCompressed() throws {
        let world = try SyncWorld()
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        let count = 300
        for index in 0..<count {
            try a.replica.write(
                .rules, key: "site\(index).example.com",
                changes: ["pattern": .string("site\(index).example.com"), "browser": .string("firefox")])
        }
        let pushed = try world.sync(a)
        #expect(pushed.pushed >= count)
        let sentPerChange = pushed.bytesSent / max(1, pushed.pushed)
        // As JSON a change is ~300 bytes; compressed, well under half.
        #expect(sentPerChange < 120, "\(pushed.bytesSent) bytes for \(pushed.pushed) changes")
        let pulled = try world.sync(b)
        #expect(pulled.pulled >= count)
        let receivedPerRecord = pulled.bytesReceived / max(1, pulled.pulled)
        #expect(receivedPerRecord < 120, "\(pulled.bytesReceived) bytes for \(pulled.pulled) records")
        #expect(try SyncWorld.rules(b.replica) == (try SyncWorld.rules(a.replica)), "every rule arrived whole")
    }
}
