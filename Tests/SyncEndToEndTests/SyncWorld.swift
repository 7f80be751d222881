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

/// A real server (``TestServer``: an SQLite file or a PostgreSQL database,
/// TLS on 127.0.0.1) that can be stopped, have its store replaced, and be
/// started again, and machines with clocks of their own.
final class SyncWorld: @unchecked Sendable {
    // Used by one test thread.
    let directory: TemporaryDirectory
    /// The server, its store and its copies.
    let host: TestServer
    var machines: [String: SimulatedMachine] = [:]
    /// The protocol machines made from now on speak (an older one writes sealed format 1).
    var protocolVersion = Wire.protocolVersion
    /// The SQLite store's file (a world on SQLite).
    let storePath: String

    var caFile: String { host.caFile }
    var store: SyncStore { host.store }
    var server: SyncServer { host.server }
    /// Where the world's clients connect: the server's port, or a stand-in's
    /// (a lying server, a gateway) while a test points them at one.
    var port: UInt16 {
        get { redirected ?? host.port }
        set { redirected = newValue == host.port ? nil : newValue }
    }
    private var redirected: UInt16?

    init(_ kind: StoreKind = .sqlite) throws {
        directory = try TemporaryDirectory(prefix: "brsync-world")
        storePath = directory.file("server.sqlite")
        // Lying servers here change timelines as they like; the gate on honest ones is tested on its own.
        host = try TestServer(
            kind, in: directory,
            configure: {
                $0.defaultPullLimit = 7
                $0.timelineStartIntervalMilliseconds = 0
            })
        try store.addAccount("alice")
    }

    deinit {
        host.stop()
        directory.remove()
    }

    func stopServer() { host.stop() }

    func startServer() throws { try host.start() }

    /// What `brsyncd migrate --from sqlite:… --to postgres://…` does, with
    /// the server stopped (``TestServer/moveToPostgres()``).
    func moveToPostgres() throws { try host.moveToPostgres() }

    @discardableResult
    func machine(_ name: String, account: String = "alice", skew: Int64 = 0) throws -> SimulatedMachine {
        if !(try store.accounts().contains { $0.name == account }) { try store.addAccount(account) }
        let token = try store.addDevice(account: account, name: name)
        let machine = try SimulatedMachine(name: name, home: directory.file(name), token: token, skewMilliseconds: skew)
        machine.protocolVersion = protocolVersion
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
        options.protocolVersion = machine.protocolVersion
        return try host.client(machine.replica, token: token ?? machine.token, port: port, options: options)
    }

    /// The server's store as it is now, for ``restoreServer(_:)``: a copy
    /// of the stopped server's file (SQLite) or database (PostgreSQL).
    func backupServer() throws -> TestServer.Copy {
        try host.copy(online: false)
    }

    /// Puts a copy from ``backupServer()`` back and starts the server on it;
    /// tokens issued since are issued again (devices added since are added
    /// again), as an administrator would.
    func restoreServer(_ copy: TestServer.Copy) throws {
        try host.restore(copy)
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
