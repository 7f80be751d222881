import BrsyncServer
import Foundation
import HTTP
import JSON
import Logging
import Model
import Net
import Postgres
import Replica
import SyncClient
import SyncCore
import Synchronization
import TestSupport
import Testing

/// Model-based test: 3 to 6 machines make random edits and sync in random
/// orders through a proxy that drops answers after commit, duplicates requests
/// and answers 503. On top: clocks fast and slow by minutes to years, set
/// before first contact and jumping between syncs, on the machines and on the
/// server; two syncs of one replica at once and syncs racing edits; machines
/// killed mid-pull; tokens issued again; homes copied to a new machine and
/// restored from older copies; the server restored from file copies and from
/// `backup` while some machines are gone; tombstones purged; records near
/// every limit. Every other machine syncs by watch, as `brsync watch` does
/// (ConvergenceRun+Live.swift): only when the server's watch says the account
/// changed, or it holds edits of its own.
///
/// The oracle, after a final sync: all replicas identical to each other, to
/// the server and to a freshly joined machine; every value traced to an edit;
/// no acknowledged edit lost unless a later edit overwrote it (only an edit
/// held by nobody but gone machines may be lost to a server restore); each
/// device's stamps increasing; an edit made after seeing a value stamped above
/// it; no machine stuck.
///
/// Environment: `BRSYNC_SYNC_SEEDS=N` seeds from `BRSYNC_TEST_SEED`;
/// `BRSYNC_MODEL_DEBUG=1` prints syncs that forked, re-synced or had problems,
/// the history of values the oracle could not trace, and the stamps of a
/// server record that does not open and of each machine's copy of it;
/// `BRSYNC_MODEL_TRACE=rules/KEY` prints, after every step that changed it,
/// that record on the server (with its change number and the epoch) and on
/// every machine (with its cursors); `BRSYNC_MODEL_KEEP=1` keeps the temporary
/// folder (homes and server store) for `sqlite3`; `BRSYNC_MODEL_STORE=sqlite`
/// or `postgres` runs the seeds on one store only (both by default);
/// `BRSYNC_MODEL_ENCRYPTION=on` or `off` runs them with end-to-end encryption
/// or without it only (both by default: every machine holds the account key,
/// the first sync encrypts the account, and the oracle opens the server's
/// records to compare them).
///
/// On PostgreSQL, the server's file copies are `CREATE DATABASE … TEMPLATE`
/// copies of the stopped server's database, its online backups are
/// `pg_dump`s, and a restore drops the database and makes it again from one.
@Suite struct ConvergenceTests {
    /// Seeds to run: `BRSYNC_SYNC_SEEDS=N` runs N seeds from `BRSYNC_TEST_SEED`
    /// (default 2 in CI, and the regression seeds after them).
    static var seeds: [UInt64] {
        let environment = ProcessInfo.processInfo.environment
        let first = environment["BRSYNC_TEST_SEED"].flatMap(UInt64.init) ?? 20_261_121
        let count = environment["BRSYNC_SYNC_SEEDS"].flatMap(Int.init) ?? 2
        let chosen = (0..<UInt64(max(1, count))).map { first + $0 }
        return environment["BRSYNC_TEST_SEED"] == nil ? chosen + regressionSeeds : chosen
    }

    /// Seeds that once failed, run by default so their fix stays:
    /// - 8400: an edit acknowledged under a stamp from a fast clock, then lost
    ///   to a server restore, was re-stamped below another device's later
    ///   value when pushed again (now its record is relayed first).
    /// - 96005 (encrypted): a device's relayed writes were pulled before
    ///   any ledger record counting them; the server was restored from a
    ///   copy taken in between, and the device's home from an older copy:
    ///   its writes stayed uncounted for good, an honest server's false
    ///   alarm (now new writes relay with their pending record, and a
    ///   device relays its confirmed ledger records after its writes).
    /// - 96100 (encrypted): a device's unpushed writes relayed inside its
    ///   push (a restore found mid-push) that no batch's answer then
    ///   acknowledged went into no ledger; other machines held them past
    ///   what its ledger described, for good (now a push folds what it
    ///   relayed with its next answer, or at its end).
    /// - 96131 (encrypted): a home restored from an older copy relayed its
    ///   new edit inside its push (a restore found by the push's answer),
    ///   then forked: the old id's ledger never counted the edit (now such
    ///   a relay leaves unpushed edits to the push's batches, and an answer
    ///   that acknowledges past its batch folds those changes too).
    /// - 96157 (encrypted): a device's pending records, stamped while its
    ///   clock ran a year fast, were taken and then lost to a restore; each
    ///   later ledger record was stamped after them, refused for the clock,
    ///   and the device stuck for good (now, once the server refuses a stamp
    ///   for its clock, ledger records go no further ahead than it takes);
    ///   96166 guards that fix: a head the server took four minutes ahead
    ///   of its clock (a ledger request may be a day ahead) still holds the
    ///   next records above it (stamped below it, they were ignored).
    /// - 96025 (encrypted, SQLite): a home with a clock a year fast took a
    ///   new id at a key change and minted its unpushed changes again from
    ///   that clock; the server refused them, and the re-stamp that followed
    ///   put its device name under the stamp the server had acknowledged
    ///   (now a fork brings such a clock back first, and no re-stamp goes
    ///   below a change's own stamp the server could have taken).
    /// - 97508 (encrypted; about one run in two, the keys being random): a
    ///   machine that learned of a rotation late set aside a value another
    ///   device wrote with the retired key, but its unpushed edit of the same
    ///   record still said (its manifest) the record held that value; the
    ///   server's record then failed every machine's manifest check (now the
    ///   set-aside value leaves the unpushed manifests too;
    ///   `RetiredKeyWriteTests.aLateMachinesEditBesideAValueItSetsAsideGoesUp`).
    /// - 96602 (encrypted, SQLite): two live homes under one id (a home
    ///   copied block by block) across a server restored between their
    ///   pushes: the id's head held everywhere was one home's, the other's
    ///   writes past it, an honest server's false alarm on every machine
    ///   (now a home that holds records under its id its book did not write
    ///   takes the other's ledger in, or takes it as its own when it covers
    ///   its book; the seed fails with that off).
    static let regressionSeeds: [UInt64] = [8400, 96005, 96025, 96100, 96131, 96157, 96166, 96602, 97508]

    static var stores: [StoreKind] {
        let only = ProcessInfo.processInfo.environment["BRSYNC_MODEL_STORE"]
        return StoreKind.allCases.filter { only == nil || $0.rawValue == only }
    }

    static var encryption: [Bool] {
        switch ProcessInfo.processInfo.environment["BRSYNC_MODEL_ENCRYPTION"] {
        case "on": return [true]
        case "off": return [false]
        default: return [false, true]
        }
    }

    @Test(arguments: stores, encryption) func replicasConvergeUnderFaults(_ kind: StoreKind, _ encrypted: Bool) throws {
        var faults: [String: Int] = [:]
        let mode = encrypted ? "on" : "off"
        for seed in Self.seeds {
            print(
                "ConvergenceTests seed: \(seed) on \(kind), encryption \(mode) (re-run with BRSYNC_TEST_SEED=\(seed) BRSYNC_MODEL_STORE=\(kind) BRSYNC_MODEL_ENCRYPTION=\(mode))"
            )
            for (fault, count) in try Run(seed: seed, kind: kind, encrypted: encrypted).execute() {
                faults[fault, default: 0] += count
            }
        }
        print(
            "ConvergenceTests on \(kind), encryption \(mode): \(Self.seeds.count) seed(s); faults: \(faults.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))"
        )
    }
}

/// Where a run's server keeps its store.
enum ModelStore {
    case sqlite(path: String)
    /// A database of the test process's cluster.
    case postgres(cluster: PostgresCluster, database: String)
}

/// A copy of the server's store, to restore later.
enum ServerCopy {
    /// A copy of the SQLite file (and its WAL) or an online backup.
    case file(String)
    /// `CREATE DATABASE … TEMPLATE` of the stopped server's database.
    case database(String)
    /// A `pg_dump` of the serving database.
    case dump(String)
}

/// One seeded run.
final class Run: @unchecked Sendable {
    // Used by the test thread (and, for concurrent syncs, by threads it joins).
    let seed: UInt64
    var random: SeededRandom
    let directory: TemporaryDirectory
    let caFile: String
    /// Where the server keeps its store.
    let target: ModelStore
    let serverClock = ServerClock()
    var store: any SyncStore
    var server: SyncServer
    var serverPort: UInt16
    let proxy: FaultProxy
    var machines: [SimulatedMachine] = []
    var gone: [SimulatedMachine] = []
    /// Every change-log entry any replica ever held (logs of replaced homes included).
    var allEdits: Set<Edit> = []
    /// Edits the server acknowledged to their machine: none may be lost.
    var mustSurvive: Set<Edit> = []
    var serverCopies: [ServerCopy] = []
    var homeCopies: [(machine: SimulatedMachine, path: String)] = []
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

    init(seed: UInt64, kind: StoreKind = .sqlite, encrypted: Bool = false) throws {
        self.seed = seed
        accountKey = encrypted ? AccountKey.generate() : nil
        newestKey = accountKey
        if let accountKey { keys[accountKey.id] = accountKey }
        random = SeededRandom(seed: seed)
        directory = try TemporaryDirectory(prefix: "brsync-model")
        caFile = try TestCertificates(in: directory).caFile
        switch kind {
        case .sqlite: target = .sqlite(path: directory.file("server.sqlite"))
        case .postgres:
            let cluster = try PostgresCluster.shared()
            target = .postgres(cluster: cluster, database: PostgresCluster.databaseName(try cluster.createDatabase()))
        }
        serverClock.skew.store(
            Bool.random(using: &random) ? 0 : Int64.random(in: -600_000...600_000, using: &random), ordering: .relaxed)
        (store, server, serverPort) = try Self.startServer(target, directory, serverClock)
        proxy = try FaultProxy(
            upstreamPort: serverPort, caFile: caFile, certificateFile: directory.file("server.pem"),
            keyFile: directory.file("server.key"), seed: seed &* 31, faultRate: 0.25)
        try store.addAccount("alice")
    }

    deinit {
        proxy.stop()
        server.shutdown()
        if ProcessInfo.processInfo.environment["BRSYNC_MODEL_KEEP"] == nil { directory.remove() }
    }

    static func startServer(
        _ target: ModelStore, _ directory: TemporaryDirectory, _ clock: ServerClock
    ) throws -> (any SyncStore, SyncServer, UInt16) {
        let store: any SyncStore
        switch target {
        case .sqlite(let path): store = try SQLiteStore(path: path, clock: { clock.now() })
        case .postgres(let cluster, let database):
            store = try PostgresStore(
                try PostgresConfiguration(url: cluster.url(database: database), password: cluster.password),
                clock: { clock.now() })
        }
        let (server, port) = try InProcessServer.start(store: store, certificates: directory) { configuration in
            configuration.defaultPullLimit = 3
            configuration.limits.lingerMilliseconds = 200
        }
        return (store, server, port)
    }

    func note(_ fault: String) { faults[fault, default: 0] += 1 }

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
        let port = direct ? serverPort : proxy.port
        let remote = try RemoteURL(parsing: "https://127.0.0.1:\(port)")
        let home = (replica ?? machine.replica).home
        if accountKey != nil {
            // As `brsync sync` does first: a key change stopped half way is settled.
            try AccountKeyFile.settle(home: home) {
                try SyncClient(
                    replica: replica ?? machine.replica, remote: remote, token: machine.token, caFile: caFile,
                    options: options
                ).accountKeyID()
            }
        }
        return try SyncClient(
            replica: replica ?? machine.replica, remote: remote, token: machine.token, caFile: caFile,
            accountKey: try AccountKeyFile.read(home: home), olderKeys: try AccountKeyFile.readOlder(home: home),
            options: options)
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
                if Bool.random(using: &random) {
                    try machines[index].replica.database.run("DELETE FROM meta WHERE key = 'instance'")
                }
                // An edit now held by neither the server nor any machine is gone with the old home.
                keepOnlyHeldEdits(includingServer: true)
                note("homes restored from older copies")
            case 34 where serverCopies.count < 3:
                server.shutdown() // a copy of a stopped server's store
                switch target {
                case .sqlite(let path):
                    let copy = directory.file("server-copy\(serverCopies.count).sqlite")
                    try StoreFiles.copy(path, to: copy)
                    serverCopies.append(.file(copy))
                case .postgres(let cluster, let database):
                    let copy = "\(database)_copy\(serverCopies.count)"
                    try cluster.psql("CREATE DATABASE \(copy) TEMPLATE \(database)")
                    serverCopies.append(.database(copy))
                }
                (store, server, serverPort) = try Self.startServer(target, directory, serverClock)
                proxy.retarget(serverPort)
            case 35 where serverCopies.count < 3:
                // An online backup of the serving store.
                switch target {
                case .sqlite:
                    let copy = directory.file("server-backup\(serverCopies.count).sqlite")
                    try (store as? SQLiteStore)?.backup(to: copy)
                    serverCopies.append(.file(copy))
                case .postgres(let cluster, let database):
                    let copy = directory.file("server-backup\(serverCopies.count).dump")
                    try cluster.dump(database: database, to: copy)
                    serverCopies.append(.dump(copy))
                }
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
