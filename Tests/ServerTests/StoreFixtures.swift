import Foundation
import JSON
import Postgres
import Storage
import SyncCore
import TestSupport
import Testing

@testable import BrsyncServer
@testable import ServerStore

/// Stores of every earlier schema version, kept as SQL text in
/// Tests/Data/StoreFixtures (`sqlite-vN.sql`, `postgres-vN.sql`), each
/// holding the same account: a device with a token, a second device with a
/// join code, a replica stream, three records (one a tombstone), and a
/// refused change once the schema keeps them. ``StoreUpgradeTests`` opens
/// each with this brsyncd.
///
/// A fixture is written once, when its version is the newest one shipped
/// (before the next step is added), and never again: it stands for stores
/// that brsyncd made. `BRSYNC_WRITE_STORE_FIXTURES=1` writes the missing
/// ones (an existing file is left alone).
enum StoreFixtures {
    static let folder = Repository.file("Tests/Data/StoreFixtures")
    static let token = "brs_" + String(repeating: "f1xtureLaptopT0ken", count: 3).prefix(43)
    static let joinSecret = "brj_" + String(repeating: "f1xtureJ0inSecret", count: 3).prefix(43)
    static let epoch = "f1x7e0e90c0000a1"
    static let stampWall: Int64 = 1_790_000_000_000

    static func file(_ dialect: String, version: Int) -> String { "\(folder)/\(dialect)-v\(version).sql" }

    /// The account's records as a client pushed them.
    static var records: [ChangeRecord] {
        func record(
            _ collection: RecordCollection, _ key: String, _ sequence: Int64, _ fields: [String: JSONValue]
        )
            -> ChangeRecord
        {
            let stamp = HLCTimestamp(wallMillis: stampWall + sequence, counter: 0, device: "laptop-1")
            var versions = VersionVector()
            for _ in 0..<sequence { versions.increment("laptop-1") }
            return ChangeRecord(
                sequence: sequence, collection: collection, key: key,
                state: RecordState(fields: fields.mapValues { StampedValue($0, stamp: stamp) }, versions: versions))
        }
        return [
            record(
                .rules, "*.zoom.us", 1,
                ["pattern": .string("*.zoom.us"), "browser": .string("chrome"), "deleted": .bool(false)]),
            record(.rules, "github.com", 2, ["pattern": .string("github.com"), "deleted": .bool(true)]),
            record(.settings, "picker", 3, ["value": .string("always"), "deleted": .bool(false)]),
        ]
    }

    /// One row of a table: each column's value as SQLite and PostgreSQL
    /// write it. Only the columns the table has at a version are written.
    struct Row {
        let table: String
        let values: [(column: String, sqlite: String, postgres: String)]
    }

    static func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
    static func bytes(_ value: [UInt8]) -> (sqlite: String, postgres: String) {
        let hex = value.map { String(format: "%02x", $0) }.joined()
        return ("X'\(hex)'", "'\\x\(hex)'::bytea")
    }

    static var rows: [Row] {
        func same(_ column: String, _ value: String) -> (column: String, sqlite: String, postgres: String) {
            (column, value, value)
        }
        let tokenHash = bytes(Tokens.hash(token))
        let secretHash = bytes(Tokens.hash(joinSecret))
        let refusedKey = bytes(Array("bad\u{0}key".utf8))
        var result = [
            Row(
                table: "accounts",
                values: [
                    same("id", "1"), same("name", "'alice'"), same("uid", "'0123456789abcdef'"), same("next_seq", "4"),
                    same("purged_through", "0"), same("stamp_high", String(stampWall + 3)),
                    same("created_at", String(stampWall)), same("key_id", "''"), same("epoch", quoted(epoch)),
                ]),
            Row(
                table: "devices",
                values: [
                    same("id", "1"), same("account_id", "1"), same("name", "'laptop'"),
                    ("token_hash", tokenHash.sqlite, tokenHash.postgres), same("client_device", "'laptop-1'"),
                    ("revoked", "0", "false"), same("created_at", String(stampWall)),
                    same("last_seen", String(stampWall + 10)), same("last_device_seq", "4"),
                    same("acknowledged_cursor", "3"),
                ]),
            Row(
                table: "devices",
                values: [
                    same("id", "2"), same("account_id", "1"), same("name", "'phone'"),
                    ("token_hash", secretHash.sqlite, secretHash.postgres), ("revoked", "0", "false"),
                    same("created_at", String(stampWall)),
                ]),
            Row(
                table: "device_streams",
                values: [
                    same("account_id", "1"), same("client_device", "'laptop-1'"), same("last_seq", "4"),
                    same("last_digest", "''"),
                ]),
            Row(
                table: "enrollments",
                values: [
                    ("secret_hash", secretHash.sqlite, secretHash.postgres), same("device_id", "2"),
                    same("expires_at", "4102444800000"),
                ]),
            Row(
                table: "refusals",
                values: [
                    same("account_id", "1"), same("client_device", "'laptop-1'"), same("seq", "4"),
                    same("collection", "'rules'"), ("key", refusedKey.sqlite, refusedKey.postgres),
                    (
                        "reason", bytes(Array("a key holds NUL".utf8)).sqlite,
                        bytes(Array("a key holds NUL".utf8)).postgres
                    ),
                ]),
        ]
        for (index, record) in records.enumerated() {
            let deleted = record.state.isDeleted
            result.append(
                Row(
                    table: "records",
                    values: [
                        same("account_id", "1"), same("collection", quoted(record.collection.rawValue)),
                        same("key", quoted(record.key)),
                        same("fields", quoted(RecordState.encodeFields(record.state.fields))),
                        same("versions", quoted(RecordState.encodeVersions(record.state.versions))),
                        same("seq", String(index + 1)), ("deleted", deleted ? "1" : "0", deleted ? "true" : "false"),
                        same("updated_at", String(stampWall + Int64(index))), same("known_to", "'laptop-1'"),
                        same("known_after", "0"),
                    ]))
        }
        return result
    }

    /// `INSERT`s of ``rows`` into the tables `columns` says exist, with the columns each has.
    static func inserts(columns: [String: Set<String>], postgres: Bool) -> [String] {
        rows.compactMap { row in
            guard let present = columns[row.table] else { return nil }
            let values = row.values.filter { present.contains($0.column) }
            return "INSERT INTO \(row.table) (\(values.map(\.column).joined(separator: ", "))) VALUES ("
                + values.map { postgres ? $0.postgres : $0.sqlite }.joined(separator: ", ") + ")"
        }
    }

    struct FixtureError: Error { let message: String }

    /// Writes the fixtures missing from ``folder``.
    static func writeMissing() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for version in 1..<StoreSchema.sqlite.latestVersion where !exists("sqlite", version) {
            try writeSQLite(version: version)
        }
        for version in 1..<StoreSchema.postgresVersion where !exists("postgres", version) {
            try writePostgres(version: version)
        }
    }

    static func exists(_ dialect: String, _ version: Int) -> Bool {
        FileManager.default.fileExists(atPath: file(dialect, version: version))
    }

    static func writeSQLite(version: Int) throws {
        let directory = try TemporaryDirectory(prefix: "brsyncd-fixture")
        defer { directory.remove() }
        let path = directory.file("store.sqlite")
        do {
            let database = try Database(path: path, mode: .readWriteCreate)
            try Migrator(Array(StoreSchema.sqlite.migrations.prefix(version))).migrate(database)
            var columns: [String: Set<String>] = [:]
            for table in try database.query(
                "SELECT name FROM sqlite_master WHERE type = 'table'", [], { $0.string(0) ?? "" })
            {
                columns[table] = Set(
                    try database.query("SELECT name FROM pragma_table_info(?)", [.text(table)]) { $0.string(0) ?? "" })
            }
            for insert in inserts(columns: columns, postgres: false) { try database.execute(insert) }
            try database.run("INSERT INTO meta (key, value) VALUES ('epoch', ?)", [.text(epoch)])
        }
        let dumped = Shell.run("sqlite3 '\(path)' .dump")
        guard dumped.status == 0 else { throw FixtureError(message: "sqlite3 .dump failed: \(dumped.output)") }
        let dump = dumped.output
        let header = """
            -- A brsyncd SQLite store of schema version \(version) (StoreFixtures.swift; never rewritten).
            PRAGMA application_id = \(SQLiteDialect.applicationID);
            PRAGMA user_version = \(version);

            """
        try (header + dump).write(toFile: file("sqlite", version: version), atomically: true, encoding: .utf8)
    }

    static func writePostgres(version: Int) throws {
        let cluster = try PostgresCluster.shared()
        let url = try cluster.createDatabase()
        let connection = try PostgresConnection(PostgresConfiguration(url: url, password: cluster.password))
        try connection.execute("CREATE TABLE brsync_meta (key text PRIMARY KEY, value text NOT NULL)")
        for (_, sql, fill) in StoreSchema.postgres.prefix(version) {
            try connection.execute(sql)
            try fill?(connection)
        }
        try connection.run(
            "INSERT INTO brsync_meta (key, value) VALUES ('schema_version', $1)", [.text(String(version))])
        try connection.run("UPDATE brsync_meta SET value = $1 WHERE key = 'epoch'", [.text(epoch)])
        var columns: [String: Set<String>] = [:]
        for (table, column) in try connection.query(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'", [],
            { ($0.string(0) ?? "", $0.string(1) ?? "") })
        {
            columns[table, default: []].insert(column)
        }
        for insert in inserts(columns: columns, postgres: true) { try connection.execute(insert) }
        for table in ["accounts", "devices"] {
            try connection.execute(
                "SELECT setval(pg_get_serial_sequence('\(table)', 'id'), (SELECT MAX(id) FROM \(table)))")
        }
        let dump = try cluster.dumpSQL(database: PostgresCluster.databaseName(url))
        // What psql alone reads (its `\` commands) and the session settings
        // pg_dump begins with (one empties the search path) are left out:
        // the fixture is plain SQL a connection runs.
        let kept = dump.split(separator: "\n", omittingEmptySubsequences: false).filter { line in
            !(line.hasPrefix("\\") || line.hasPrefix("SET ") || line.contains("set_config(") || line.hasPrefix("--"))
        }
        let header =
            "-- A brsyncd PostgreSQL store of schema version \(version) (StoreFixtures.swift; never rewritten).\n"
        try (header + kept.joined(separator: "\n").replacing(/\n{3,}/, with: "\n\n")).write(
            toFile: file("postgres", version: version), atomically: true, encoding: .utf8)
    }
}
