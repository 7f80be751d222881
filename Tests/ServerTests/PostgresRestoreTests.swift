import Foundation
import Postgres
import TestSupport
import Testing

@testable import BrsyncServer
@testable import ServerStore

/// A PostgreSQL database that is not the one that served last (restored from
/// a dump, copied, put back under the same name) starts a new epoch, as a
/// copied SQLite file does; the same database opened again does not.
@Suite struct PostgresRestoreTests {
    static func name(_ url: String) -> String { PostgresCluster.databaseName(url) }

    @Test func theSameDatabaseKeepsItsEpochAndACopyStartsANewOne() throws {
        let cluster = try PostgresCluster.shared()
        let url = try cluster.createDatabase()
        let first = try SyncStore(postgres: try PostgresConfiguration(url: url, password: cluster.password))
        try first.addAccount("alice")
        let epoch = first.epoch
        first.close()
        let again = try SyncStore(postgres: try PostgresConfiguration(url: url, password: cluster.password))
        #expect(again.epoch == epoch, "opening the same database again is no restore")
        again.close()

        let copy = Self.name(url) + "_copy"
        try cluster.psql("CREATE DATABASE \(copy) TEMPLATE \(Self.name(url))")
        let copied = try SyncStore(
            postgres: try PostgresConfiguration(url: cluster.url(database: copy), password: cluster.password))
        defer { copied.close() }
        #expect(copied.epoch != epoch, "a copy of the database is another timeline")
        #expect(try copied.accounts().map(\.name) == ["alice"])
        let copiedEpoch = copied.epoch
        let reopened = try SyncStore(
            postgres: try PostgresConfiguration(url: cluster.url(database: copy), password: cluster.password))
        defer { reopened.close() }
        #expect(reopened.epoch == copiedEpoch, "the copy, opened again, keeps its own epoch")
    }

    /// The administrator puts an older copy back under the store's name while
    /// brsyncd runs: the connections break, and the first new one notices.
    @Test func aDatabasePutBackWhileServingStartsANewEpoch() throws {
        let cluster = try PostgresCluster.shared()
        let url = try cluster.createDatabase()
        let name = Self.name(url)
        let store = try SyncStore(
            postgres: try PostgresConfiguration(url: url, password: cluster.password), connections: 2)
        defer { store.close() }
        try store.addAccount("alice")
        _ = try store.addDevice(account: "alice", name: "laptop")
        let epoch = store.epoch
        store.close() // the copy needs the database to itself (a stopped server)
        try cluster.psql("CREATE DATABASE \(name)_old TEMPLATE \(name)")

        let serving = try SyncStore(
            postgres: try PostgresConfiguration(url: url, password: cluster.password), connections: 2)
        defer { serving.close() }
        #expect(serving.epoch == epoch)
        _ = try serving.addDevice(account: "alice", name: "desktop")
        try cluster.psql("DROP DATABASE \(name) WITH (FORCE)")
        try cluster.psql("CREATE DATABASE \(name) TEMPLATE \(name)_old")
        // A request on a broken connection fails (the client retries); the next connects anew.
        var devices: [Store.Device]?
        for _ in 0..<5 where devices == nil { devices = try? serving.devices(account: "alice") }
        #expect(devices?.map(\.name) == ["laptop"], "the old copy is what serves now")
        #expect(serving.epoch != epoch, "a database put back under the same name is another timeline")
    }

    @Test func identitiesDifferOnlyInPartsBothHave() {
        #expect(
            DatabaseIdentity.differ("system=1/timeline=00000001/database=5", "system=1/timeline=00000002/database=5"))
        #expect(DatabaseIdentity.differ("system=1/database=5", "system=1/database=6"))
        #expect(
            !DatabaseIdentity.differ("system=1/timeline=00000001/database=5", "database=5"),
            "a part the server stopped showing is no change")
        #expect(!DatabaseIdentity.differ("", "system=1/database=5"))
        #expect(!DatabaseIdentity.differ("garbage", "system=1"))
    }
}
