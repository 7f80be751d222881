import Foundation
import Postgres
import SyncCore
import TestSupport
import Testing

@testable import BrsyncServer
@testable import ServerStore

/// A PostgreSQL store made by an earlier brsyncd opens with this one.
@Suite struct PostgresSchemaUpgradeTests {
    /// Version 10 checks a record's account once a statement instead of by a
    /// foreign key (a lookup a row). A version-9 store keeps its records and
    /// goes on taking pushes; a record of no account is still refused with
    /// the foreign key's error, an account with records keeps its id, and
    /// deleting an account still deletes its records, whoever deletes it.
    @Test func aVersion9StoreChecksAccountsOnceAStatement() throws {
        let cluster = try PostgresCluster.shared()
        let configuration = try PostgresConfiguration(url: try cluster.createDatabase(), password: cluster.password)
        var store: SyncStore? = try SyncStore(postgres: configuration, connections: 2)
        try store!.addAccount("alice")
        try store!.addAccount("bob")
        let token = try store!.addDevice(account: "alice", name: "laptop")
        let bobToken = try store!.addDevice(account: "bob", name: "phone")
        var clocks: [String: HybridLogicalClock] = [:]
        var chains: [String: String] = [:]
        var sequences: [String: Int64] = [:]
        func push(
            _ keys: [String], browser: String, as device: String, token: String, into store: SyncStore
        ) throws
            -> PushResponse
        {
            let changes = keys.map { key in
                sequences[device, default: 0] += 1
                let stamp = clocks[device, default: HybridLogicalClock(device: device)].tick(
                    wallMillis: 1_790_000_000_000 + sequences[device]!)
                var versions = VersionVector()
                versions.increment(device)
                return ChangeRecord(
                    sequence: sequences[device]!, collection: .rules, key: key,
                    state: RecordState(
                        fields: [
                            "browser": StampedValue(.string(browser), stamp: stamp),
                            "pattern": StampedValue(.string(key), stamp: stamp),
                        ], versions: versions))
            }
            let request = PushRequest(
                device: device, from: changes[0].sequence, to: changes.last!.sequence, changes: changes,
                base: chains[device])
            chains[device] = ChangeRecord.chain(changes, after: chains[device] ?? "").last!
            return try store.push(
                request, from: try store.authenticate(token: token), maxClockOffsetMilliseconds: .max / 4)
        }
        #expect(
            try push(
                (0..<20).map { "site\($0).example" }, browser: "firefox", as: "laptop-1", token: token, into: store!
            )
            .applied == 20)
        #expect(try push(["bob.example"], browser: "chrome", as: "phone-1", token: bobToken, into: store!).applied == 1)
        let before = try store!.records(account: "alice")
        store!.close()
        store = nil

        // Back to version 9, as an earlier brsyncd left it.
        let connection = try PostgresConnection(configuration)
        try connection.execute(
            """
            DROP TRIGGER records_have_accounts_insert ON records;
            DROP TRIGGER records_have_accounts_update ON records;
            DROP TRIGGER accounts_delete_records ON accounts;
            DROP TRIGGER accounts_truncate_records ON accounts;
            DROP TRIGGER accounts_id_kept ON accounts;
            DROP FUNCTION brsync_records_have_accounts();
            DROP FUNCTION brsync_delete_account_records();
            DROP FUNCTION brsync_truncate_records();
            DROP FUNCTION brsync_account_id_kept();
            ALTER TABLE records ADD FOREIGN KEY (account_id) REFERENCES accounts (id) ON DELETE CASCADE;
            ALTER TABLE devices DROP COLUMN protocol;
            ALTER TABLE accounts DROP COLUMN sealed_format, DROP COLUMN sealed_format_since;
            UPDATE brsync_meta SET value = '9' WHERE key = 'schema_version';
            """)
        let foreignKeys =
            "SELECT count(*) FROM pg_constraint WHERE conrelid = 'records'::regclass AND contype = 'f'"
        #expect(try connection.scalar(foreignKeys) == .text("1"))

        let upgraded = try SyncStore(postgres: configuration, connections: 2)
        defer { upgraded.close() }
        #expect(
            try connection.scalar("SELECT value FROM brsync_meta WHERE key = 'schema_version'")
                == .text(String(StoreSchema.postgresVersion)))
        #expect(try connection.scalar(foreignKeys) == .text("0"))
        #expect(try upgraded.records(account: "alice") == before)
        #expect(try upgraded.accounts().first { $0.name == "alice" }?.records == 20)
        // An update and a new record, then records of another account's push.
        let response = try push(
            ["site0.example", "new.example"], browser: "chrome", as: "laptop-1", token: token, into: upgraded)
        #expect(response.applied == 2)
        let after = try upgraded.records(account: "alice")
        #expect(after.count == 21)
        #expect(after.first { $0.key == "site0.example" }?.state.fields["browser"]?.value == .string("chrome"))
        #expect(try upgraded.accounts().first { $0.name == "alice" }?.records == 21)

        // A record of no account is refused, whether inserted or moved there.
        let missing = "SELECT COALESCE(max(id), 0) + 1000 FROM accounts"
        guard case .text(let nobody) = try connection.scalar(missing) else {
            Issue.record("no account id")
            return
        }
        for statement in [
            """
            INSERT INTO records (account_id, collection, key, fields, versions, seq, deleted, updated_at)
            VALUES (\(nobody), 'rules', 'x.example', '{}', '{}', 1, false, 0)
            """,
            "UPDATE records SET account_id = \(nobody) WHERE key = 'new.example'",
        ] {
            do {
                try connection.execute(statement)
                Issue.record("taken: \(statement)")
            } catch let error as PostgresError {
                #expect(error.sqlState == "23503", "\(error)")
            }
        }
        #expect(try upgraded.records(account: "alice").count == 21, "nothing changed")

        // An account with records keeps its id (bob's devices and streams,
        // whose foreign keys would refuse it too, gone first).
        do {
            try connection.execute(
                """
                DELETE FROM device_streams WHERE account_id = (SELECT id FROM accounts WHERE name = 'bob');
                DELETE FROM devices WHERE account_id = (SELECT id FROM accounts WHERE name = 'bob');
                UPDATE accounts SET id = id + 5000 WHERE name = 'bob';
                """)
            Issue.record("bob's id changed under his records")
        } catch let error as PostgresError {
            #expect(error.sqlState == "23503" && error.message.contains("keeps its id"), "\(error)")
        }
        // Deleting an account deletes its records: through brsyncd, by hand,
        // and by truncating the accounts.
        let count = "SELECT count(*) FROM records"
        try upgraded.removeAccount("alice")
        #expect(try connection.scalar(count) == .text("1"))
        try connection.execute("DELETE FROM accounts WHERE name = 'bob'")
        #expect(try connection.scalar(count) == .text("0"))
        try upgraded.addAccount("carol")
        let carolToken = try upgraded.addDevice(account: "carol", name: "tablet")
        #expect(
            try push(["carol.example"], browser: "chrome", as: "tablet-1", token: carolToken, into: upgraded).applied
                == 1)
        #expect(try connection.scalar(count) == .text("1"))
        try connection.execute("TRUNCATE accounts CASCADE")
        #expect(try connection.scalar(count) == .text("0"))
    }
}
