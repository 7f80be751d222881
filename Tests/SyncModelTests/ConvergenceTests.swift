import BrsyncServer
import Foundation
import HTTP
import Logging
import Model
import Net
import Replica
import SyncClient
import SyncCore
import Testing
import TestSupport

/// Model-based test: 3 to 6 machines make random edits and sync in random
/// orders through a proxy that drops answers after commit, duplicates requests
/// and answers 503; machines are "killed" mid-pull; clocks are skewed by up to
/// an hour and set back. After a final full sync, every replica and the server
/// hold the same state, equal to an oracle that takes, for every field, the
/// value with the highest (HLC, device) stamp among all edits ever made.
@Suite struct ConvergenceTests {
    /// Seeds to run: `BRSYNC_SYNC_SEEDS=N` runs N seeds from `BRSYNC_TEST_SEED` (default 1 in CI).
    static var seeds: [UInt64] {
        let environment = ProcessInfo.processInfo.environment
        let first = environment["BRSYNC_TEST_SEED"].flatMap(UInt64.init) ?? 20_261_121
        let count = environment["BRSYNC_SYNC_SEEDS"].flatMap(Int.init) ?? 1
        return (0..<UInt64(max(1, count))).map { first + $0 }
    }

    @Test func replicasConvergeUnderFaults() throws {
        for seed in Self.seeds {
            print("ConvergenceTests seed: \(seed) (re-run with BRSYNC_TEST_SEED=\(seed))")
            try run(seed: seed)
        }
    }

    func run(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let directory = try TemporaryDirectory(prefix: "brsync-model")
        defer { directory.remove() }
        let caFile = try TestCertificates(in: directory).caFile
        var configuration = ServerConfiguration()
        configuration.listen = [SocketAddress(host: "127.0.0.1", port: 0)]
        configuration.certificateFile = directory.file("server.pem")
        configuration.keyFile = directory.file("server.key")
        configuration.defaultPullLimit = 3
        let store = try ServerStore(path: directory.file("server.sqlite"))
        var logger = Logger(label: "model")
        logger.logLevel = .critical
        let server = try SyncServer(configuration: configuration, store: store, logger: logger)
        let serverPort = try server.start()[0]
        defer { server.shutdown() }
        let proxy = try FaultProxy(upstreamPort: serverPort, caFile: caFile, certificateFile: directory.file("server.pem"),
                                   keyFile: directory.file("server.key"), seed: seed &* 31, faultRate: 0.3)
        defer { proxy.stop() }

        try store.addAccount("alice")
        let machineCount = Int.random(in: 3...6, using: &random)
        var machines: [SimulatedMachine] = []
        for index in 0..<machineCount {
            let skew = Int64.random(in: -3_600_000...3_600_000, using: &random)
            machines.append(try SimulatedMachine(name: "m\(index)", home: directory.file("m\(index)"),
                                                 token: try store.addDevice(account: "alice", name: "m\(index)"), skewMilliseconds: skew))
        }
        let remote = try RemoteURL(parsing: "https://127.0.0.1:\(proxy.port)")
        func client(_ machine: SimulatedMachine, direct: Bool = false) throws -> SyncClient {
            var options = SyncClient.Options()
            options.pushBatch = 4
            options.pullLimit = 3
            options.attempts = 8
            options.backoffMilliseconds = 1
            let target = direct ? try RemoteURL(parsing: "https://127.0.0.1:\(serverPort)") : remote
            return try SyncClient(replica: machine.replica, remote: target, token: machine.token, caFile: caFile, options: options)
        }
        // First contact teaches every machine the server's clock.
        for machine in machines { _ = try client(machine, direct: true).sync() }

        let browsers = ["firefox", "chrome", "brave", "work"]
        let patterns = ["github.com", "*.zoom.us", "example.com/docs", "news.example", "localhost:3000"]
        for _ in 0..<120 {
            let machine = machines.randomElement(using: &random)!
            let replica = machine.replica
            switch Int.random(in: 0..<12, using: &random) {
            case 0: _ = try? replica.addBrowser(id: browsers.randomElement(using: &random)!, name: nil, format: nil, scheme: nil, exec: "b %u")
            case 1: _ = try? replica.setBrowserEnabled(named: browsers.randomElement(using: &random)!, Bool.random(using: &random))
            case 2: _ = try? replica.removeBrowser(named: browsers.randomElement(using: &random)!)
            case 3, 4: _ = try? replica.addRule(pattern: patterns.randomElement(using: &random)!, browser: browsers.randomElement(using: &random)!,
                                                priority: Bool.random(using: &random) ? nil : Int.random(in: 0...5, using: &random))
            case 5: _ = try? replica.removeRule(pattern: patterns.randomElement(using: &random)!)
            case 6: _ = try? replica.setDefaultBrowser(named: browsers.randomElement(using: &random)!)
            case 7: _ = try? client(machine).push()
            case 8: _ = try? client(machine).pull()
            case 9: _ = try? client(machine).sync()
            case 10: _ = try? client(machine).pullPage() // killed after one page
            default:
                // The clock is set back (never forward past the server's limit).
                machine.setSkew(machine.skewMilliseconds - Int64.random(in: 0...600_000, using: &random))
            }
        }
        // Final full sync, directly: everyone pushes, then everyone pulls.
        for _ in 0..<2 {
            for machine in machines { _ = try client(machine, direct: true).sync() }
        }

        // The oracle: every edit ever made, the highest stamp per field.
        var oracle: [String: [String: StampedValue]] = [:]
        for machine in machines {
            for change in try machine.replica.unpushedChanges(after: 0, limit: 100_000) {
                let id = "\(change.collection.rawValue)/\(change.key)"
                for (field, register) in change.state.fields where oracle[id]?[field].map({ register.stamp > $0.stamp }) ?? true {
                    oracle[id, default: [:]][field] = register
                }
            }
        }
        let serverState = try Dictionary(uniqueKeysWithValues: store.pull(since: 0, limit: 100_000, device: store.devices(account: "alice")[0]).changes
            .map { ("\($0.collection.rawValue)/\($0.key)", $0.state) })
        #expect(serverState.mapValues(\.fields) == oracle, "server differs from the oracle, seed \(seed)")
        for machine in machines {
            var local: [String: RecordState] = [:]
            for collection in RecordCollection.allCases {
                for (key, state) in try machine.replica.records(collection) { local["\(collection.rawValue)/\(key)"] = state }
            }
            #expect(local.mapValues(\.fields) == oracle, "\(machine.name) differs from the oracle, seed \(seed)")
            #expect(local.mapValues(\.versions) == serverState.mapValues(\.versions), "\(machine.name)'s version vectors, seed \(seed)")
            #expect(try machine.replica.unpushedCount() == 0)
        }
        let counts = proxy.counts.withLock { $0 }
        print("seed \(seed): \(machineCount) machines, \(oracle.count) records; faults: \(counts.dropped) answers dropped, \(counts.duplicated) requests duplicated, \(counts.busy) 503s, of \(counts.forwarded) forwarded")
        #expect(counts.dropped + counts.duplicated + counts.busy > 0, "faults were injected")
    }
}
