import BrsyncServer
import Foundation
import Logging
import Model
import Net
import Postgres
import Replica
import ServerStore
import SyncClient
import SyncCore
import TestSupport
import Testing

/// A real server (SQLite file, TLS on 127.0.0.1) that can be stopped, have its
/// file replaced, and be started again, and machines with clocks of their own.
final class SyncWorld: @unchecked Sendable {
    // Used by one test thread.
    let directory: TemporaryDirectory
    let caFile: String
    var store: SyncStore
    var server: SyncServer
    var port: UInt16
    var machines: [String: SimulatedMachine] = [:]
    let storePath: String

    /// The PostgreSQL database, for a world on PostgreSQL.
    var postgres: PostgresConfiguration?
    /// Its cluster and database name (backups are copies of it).
    var postgresDatabase: (cluster: PostgresCluster, name: String)?

    init(_ kind: StoreKind = .sqlite) throws {
        directory = try TemporaryDirectory(prefix: "brsync-world")
        caFile = try TestCertificates(in: directory).caFile
        storePath = directory.file("server.sqlite")
        switch kind {
        case .sqlite:
            postgres = nil
        case .postgres:
            let cluster = try PostgresCluster.shared()
            let url = try cluster.createDatabase()
            postgres = try PostgresConfiguration(url: url, password: cluster.password)
            postgresDatabase = (cluster, PostgresCluster.databaseName(url))
        }
        (store, server, port) = try Self.start(storePath: storePath, postgres: postgres, directory: directory)
        try store.addAccount("alice")
    }

    deinit {
        server.shutdown()
        directory.remove()
    }

    static func start(
        storePath: String, postgres: PostgresConfiguration?, directory: TemporaryDirectory
    ) throws -> (SyncStore, SyncServer, UInt16) {
        let store: SyncStore = try postgres.map { try SyncStore(postgres: $0) } ?? SyncStore(sqlite: storePath)
        // Lying servers here change timelines as they like; the gate on honest ones is tested on its own.
        let (server, port) = try InProcessServer.start(store: store, certificates: directory) {
            $0.defaultPullLimit = 7
            $0.timelineStartIntervalMilliseconds = 0
        }
        return (store, server, port)
    }

    func stopServer() { server.shutdown() }

    func startServer() throws {
        (store, server, port) = try Self.start(storePath: storePath, postgres: postgres, directory: directory)
    }

    /// What `brsyncd migrate --from sqlite:… --to postgres://…` does, with
    /// the server stopped: the SQLite store copied into a new PostgreSQL
    /// database, then the server started on it.
    func moveToPostgres() throws {
        stopServer()
        let cluster = try PostgresCluster.shared()
        let url = try cluster.createDatabase()
        let configuration = try PostgresConfiguration(url: url, password: cluster.password)
        let source = try SyncStore(sqlite: storePath)
        let target = try SyncStore(postgres: configuration)
        defer {
            source.close()
            target.close()
        }
        try StoreMigration.copy(from: source, to: target)
        postgres = configuration
        postgresDatabase = (cluster, PostgresCluster.databaseName(url))
        try startServer()
    }

    @discardableResult
    func machine(_ name: String, account: String = "alice", skew: Int64 = 0) throws -> SimulatedMachine {
        if !(try store.accounts().contains { $0.name == account }) { try store.addAccount(account) }
        let token = try store.addDevice(account: account, name: name)
        let machine = try SimulatedMachine(name: name, home: directory.file(name), token: token, skewMilliseconds: skew)
        machines[name] = machine
        return machine
    }

    func client(
        _ machine: SimulatedMachine, token: String? = nil, stopRequested: (@Sendable () -> Bool)? = nil
    ) throws -> SyncClient {
        var options = SyncClient.Options()
        options.stopRequested = stopRequested
        options.pushBatch = 5
        options.pullLimit = 7
        options.attempts = 2
        options.backoffMilliseconds = 1
        // The account key, as `brsync` reads it: the machine's key file.
        let home = machine.replica.home
        return try SyncClient(
            replica: machine.replica, remote: try RemoteURL(parsing: "https://127.0.0.1:\(port)"),
            token: token ?? machine.token, caFile: caFile, accountKey: try AccountKeyFile.read(home: home),
            olderKeys: try AccountKeyFile.readOlder(home: home), options: options)
    }

    /// The server's store as it is now, for ``restoreServer(_:)``: a copy
    /// of the stopped server's file (SQLite) or database (PostgreSQL).
    func backupServer() throws -> String {
        stopServer()
        let suffix = UInt32.random(in: 0...UInt32.max)
        let copy: String
        if let database = postgresDatabase {
            copy = "\(database.name)_backup\(suffix)"
            try database.cluster.psql("CREATE DATABASE \(copy) TEMPLATE \(database.name)")
        } else {
            copy = directory.file("server-backup-\(suffix).sqlite")
            try StoreFiles.copy(storePath, to: copy)
        }
        try startServer()
        return copy
    }

    /// Puts a copy from ``backupServer()`` back and starts the server on it;
    /// tokens issued since are issued again (devices added since are added
    /// again), as an administrator would.
    func restoreServer(_ copy: String) throws {
        stopServer()
        if let database = postgresDatabase {
            try database.cluster.psql("DROP DATABASE \(database.name) WITH (FORCE)")
            try database.cluster.psql("CREATE DATABASE \(database.name) TEMPLATE \(copy)")
        } else {
            try StoreFiles.putBack(copy, over: storePath)
        }
        try startServer()
        for (name, machine) in machines where (try? store.authenticate(token: machine.token)) == nil {
            // A device added after the backup is added again.
            machine.token =
                try (try? store.reissueToken(account: "alice", device: name))
                ?? store.addDevice(account: "alice", name: name)
        }
    }

    @discardableResult
    func sync(_ machine: SimulatedMachine, token: String? = nil) throws -> SyncClient.Summary {
        try client(machine, token: token).sync()
    }

    /// The live rules of a replica: pattern → browser.
    static func rules(_ replica: Replica) throws -> [String: String] {
        Dictionary(uniqueKeysWithValues: try replica.rules().map { ($0.pattern, $0.browser) })
    }

    /// Every record's fields, tombstones included.
    /// What was written to `replica` (device names, which each machine adds
    /// at its first push, left out; `DeviceNameTests` checks those).
    static func state(_ replica: Replica) throws -> [String: [String: StampedValue]] {
        var result: [String: [String: StampedValue]] = [:]
        // What its user holds: not the names of devices, nor devices' ledgers.
        for collection in RecordCollection.allCases where collection != .ledger {
            for (key, state) in try replica.records(collection) where !key.hasPrefix("device_name/") {
                result["\(collection.rawValue)/\(key)"] = state.fields
            }
        }
        return result
    }

    /// A replica that joins now and pulls everything: what a new laptop gets.
    func freshView() throws -> [String: [String: StampedValue]] {
        let fresh = try machine("fresh\(machines.count)")
        try sync(fresh)
        return try Self.state(fresh.replica)
    }
}
