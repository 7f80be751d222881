import BrsyncServer
import Foundation
import HTTP
import JSON
import Model
import Net
import Replica
import SyncClient
import SyncCore
import TestSupport
import Testing

/// No account can hurt another: one account's token does everything it can
/// to the server — moves its own timeline again and again, pushes records
/// near every limit, tries to walk its clock forward, pushes records that
/// are not valid, reads metrics — while another account's machines keep
/// syncing with the real client: no full re-sync, no relay, no error, every
/// rule where it was.
@Suite struct NoisyNeighbourTests {
    /// The noisy account's own client, speaking raw HTTP.
    final class Noisy: @unchecked Sendable {
        // Used by the test's thread only.
        let client: HTTPClient
        let token: String
        var clock = HybridLogicalClock(device: "noisy0000000001")
        var next: Int64 = 1
        var chain = ""

        init(world: SyncWorld, token: String) throws {
            client = HTTPClient(
                .init(
                    address: SocketAddress(host: "127.0.0.1", port: world.port), serverName: "localhost",
                    tls: try TLSContext.client(caFile: world.caFile)))
            self.token = token
        }

        var headers: HTTPHeaders {
            ["Authorization": "Bearer \(token)", Wire.protocolHeader: String(Wire.protocolVersion)]
        }

        func get(_ target: String) throws -> Int {
            try client.send(method: "GET", target: target, headers: headers).status
        }

        /// Pushes `count` changes made of `fields`, stamped `skew` ahead; the status.
        func push(count: Int, fields: [String: JSONValue], skew: Int64 = 0) throws -> Int {
            let now = Int64(Date().timeIntervalSince1970 * 1000) + skew
            var changes: [ChangeRecord] = []
            for _ in 0..<count {
                let stamp = clock.tick(wallMillis: now)
                var versions = VersionVector()
                versions.increment("noisy0000000001")
                changes.append(
                    ChangeRecord(
                        sequence: next, collection: .settings, key: "noise\(next)",
                        state: RecordState(
                            fields: fields.mapValues { StampedValue($0, stamp: stamp) }, versions: versions)))
                next += 1
            }
            let request = PushRequest(
                device: "noisy0000000001", from: changes[0].sequence, to: changes.last!.sequence, changes: changes,
                base: changes[0].sequence == 1 ? nil : chain)
            let answer = try client.send(method: "POST", target: "/v1/push", headers: headers, body: request.body())
            if answer.status == 200, let last = ChangeRecord.chain(changes, after: chain).last {
                chain = last
            } else {
                next = changes[0].sequence
            }
            return answer.status
        }
    }

    @Test(arguments: StoreKind.allCases) func oneAccountCannotDisturbAnother(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let (y1, y2) = (try world.machine("y1", account: "bob"), try world.machine("y2", account: "bob"))
        for (machine, site) in [(y1, "one.example"), (y2, "two.example")] {
            try KeyChangeTests.rule(machine, site)
            try world.sync(machine)
        }
        try world.sync(y1)
        let noisy = try Noisy(world: world, token: try world.machine("x", account: "alice").token)
        /// Bob's machines after each thing Alice's token does: quiet syncs.
        func bobIsUndisturbed(_ what: String) throws {
            for machine in [y1, y2] {
                let summary = try world.sync(machine)
                #expect(
                    !summary.fullResync && summary.relayed == 0 && summary.newDeviceID == nil
                        && summary.problems.isEmpty,
                    "\(what): \(machine.name) \(summary)")
                #expect(
                    try SyncWorld.rules(machine.replica).keys.sorted() == ["one.example", "two.example"], "\(what)")
            }
        }
        // Her timeline, moved again and again.
        for _ in 0..<5 { #expect(try noisy.get("/v1/pull?since=999999999") == 200) }
        try bobIsUndisturbed("a cursor far past her account")
        // Records near every limit: 63 fields of 60 KB of JSON each (control characters escape to six bytes), one per push.
        let wide = Dictionary(
            uniqueKeysWithValues: (0..<63).map {
                ("f\($0)", JSONValue.string(String(repeating: "\u{1}", count: 10 * 1024)))
            })
        for _ in 0..<4 { #expect(try noisy.push(count: 1, fields: wide) == 200) }
        #expect(try noisy.get("/v1/pull?since=0&limit=5000") == 200)
        try bobIsUndisturbed("records near every limit")
        // Her clock walked forward, and records that are not valid.
        #expect(try noisy.push(count: 2, fields: ["value": .int(1), "deleted": .object(["v": .string("x")])]) == 200)
        #expect(try noisy.push(count: 1, fields: ["value": .int(1)], skew: 4 * 60_000) == 200)
        #expect(try noisy.push(count: 1, fields: ["value": .int(1)], skew: 8 * 60_000) == 422)
        try bobIsUndisturbed("a clock walked forward and records that are not valid")
        // What the server knows of everyone is not on the sync port.
        #expect(try noisy.get("/metrics") == 404)
        // Bob's clock was never moved by hers: his next edit is stamped by his own.
        try KeyChangeTests.rule(y1, "three.example")
        try world.sync(y1)
        let stamps = try y1.replica.records(.rules).compactMap { $0.state.fields["pattern"]?.stamp.wallMillis }
        #expect(stamps.allSatisfy { $0 < Int64(Date().timeIntervalSince1970 * 1000) + 60_000 })
    }
}
