import Foundation
import HTTP
import Replica
import SyncClient
import SyncCore
import Synchronization
import TestSupport
import Testing

/// A replica an older brsync pulled (it was sent no withdrawals, and its
/// cursor passed them) asks for them once it reads them.
extension WithdrawalTests {
    /// In parts within the request line (seven devices of 16 slots: more
    /// than 100 keys); a server that does not answer is asked again a day
    /// later, not at every sync; one that does not know a withdrawal's key
    /// (older: `bad_request`) holds none, and is not asked again.
    @Test func theWithdrawalsAnOlderBrsyncMissedAreAskedForInPartsOnceADay() throws {
        let world = try SyncWorld(.sqlite)
        let machines = try (0..<8).map { try world.machine("m\($0)") }
        let (a, others) = (machines[0], Array(machines.dropFirst()))
        try LyingServerTests.rules(a, ["one.example"])
        _ = try KeyChangeTests.shareNewKey(world, from: a, with: others)
        for machine in others {
            try LyingServerTests.rules(machine, ["\(machine.name).example"])
            try world.sync(machine)
        }
        try world.sync(a)
        #expect(try a.replica.heldLedgerDevices().count == 7)
        #expect(try !a.replica.withdrawalsMayBeMissed(), "a replica made by this brsync lacks none")
        try a.replica.database.run("DELETE FROM meta WHERE key = 'withdrawals_read'")

        let asks = Mutex<[Int]>([])
        let mode = Mutex("silent")
        let liar = try LyingServer(
            in: world,
            answering: { request in
                guard request.target.hasPrefix("/v1/pull?keys=") else { return nil }
                let keys = request.target.split(separator: "&")[0].split(separator: ",").count
                asks.withLock { $0.append(keys) }
                switch mode.withLock({ $0 }) {
                case "silent": return HTTPResponse(status: 0)
                case "older":
                    return HTTPResponse(
                        status: 400, headers: ["Content-Type": "application/json"],
                        body: Array(#"{"error":"bad_request","message":"no such key"}"#.utf8))
                default: return nil
                }
            }, rewrite: { _, _, _ in nil })
        defer { liar.stop() }
        func asked(_ body: () throws -> Void) rethrows -> [Int] {
            asks.withLock { $0 = [] }
            try body()
            return asks.withLock { $0 }
        }

        // No answer: a problem of the sync, not its end; not asked at the next sync.
        let silent = try asked {
            let summary = try liar.serving(world) { try world.sync(a) }
            #expect(summary.problems.contains { $0.contains("withdrawals an older brsync was not sent") }, "\(summary)")
        }
        #expect(!silent.isEmpty)
        #expect(try asked { _ = try liar.serving(world) { try world.sync(a) } }.isEmpty, "a day later, not now")
        #expect(try a.replica.withdrawalsMayBeMissed())

        // A day later (as if), answered: 112 keys in two parts, then never again.
        try a.replica.database.run("DELETE FROM meta WHERE key = 'withdrawals_asked_at'")
        mode.withLock { $0 = "answer" }
        #expect(try asked { _ = try liar.serving(world) { try world.sync(a) } } == [100, 12])
        #expect(try !a.replica.withdrawalsMayBeMissed())
        #expect(try asked { _ = try liar.serving(world) { try world.sync(a) } }.isEmpty)

        // An older server does not know the key: it holds no withdrawal.
        try a.replica.database.run("DELETE FROM meta WHERE key = 'withdrawals_read'")
        mode.withLock { $0 = "older" }
        #expect(try asked { _ = try liar.serving(world) { try world.sync(a) } } == [100])
        #expect(try !a.replica.withdrawalsMayBeMissed())
    }
}
