import BrsyncServer
import Foundation
import HTTP
import JSON
import Logging
import Model
import Net
import Postgres
import Replica
import ServerStore
import SyncClient
import SyncCore
import Synchronization
import TestSupport
import Testing

/// One seeded run.
final class Run: @unchecked Sendable {
    // Used by the test thread (and, for concurrent syncs, by threads it joins).
    let seed: UInt64
    var random: SeededRandom
    let directory: TemporaryDirectory
    let serverClock = ServerClock()
    /// The server, its store and its copies.
    let host: TestServer
    var caFile: String { host.caFile }
    var store: SyncStore { host.store }
    var serverPort: UInt16 { host.port }
    let proxy: FaultProxy
    var machines: [SimulatedMachine] = []
    var gone: [SimulatedMachine] = []
    /// Every change-log entry any replica ever held (logs of replaced homes included).
    var allEdits: Set<Edit> = []
    /// Edits the server acknowledged to their machine: none may be lost.
    var mustSurvive: Set<Edit> = []
    var serverCopies: [TestServer.Copy] = []
    var homeCopies: [(machine: SimulatedMachine, path: String)] = []
    /// The ids of homes replaced by an older copy of themselves: the copy
    /// goes by the same id, and holds none of what the id wrote since.
    var restoredHomeIDs: Set<String> = []
    var faults: [String: Int] = [:]
    var counter = 0
    /// What `BRSYNC_MODEL_TRACE` printed last.
    var lastTrace: [String] = []
    /// The account key every machine starts with, when the run is end-to-end
    /// encrypted (each machine's key file holds its key from then on).
    let accountKey: AccountKey?
    /// Every key made in the run, by id, and the newest the server took (see ConvergenceRun+Keys).
    var keys: [String: AccountKey] = [:]
    var newestKey: AccountKey?
    /// The machines a run starts with are made (later ones join as `join` would).
    var initialMachinesMade = false
    /// Sealed format 2: in an encrypted run with upgrades its machines start
    /// at protocol 5 (format 1) and are upgraded to 6 one by one (by name: a
    /// home's copies with it), and once one is, machines made later start
    /// upgraded; the server marks the account when every machine seen
    /// lately speaks 6, and records then mix both formats. Without
    /// upgrades every machine speaks this build's protocol from the start
    /// (format 2 from the first pull). `BRSYNC_MODEL_UPGRADES=on` or `off`;
    /// by default the encrypted runs of even seeds.
    let upgrades: Bool
    var upgraded: Set<String> = []
    /// The protocol of upgraded machines (and of all, without upgrades):
    /// this build's, or `BRSYNC_MODEL_PROTOCOL` (5 replays a seed in format
    /// 1 with the same draws, to tell a format's fault from another).
    let newestProtocol =
        ProcessInfo.processInfo.environment["BRSYNC_MODEL_PROTOCOL"].flatMap(Int.init) ?? Wire.protocolVersion

    init(seed: UInt64, kind: StoreKind = .sqlite, encrypted: Bool = false) throws {
        self.seed = seed
        let upgrading = ProcessInfo.processInfo.environment["BRSYNC_MODEL_UPGRADES"]
        upgrades = encrypted && upgrading != "off" && (upgrading == "on" || seed % 2 == 0)
        accountKey = encrypted ? AccountKey.generate() : nil
        newestKey = accountKey
        if let accountKey { keys[accountKey.id] = accountKey }
        random = SeededRandom(seed: seed)
        directory = try TemporaryDirectory(prefix: "brsync-model")
        serverClock.skew.store(
            Bool.random(using: &random) ? 0 : Int64.random(in: -600_000...600_000, using: &random), ordering: .relaxed)
        let clock = serverClock
        host = try TestServer(kind, in: directory, clock: { clock.now() }) { configuration in
            configuration.defaultPullLimit = 3
            configuration.limits.lingerMilliseconds = 200
        }
        proxy = try FaultProxy(
            upstreamPort: host.port, caFile: host.caFile, certificateFile: directory.file("server.pem"),
            keyFile: directory.file("server.key"), seed: seed &* 31, faultRate: 0.25)
        try store.addAccount("alice")
    }

    deinit {
        proxy.stop()
        host.stop()
        if ProcessInfo.processInfo.environment["BRSYNC_MODEL_KEEP"] == nil { directory.remove() }
    }

    func note(_ fault: String) {
        faults[fault, default: 0] += 1
        if ProcessInfo.processInfo.environment["BRSYNC_MODEL_DEBUG"] != nil {
            print("DEBUG fault: \(fault) (the server's key \(serverKey()?.id.prefix(8) ?? "-"))")
        }
    }

    /// A clock error from a few seconds to years, either way.
    func randomSkew() -> Int64 {
        let scales: [Int64] = [0, 20_000, 600_000, 3 * 3_600_000, 40 * 86_400_000, 3 * 365 * 86_400_000]
        let scale = scales.randomElement(using: &random)!
        return scale == 0 ? 0 : Int64.random(in: -scale...scale, using: &random)
    }

    func client(_ machine: SimulatedMachine, replica: Replica? = nil, direct: Bool = false) throws -> SyncClient {
        var options = SyncClient.Options()
        options.pushBatch = 4
        options.pullLimit = 3
        options.attempts = 8
        options.backoffMilliseconds = 1
        options.pushBatchBytes = 96 * 1024
        options.protocolVersion =
            !upgrades || upgraded.contains(machine.name) ? newestProtocol : Wire.sealedFormatProtocol - 1
        // With a key, as `brsync sync` does first: a key change stopped half way is settled.
        return try host.client(
            replica ?? machine.replica, token: machine.token, port: direct ? serverPort : proxy.port,
            options: options, settlingKeyChange: accountKey != nil)
    }

    /// Syncs and records what the server acknowledged.
    func sync(_ machine: SimulatedMachine, _ kind: Int = 2, direct: Bool = false) {
        if kind == 2, isLive(machine), !liveWantsSync(machine, direct: direct) { return }
        let client: SyncClient
        do { client = try self.client(machine, direct: direct) } catch { return }
        var result: Result<SyncClient.Summary, any Error>
        switch kind {
        case 0: result = Result { try client.push() }
        case 1: result = Result { try client.pull() }
        case 3:
            result = Result {
                _ = try client.pullPage(); return SyncClient.Summary()
            } // killed after one page
        default: result = Result { try client.sync() }
        }
        if ProcessInfo.processInfo.environment["BRSYNC_MODEL_DEBUG"] != nil {
            switch result {
            case .success(let summary)
            where !summary.problems.isEmpty || summary.newDeviceID != nil || summary.fullResync
                || ProcessInfo.processInfo.environment["BRSYNC_MODEL_TRACE"] != nil:
                print(
                    "DEBUG sync kind \(kind) \(machine.name) \(machine.replica.deviceID): \(summary.problems) new id \(summary.newDeviceID ?? "-") resync \(summary.fullResync) relayed \(summary.relayed) pushed \(summary.pushed) pulled \(summary.pulled) restamped \(summary.restamped) through \((try? machine.replica.syncState().pushedThrough) ?? -1)"
                )
            case .failure(let error): print("DEBUG sync \(machine.name) \(machine.replica.deviceID) failed: \(error)")
            default: break
            }
        }
        noteWrittenElsewhere(result, machine)
        acknowledge(machine)
        if upgrades, (try? machine.replica.sealedFormat()) == .two { note("syncs of a machine writing format 2") }
    }

    /// Counts the syncs that found records under a machine's own id that it
    /// did not write (``SyncClient/Summary/writtenElsewhere``), by what the
    /// server's chain of the id was to that machine.
    func noteWrittenElsewhere(_ result: Result<SyncClient.Summary, any Error>, _ machine: SimulatedMachine) {
        guard case .success(let summary) = result, let elsewhere = summary.writtenElsewhere else { return }
        note("records under a machine's own id it did not write (the server's chain: \(elsewhere.standing))")
        if ProcessInfo.processInfo.environment["BRSYNC_MODEL_DEBUG"] != nil {
            print(
                "DEBUG written elsewhere, \(machine.name) \(machine.replica.deviceID): \(elsewhere.reason), the server's chain \(elsewhere.standing); \(summary.problems)"
            )
        }
    }

    func acknowledge(_ machine: SimulatedMachine) {
        collectLog(machine.replica)
        guard let pushed = try? machine.replica.syncState().pushedThrough,
            let log = try? machine.replica.unpushedChanges(after: 0, limit: 1_000_000)
        else { return }
        for change in log where change.sequence <= pushed { mustSurvive.formUnion(edits(of: change)) }
    }

    func edits(of change: ChangeRecord) -> [Edit] {
        change.state.fields.map {
            Edit(
                record: "\(change.collection.rawValue)/\(change.key)", field: $0.key, stamp: $0.value.stamp,
                value: $0.value.value)
        }
    }

    /// Every local change-log entry of a home, under every device id it had.
    func collectLog(_ replica: Replica) {
        let rows =
            (try? replica.database.query("SELECT collection, key, fields, versions FROM changes WHERE kind = 'local'") {
                row in
                (
                    row.string(0) ?? "", row.string(1) ?? "",
                    try RecordState(fieldsJSON: row.string(2) ?? "{}", versionsJSON: row.string(3) ?? "{}")
                )
            }) ?? []
        for (collection, key, state) in rows {
            for (field, register) in state.fields {
                allEdits.insert(
                    Edit(record: "\(collection)/\(key)", field: field, stamp: register.stamp, value: register.value))
            }
        }
    }

    /// Every field register a replica holds now.
    func held(_ replica: Replica) -> Set<Edit> {
        var result: Set<Edit> = []
        for collection in RecordCollection.allCases {
            for (key, state) in (try? replica.records(collection)) ?? [] {
                for (field, register) in state.fields {
                    result.insert(
                        Edit(
                            record: "\(collection.rawValue)/\(key)", field: field, stamp: register.stamp,
                            value: register.value))
                }
            }
        }
        return result
    }

    func newMachine(skew: Int64) throws -> SimulatedMachine {
        counter += 1
        let name = "m\(counter)"
        if upgrades && !upgraded.isEmpty { upgraded.insert(name) }
        let machine = try SimulatedMachine(
            name: name, home: directory.file(name), token: try store.addDevice(account: "alice", name: name),
            skewMilliseconds: skew)
        // A machine joins with the code the account uses, as `brsync join`
        // checks it (the first machines of a run that starts keyed: its key).
        if let key = serverKey() ?? (initialMachinesMade ? nil : newestKey) {
            try AccountKeyFile.write(key, home: machine.replica.home)
        }
        machines.append(machine)
        return machine
    }

    /// One random local edit; checks that it is stamped above what it saw.
    func edit(_ machine: SimulatedMachine) {
        let replica = machine.replica
        let browsers = ["firefox", "chrome", "brave", "work"]
        let patterns = ["github.com", "*.zoom.us", "example.com/docs", "news.example", "localhost:3000"]
        let browser = browsers.randomElement(using: &random)!
        let pattern = patterns.randomElement(using: &random)!
        let key = (try? Pattern(pattern).key) ?? pattern
        let seen = (try? replica.record(.rules, key: key))??.fields.values.map(\.stamp).max()
        let stampBefore = replica.lastStamp
        switch Int.random(in: 0..<9, using: &random) {
        case 0: _ = try? replica.addBrowser(id: browser, name: nil, format: nil, scheme: nil, exec: "b %u")
        case 1: _ = try? replica.setBrowserEnabled(named: browser, Bool.random(using: &random))
        case 2: _ = try? replica.removeBrowser(named: browser)
        case 3, 4:
            _ = try? replica.addRule(
                pattern: pattern, browser: browser,
                priority: Bool.random(using: &random) ? nil : Int.random(in: 0...5, using: &random))
            // When the edit wrote something, its stamp is above every stamp the record had.
            if let seen, replica.lastStamp != stampBefore,
                let written = (try? replica.record(.rules, key: key))??.fields.values.map(\.stamp).first(where: {
                    $0 == replica.lastStamp
                })
            {
                #expect(written > seen, "an edit made after seeing a value is stamped above it, seed \(seed)")
                note("edits checked against what they saw")
            }
        case 5: _ = try? replica.removeRule(pattern: pattern)
        case 6: _ = try? replica.setDefaultBrowser(named: browser)
        case 7:
            // Near the limits: 60 fields, a long key, a 60 KB value.
            var fields: [String: JSONValue] = [:]
            for index in 0..<60 { fields["f\(index)"] = .int(Int64(index)) }
            _ = try? replica.write(.settings, key: "wide", changes: fields)
            _ = try? replica.write(
                .settings, key: "long-" + String(repeating: "k", count: 2000), changes: ["value": .string("x")])
            _ = try? replica.write(
                .settings, key: "big",
                changes: [
                    "value": .string(String(repeating: "v", count: 60_000 + Int.random(in: 0..<1000, using: &random)))
                ])
            note("near-limit records")
        default:
            _ = try? replica.write(
                .settings, key: "note", changes: ["value": .int(Int64.random(in: 0...9, using: &random))])
        }
    }

    func execute() throws -> [String: Int] {
        // Half the encrypted runs start readable, and one machine runs `key init` later.
        let initStep = accountKey != nil && Bool.random(using: &random) ? Int.random(in: 10..<120, using: &random) : nil
        if initStep != nil { newestKey = nil }
        let machineCount = Int.random(in: 3...6, using: &random)
        for _ in 0..<machineCount {
            let machine = try newMachine(skew: randomSkew())
            // Some make edits before their first contact, with whatever clock they have.
            if Bool.random(using: &random) { edit(machine); note("edits before first contact") }
            sync(machine, direct: true)
        }
        initialMachinesMade = true
        var futureReported = false
        for step in 0..<160 {
            let machine = machines.randomElement(using: &random)!
            let operation = Int.random(in: 0..<40, using: &random)
            defer { trace(step: step, operation: operation, on: machine, futureReported: &futureReported) }
            let (keyBefore, newestBefore) = (serverKey()?.id, newestKey?.id)
            defer { afterPossibleMoveForward(keyBefore: keyBefore, newestBefore: newestBefore) }
            if let initStep, step >= initStep, newestKey == nil { initialise(machine) }
            if upgrades, !upgraded.contains(machine.name), Int.random(in: 0..<4, using: &random) == 0 {
                upgraded.insert(machine.name)
                note("machines upgraded to protocol 6")
            }
            switch operation {
            case 0..<16: edit(machine)
            case 16..<25: sync(machine, Int.random(in: 0...3, using: &random))
            case 25, 26:
                machine.setSkew(randomSkew())
                note("machine clock jumps")
            case 27:
                serverClock.skew.store(
                    Bool.random(using: &random) ? 0 : Int64.random(in: -3_600_000...3_600_000, using: &random),
                    ordering: .relaxed)
                note("server clock jumps")
            case 28:
                // Two syncs of one replica at once (two processes).
                let second = try Replica.open(home: machine.replica.home, now: { machine.clock.now() })
                let first = try client(machine)
                let background = BackgroundSync(try client(machine, replica: second))
                background.start()
                _ = try? first.sync()
                background.wait()
                acknowledge(machine)
                note("concurrent syncs")
            case 29:
                // A sync racing edits (another process edits meanwhile).
                let editor = try Replica.open(home: machine.replica.home, now: { machine.clock.now() })
                let background = BackgroundSync(try client(machine))
                background.start()
                for index in 0..<3 {
                    _ = try? editor.write(.settings, key: "race", changes: ["value": .int(Int64(index))])
                }
                background.wait()
                acknowledge(machine)
                note("syncs racing edits")
            case 30:
                let token = try store.reissueToken(account: "alice", device: machine.name)
                for same in machines where same.name == machine.name { same.token = token } // copies of its home too
                note("tokens issued again")
            case 31 where machines.count < 8:
                // The home copied to a new machine (same token).
                counter += 1
                let path = directory.file("copy\(counter)")
                try FileManager.default.copyItem(atPath: machine.replica.home, toPath: path)
                let copy = SimulatedMachine(
                    name: machine.name, replica: try Replica.open(home: path), token: machine.token)
                if Bool.random(using: &random) {
                    // A block-level copy (a disk image, a VM snapshot) keeps the
                    // file's identity: only the server's digests can tell.
                    try copy.replica.database.run("DELETE FROM meta WHERE key = 'instance'")
                    note("homes copied undetectably")
                } else if Bool.random(using: &random) {
                    // The copy imports many rules, and its first sync is killed
                    // right after it took its new id: its next push sends dozens
                    // of changes the server must have whole (more than a push's
                    // stalls), which an honest server must never be accused for.
                    for index in 0..<40 {
                        _ = try? copy.replica.addRule(
                            pattern: "bulk\(counter)-\(index).example", browser: "firefox", priority: nil)
                    }
                    _ = try copy.replica.takeNewDeviceIDIfCopied()
                    note("copied homes importing in bulk, killed after their new id")
                }
                machines.append(copy)
                note("homes copied")
            case 32:
                counter += 1
                let path = directory.file("backup\(counter)")
                try FileManager.default.copyItem(atPath: machine.replica.home, toPath: path)
                homeCopies.append((machine, path))
            case 33 where !homeCopies.isEmpty:
                // A home restored from an older copy of itself.
                let (original, path) = homeCopies.removeFirst()
                guard let index = machines.firstIndex(where: { $0 === original }) else { break }
                collectLog(original.replica)
                counter += 1
                let restoredPath = directory.file("restored\(counter)")
                try FileManager.default.copyItem(atPath: path, toPath: restoredPath)
                machines[index] = SimulatedMachine(
                    name: original.name, replica: try Replica.open(home: restoredPath), token: original.token)
                restoredHomeIDs.insert(original.replica.deviceID)
                if Bool.random(using: &random) {
                    try machines[index].replica.database.run("DELETE FROM meta WHERE key = 'instance'")
                }
                // An edit now held by neither the server nor any machine is gone with the old home.
                keepOnlyHeldEdits(includingServer: true)
                note("homes restored from older copies")
            case 34 where serverCopies.count < 3:
                serverCopies.append(try host.copy(online: false)) // a copy of a stopped server's store
                proxy.retarget(serverPort)
            case 35 where serverCopies.count < 3:
                serverCopies.append(try host.copy(online: true)) // an online backup of the serving store
            case 36 where !serverCopies.isEmpty && faults["server restores", default: 0] < 2:
                let keyBefore = serverKey()?.id
                try restoreServer(from: serverCopies.randomElement(using: &random)!)
                note("server restores")
                // A copy from before a key change: the machines move it forward, and what the old key wrote since is set aside.
                if accountKey != nil, serverKey()?.id != keyBefore { note("restores across key changes") }
            case 37 where machines.count > 2 && gone.isEmpty:
                // A machine gone for good (its replica is never synced again).
                gone.append(machines.remove(at: machines.firstIndex { $0 === machine }!))
                // What it alone held (a restore took the server's copy) is gone with it.
                keepOnlyHeldEdits(includingServer: true)
                note("machines gone")
                // Where machines upgrade, the operator removes a lost machine
                // (no copy of its home left): else it holds the account in
                // format 1 for 30 days, as it should.
                if upgrades, !machines.contains(where: { $0.name == machine.name }) {
                    try store.revokeDevice(account: "alice", name: machine.name)
                    note("lost machines revoked")
                }
            case 38:
                _ = try? store.purgeTombstones(retentionMilliseconds: 0)
                note("tombstone purges")
            case 39 where accountKey != nil:
                try keyOperation(machine)
            default:
                sync(machine)
            }
            // Re-stamping and forking rewrite unacknowledged entries; every
            // version an edit ever had counts as that edit.
            for machine in machines { collectLog(machine.replica) }
        }
        // Everyone back to a sane clock; the final syncs go direct and must not fail.
        serverClock.skew.store(0, ordering: .relaxed)
        try settleKeys()
        var reported = true
        for round in 0..<3 {
            for machine in machines where !isLive(machine) || liveWantsSync(machine, direct: true) {
                let (keyBefore, newestBefore) = (serverKey()?.id, newestKey?.id)
                defer { afterPossibleMoveForward(keyBefore: keyBefore, newestBefore: newestBefore) }
                do {
                    let summary = try client(machine, direct: true).sync()
                    noteWrittenElsewhere(.success(summary), machine)
                    if ProcessInfo.processInfo.environment["BRSYNC_MODEL_TRACE"] != nil {
                        print(
                            "DEBUG final sync \(round) \(machine.name) \(machine.replica.deviceID): new id \(summary.newDeviceID ?? "-") resync \(summary.fullResync) relayed \(summary.relayed) pushed \(summary.pushed) pulled \(summary.pulled) restamped \(summary.restamped)"
                        )
                    }
                } catch {
                    Issue.record("\(machine.name) is stuck: \(error), seed \(seed)")
                }
                acknowledge(machine)
                trace(step: -1 - round, operation: -1, on: machine, futureReported: &reported)
            }
        }
        try check()
        let counts = proxy.counts.withLock { $0 }
        faults["answers dropped"] = counts.dropped
        faults["requests duplicated"] = counts.duplicated
        faults["503s"] = counts.busy
        print(
            "seed \(seed): \(machines.count) machines (\(gone.count) gone); faults: \(faults.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))"
        )
        return faults
    }
}
