import ContentCoding
import HTTP
import Replica
import SyncClient
import SyncCore
import Synchronization
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

    /// A machine that holds the account's key never asks for gzip, and
    /// refuses a compressed answer (a proxy that compresses on its own):
    /// a bad answer, nothing applied.
    @Test func anEncryptedAccountsMachineNeverTakesACompressedAnswer() throws {
        let world = try SyncWorld()
        let a = try world.machine("a")
        try KeyChangeTests.rule(a, "first.example")
        try world.sync(a)
        try KeyChangeTests.changeKey(world, a)
        try world.sync(a)
        let asked = Mutex<[String]>([])
        let liar = try LyingServer(
            in: world,
            answering: { request in
                guard request.target.hasPrefix("/v1/pull") else { return nil }
                asked.withLock { $0 += request.headers.values("Accept-Encoding") }
                let page = Array(#"{"changes":[],"next":0,"more":false,"epoch":"e","account":"a"}"#.utf8)
                return HTTPResponse(
                    status: 200, headers: ["Content-Type": "application/json", "Content-Encoding": "gzip"],
                    body: Gzip.compress(page))
            }, rewrite: { _, _, _ in nil })
        defer { liar.stop() }
        try KeyChangeTests.rule(a, "second.example")
        #expect { _ = try liar.serving(world) { try world.sync(a) } } throws: { error in
            "\(error)".contains("compressed an end-to-end encrypted account's answer")
        }
        #expect(asked.withLock { $0 }.isEmpty, "no Accept-Encoding: \(asked.withLock { $0 })")
        try world.sync(a)
        #expect(try a.replica.unpushedCount() == 0, "the next sync goes on")
    }
}
