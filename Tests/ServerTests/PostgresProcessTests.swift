import Foundation
import HTTP
import Model
import Net
import SyncCore
import Synchronization
import TestSupport
import Testing

@testable import BrsyncServer

/// Several real `brsyncd` processes on one PostgreSQL database (the test
/// process's throw-away cluster), as behind a load balancer: devices push
/// and a reader pulls through instances chosen at random while instances are
/// killed with SIGKILL and restarted. Nothing acknowledged is lost, the
/// reader's incremental pulls never skip a change that committed later
/// through another process, and every instance serves the same records.
@Suite(.serialized) struct PostgresProcessTests {
    let binary = ProcessRunner.binary("brsyncd")

    /// The ports of the running instances (one slot each; 0 while one is down).
    final class Instances: @unchecked Sendable {
        // @unchecked: guarded by `lock`.
        private let lock = NSLock()
        private var ports: [UInt16]
        init(_ ports: [UInt16]) { self.ports = ports }
        func set(_ index: Int, _ port: UInt16) { lock.lock(); ports[index] = port; lock.unlock() }
        func live() -> [UInt16] { lock.lock(); defer { lock.unlock() }; return ports.filter { $0 != 0 } }
    }

    func run(_ arguments: [String], environment: [String: String]) throws -> ProcessResult {
        try ProcessRunner.run(binary, arguments, environment: environment)
    }

    func serve(_ directory: TemporaryDirectory, environment: [String: String]) throws -> (BackgroundProcess, UInt16) {
        let running = try BrsyncdProcess([], certificates: directory, environment: environment, binary: binary)
        return (running.process, running.port)
    }

    @Test func threeInstancesKilledAndRestartedLoseNothing() throws {
        var random = SeededRandom.fromEnvironment(fallback: 20_261_124)
        print("PostgresProcessTests seed: \(random.seed) (re-run with BRSYNC_TEST_SEED=\(random.seed))")
        let cluster = try PostgresCluster.shared()
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        _ = try TestCertificates(in: directory, authority: try CertificateAuthority())
        let environment = [
            "BRSYNCD_STORE": try cluster.createDatabase(), "BRSYNCD_STORE_PASSWORD_FILE": cluster.passwordFile,
        ]

        // Accounts and devices through the command line, like an operator.
        #expect(try run(["account", "add", "alice"], environment: environment).status == 0)
        var issued: [String] = []
        for name in ["reader", "d0", "d1", "d2"] {
            let added = try run(["device", "add", "alice", name], environment: environment)
            #expect(added.status == 0, "\(added)")
            issued.append(try #require(added.stdout.split(separator: "\n").last.map(String.init)))
        }
        let tokens = issued

        var processes: [BackgroundProcess] = []
        var ports: [UInt16] = []
        for _ in 0..<3 {
            let (process, port) = try serve(directory, environment: environment)
            processes.append(process)
            ports.append(port)
        }
        let instances = Instances(ports)
        let caFile = directory.file("ca.pem")
        @Sendable func client(_ port: UInt16) throws -> HTTPClient {
            HTTPClient(
                .init(
                    address: SocketAddress(host: "127.0.0.1", port: port), serverName: "localhost",
                    tls: try TLSContext.client(caFile: caFile)))
        }

        let acknowledged = Mutex<Set<String>>([])
        let failures = Mutex<[String]>([])
        let done = Atomic<Int>(0)
        // Writers go on past their 60 rounds until the last instance is killed
        // and back (at most 2,000 rounds): every kill comes while they write,
        // however fast the store is.
        let killsDone = Atomic<Bool>(false)
        let written = Atomic<Int>(0)
        let group = DispatchGroup()
        let seeds = (0..<4).map { _ in random.next() }
        // Three writers: each batch goes to an instance chosen at random and,
        // when that instance is down, again (the same changes) to another.
        for writer in 0..<3 {
            group.enter()
            DispatchQueue.global().async {
                defer { group.leave(); done.add(1, ordering: .relaxed) }
                var random = SeededRandom(seed: seeds[writer])
                let clockDevice = TestDevice(
                    client: HTTPClient(
                        .init(
                            address: SocketAddress(host: "127.0.0.1", port: 1), serverName: "localhost",
                            tls: nil)), token: tokens[writer + 1], deviceID: "dev\(writer)")
                for round in 0..<2000 {
                    if round >= 60 && killsDone.load(ordering: .relaxed) { break }
                    let changes = (0..<3).map {
                        clockDevice.change("w\(writer)-r\(round)-\($0).example", ["browser": .string("b\(round)")])
                    }
                    var sent = false
                    for _ in 0..<200 where !sent {
                        let live = instances.live()
                        guard let port = live.isEmpty ? nil : live[Int(random.next() % UInt64(live.count))],
                            let device = try? TestDevice(
                                client: client(port), token: tokens[writer + 1], deviceID: "dev\(writer)")
                        else {
                            usleep(20_000)
                            continue
                        }
                        device.nextSequence = clockDevice.nextSequence
                        device.chains = clockDevice.chains
                        if let response = try? device.push(changes), response.status == 200 {
                            clockDevice.chains = device.chains
                            acknowledged.withLock { $0.formUnion(changes.map { "rules/\($0.key)" }) }
                            written.add(changes.count, ordering: .relaxed)
                            sent = true
                        } else {
                            usleep(20_000)
                        }
                    }
                    if !sent {
                        failures.withLock { $0.append("writer \(writer) could not push round \(round)") }
                        return
                    }
                }
            }
        }
        // A reader pulling incrementally through random instances while the
        // writers write: its cursor must never pass a change that commits later.
        let seen = Mutex<[String: ChangeRecord]>([:])
        let readerCursor = Mutex<Int64>(0)
        group.enter()
        DispatchQueue.global().async {
            defer { group.leave() }
            var random = SeededRandom(seed: seeds[3])
            var cursor: Int64 = 0
            while done.load(ordering: .relaxed) < 3 {
                let live = instances.live()
                guard !live.isEmpty,
                    let reader = try? TestDevice(
                        client: client(live[Int(random.next() % UInt64(live.count))]),
                        token: tokens[0], deviceID: "reader")
                else {
                    usleep(20_000)
                    continue
                }
                if let page = try? reader.pullAll(since: cursor, limit: 7) {
                    seen.withLock { $0.merge(page.records) { $1 } }
                    cursor = page.cursor
                }
                usleep(5_000)
            }
            readerCursor.withLock { $0 = cursor }
        }

        // Kill instances while they serve, and start them again.
        var acknowledgedAtKills: [Int] = []
        for victim in [1, 2, 0] {
            for _ in 0..<500 where acknowledged.withLock({ $0.count }) < 60 * (victim == 1 ? 1 : victim == 2 ? 2 : 3) {
                usleep(10_000)
            }
            acknowledgedAtKills.append(acknowledged.withLock { $0.count })
            instances.set(victim, 0)
            processes[victim].stop(signal: SIGKILL)
            usleep(100_000)
            let (process, port) = try serve(directory, environment: environment)
            processes[victim] = process
            instances.set(victim, port)
        }
        killsDone.store(true, ordering: .relaxed)
        group.wait()
        defer { for process in processes { _ = process.stop() } }
        #expect(failures.withLock { $0 } == [])
        let total = written.load(ordering: .relaxed)
        // Each kill came while the writers were still writing.
        #expect(acknowledgedAtKills.allSatisfy { $0 < total }, "\(acknowledgedAtKills) of \(total)")
        print(
            "PostgresProcessTests: instances killed with \(acknowledgedAtKills) of \(total) changes acknowledged; "
                + "the reader saw \(seen.withLock { $0.count }) records while they were written")
        let acknowledgedKeys = acknowledged.withLock { $0 }
        #expect(acknowledgedKeys.count == total && total >= 3 * 60 * 3)

        // The reader catches up from where it stood: with no skipped change,
        // its incremental view is everything.
        let finalReader = try TestDevice(client: client(instances.live()[0]), token: tokens[0], deviceID: "reader")
        let rest = try finalReader.pullAll(since: readerCursor.withLock { $0 }, limit: 50)
        let incremental = seen.withLock { $0 }.merging(rest.records) { $1 }
        let missing = acknowledgedKeys.subtracting(incremental.keys)
        #expect(missing.isEmpty, "skipped by incremental pulls: \(missing.sorted().prefix(5))")
        // Every instance serves the same records, all acknowledged ones among them.
        var views: [[String: ChangeRecord]] = []
        for port in instances.live() {
            views.append(
                try TestDevice(client: client(port), token: tokens[0], deviceID: "reader").pullAll(limit: 100).records)
        }
        #expect(views.count == 3)
        for view in views {
            #expect(acknowledgedKeys.subtracting(view.keys).isEmpty)
            #expect(view.mapValues(\.state) == views[0].mapValues(\.state))
        }
    }
}
