import Foundation
import Postgres
import Storage
import SyncCore
import TestSupport
import Testing

@testable import BrsyncServer
@testable import ServerStore

/// A store of every earlier schema version (``StoreFixtures``), SQLite and
/// PostgreSQL, opens with this brsyncd: it ends at the newest version with
/// the same schema as a store made new, keeps what it held (records, tokens,
/// join codes, refusals, what each account counts against its quota), and
/// takes a push.
@Suite struct StoreUpgradeTests {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["BRSYNC_WRITE_STORE_FIXTURES"] == "1"))
    func writeMissingFixtures() throws { try StoreFixtures.writeMissing() }

    @Test(arguments: 1..<StoreSchema.sqlite.latestVersion)
    func anSQLiteStoreOfEachEarlierVersionUpgrades(_ version: Int) throws {
        let fixture = try String(contentsOfFile: StoreFixtures.file("sqlite", version: version), encoding: .utf8)
        let directory = try TemporaryDirectory(prefix: "brsyncd-upgrade")
        defer { directory.remove() }
        let path = directory.file("store.sqlite")
        do {
            let database = try Database(path: path, mode: .readWriteCreate)
            try database.execute(fixture)
            #expect(try database.userVersion == version)
        }
        let store = try SyncStore(sqlite: path)
        try checkHoldings(of: store, joinCodes: fixture.contains("INSERT INTO enrollments"), version: version)
        #expect(store.epoch == StoreFixtures.epoch)
        store.close()

        let freshPath = directory.file("fresh.sqlite")
        try SyncStore(sqlite: freshPath).close()
        func schema(_ path: String) throws -> [String] {
            let database = try Database(path: path)
            return try database.query(
                "SELECT type || ' ' || name || ': ' || COALESCE(sql, '') FROM sqlite_master ORDER BY type, name"
            ) { $0.string(0) ?? "" }
        }
        #expect(try schema(path) == schema(freshPath), "version \(version)")
        #expect(try Database(path: path).userVersion == StoreSchema.sqlite.latestVersion)
    }

    @Test(arguments: 1..<StoreSchema.postgresVersion)
    func aPostgreSQLStoreOfEachEarlierVersionUpgrades(_ version: Int) throws {
        let fixture = try String(contentsOfFile: StoreFixtures.file("postgres", version: version), encoding: .utf8)
        let cluster = try PostgresCluster.shared()
        let url = try cluster.createDatabase()
        let configuration = try PostgresConfiguration(url: url, password: cluster.password)
        do {
            let connection = try PostgresConnection(configuration)
            try connection.execute(fixture)
        }
        let store = try SyncStore(postgres: configuration, connections: 2)
        try checkHoldings(of: store, joinCodes: fixture.contains("INSERT INTO public.enrollments"), version: version)
        store.close()

        let fresh = try PostgresConfiguration(url: try cluster.createDatabase(), password: cluster.password)
        try SyncStore(postgres: fresh, connections: 1).close()
        #expect(try postgresSchema(configuration) == postgresSchema(fresh), "version \(version)")
        let stored = try PostgresConnection(configuration).scalar(
            "SELECT value FROM brsync_meta WHERE key = 'schema_version'")
        #expect(stored == .text(String(StoreSchema.postgresVersion)))
    }

    /// What the fixture's account holds, read and written through the store.
    func checkHoldings(of store: SyncStore, joinCodes: Bool, version: Int) throws {
        let expected = StoreFixtures.records
        let held = try store.records(account: "alice").sorted { $0.key < $1.key }
        #expect(held.map(\.key) == expected.map(\.key).sorted(), "version \(version)")
        for record in expected {
            #expect(
                held.first { $0.key == record.key }?.state == record.state, "\(record.key), version \(version)")
        }
        let device = try store.authenticate(token: StoreFixtures.token)
        #expect(device.name == "laptop")
        #expect(try store.joinSecretIssued(StoreFixtures.joinSecret) == joinCodes, "version \(version)")
        #expect(try store.accounts().first { $0.name == "alice" }?.records == 3, "version \(version)")

        // The laptop's stream goes on after change 4 (its digest was
        // forgotten at step 6, or never kept: the next push is taken as it comes).
        let stamp = HLCTimestamp(
            wallMillis: StoreFixtures.stampWall + 100, counter: 0, device: "laptop-1")
        var versions = VersionVector()
        versions.increment("laptop-1") // a new record: its first version
        let change = ChangeRecord(
            sequence: 5, collection: .rules, key: "example.org",
            state: RecordState(
                fields: [
                    "pattern": StampedValue(.string("example.org"), stamp: stamp),
                    "deleted": StampedValue(.bool(false), stamp: stamp),
                ], versions: versions))
        let pushed = try store.push(
            PushRequest(device: "laptop-1", from: 5, to: 5, changes: [change], base: nil),
            from: device, maxClockOffsetMilliseconds: .max / 4)
        #expect(pushed.applied == 1, "version \(version): \(pushed)")
        #expect(try store.accounts().first { $0.name == "alice" }?.records == 4, "version \(version)")
    }

    /// The tables' columns, the indexes, constraints, triggers and functions.
    func postgresSchema(_ configuration: PostgresConfiguration) throws -> [String] {
        let connection = try PostgresConnection(configuration)
        let queries = [
            """
            SELECT table_name || '.' || column_name || ' ' || ordinal_position || ' ' || data_type || ' '
                || is_nullable || ' ' || COALESCE(column_default, '')
            FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position
            """,
            "SELECT indexname || ': ' || indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname",
            """
            SELECT conrelid::regclass::text || ' ' || conname || ': ' || pg_get_constraintdef(oid)
            FROM pg_constraint WHERE connamespace = 'public'::regnamespace ORDER BY 1
            """,
            "SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal ORDER BY tgname",
            """
            SELECT proname || ': ' || prosrc FROM pg_proc
            WHERE pronamespace = 'public'::regnamespace ORDER BY proname
            """,
        ]
        return try queries.flatMap { try connection.query($0) { $0.string(0) ?? "" } }
    }
}
