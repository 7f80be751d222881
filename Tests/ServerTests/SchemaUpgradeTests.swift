import Foundation
import Model
import Storage
import SyncCore
import TestSupport
import Testing

@testable import BrsyncServer
@testable import ServerStore

/// A store made by an earlier brsyncd opens with this one: its schema moves
/// up, and nothing it holds changes meaning.
@Suite struct SchemaUpgradeTests {
    /// Version 8 moved records from a WITHOUT ROWID table (a sealed record
    /// spilled into an overflow page of its own) to a table with row ids and
    /// a key index. A version-7 store keeps its records, cursors, chains and
    /// epoch, and goes on taking pushes that update and add records.
    @Test func aVersion7StoreKeepsItsRecordsInTheNewTable() throws {
        let directory = try TemporaryDirectory(prefix: "brsyncd-upgrade")
        defer { directory.remove() }
        let path = directory.file("store.sqlite")
        var store: SyncStore? = try SyncStore(sqlite: path)
        try store!.addAccount("alice")
        let token = try store!.addDevice(account: "alice", name: "laptop")
        var clock = HybridLogicalClock(device: "laptop-1")
        var chain = ""
        var sequence: Int64 = 0
        func change(_ key: String, _ browser: String) -> ChangeRecord {
            sequence += 1
            let stamp = clock.tick(wallMillis: 1_790_000_000_000 + sequence)
            var versions = VersionVector()
            versions.increment("laptop-1")
            let fields = [
                "browser": StampedValue(.string(browser), stamp: stamp),
                "pattern": StampedValue(.string(key), stamp: stamp),
            ]
            return ChangeRecord(
                sequence: sequence, collection: .rules, key: key, state: RecordState(fields: fields, versions: versions)
            )
        }
        func push(_ changes: [ChangeRecord], into store: SyncStore) throws -> PushResponse {
            let request = PushRequest(
                device: "laptop-1", from: changes[0].sequence, to: changes.last!.sequence, changes: changes,
                base: changes[0].sequence == 1 ? nil : chain)
            chain = ChangeRecord.chain(changes, after: chain).last!
            return try store.push(
                request, from: try store.authenticate(token: token), maxClockOffsetMilliseconds: .max / 4)
        }
        // Long values: records of about 1 KB, as sealed ones are.
        let long = String(repeating: "x", count: 900)
        #expect(
            try push((0..<30).map { change("site\($0).example", "firefox" + ($0 % 3 == 0 ? long : "")) }, into: store!)
                .applied == 30)
        let before = try store!.records(account: "alice")
        let epoch = store!.epoch
        store!.close()
        store = nil

        // Back to version 7's layout, as an earlier brsyncd left it.
        do {
            let database = try Database(path: path)
            try database.execute(
                """
                CREATE TABLE records_v7 (
                    account_id INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
                    collection TEXT NOT NULL, key TEXT NOT NULL, fields TEXT NOT NULL, versions TEXT NOT NULL,
                    seq INTEGER NOT NULL, deleted INTEGER NOT NULL DEFAULT 0, updated_at INTEGER NOT NULL,
                    known_to TEXT, known_after INTEGER NOT NULL DEFAULT 0,
                    PRIMARY KEY (account_id, collection, key)
                ) WITHOUT ROWID;
                INSERT INTO records_v7 SELECT account_id, collection, key, fields, versions, seq, deleted, updated_at, known_to, known_after FROM records;
                DROP TABLE records;
                ALTER TABLE records_v7 RENAME TO records;
                CREATE UNIQUE INDEX records_by_seq ON records (account_id, seq);
                DROP TABLE enrollments;
                ALTER TABLE accounts DROP COLUMN signing_key;
                ALTER TABLE accounts DROP COLUMN retired_keys;
                ALTER TABLE accounts DROP COLUMN encryption_reset;
                ALTER TABLE accounts DROP COLUMN epoch;
                DROP TRIGGER IF EXISTS records_counted_insert;
                DROP TRIGGER IF EXISTS records_counted_update;
                DROP TRIGGER IF EXISTS records_counted_delete;
                ALTER TABLE accounts DROP COLUMN record_count;
                ALTER TABLE accounts DROP COLUMN byte_count;
                ALTER TABLE accounts DROP COLUMN max_records;
                ALTER TABLE accounts DROP COLUMN max_bytes;
                ALTER TABLE accounts DROP COLUMN max_devices;
                DROP TABLE refusals;
                ALTER TABLE devices DROP COLUMN protocol;
                ALTER TABLE accounts DROP COLUMN sealed_format;
                ALTER TABLE accounts DROP COLUMN sealed_format_since;
                ALTER TABLE accounts DROP COLUMN counted_by_writer;
                PRAGMA user_version = 7;
                """)
            #expect(
                try database.scalar("SELECT sql FROM sqlite_master WHERE name = 'records'")?.stringValue?.contains(
                    "WITHOUT ROWID") == true)
        }

        let upgraded = try SyncStore(sqlite: path)
        defer { upgraded.close() }
        let check = try Database(path: path)
        #expect(try check.userVersion == StoreSchema.sqlite.latestVersion)
        #expect(
            try check.scalar("SELECT sql FROM sqlite_master WHERE name = 'records'")?.stringValue?.contains(
                "WITHOUT ROWID") == false)
        #expect(
            try check.scalar(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name IN ('records_by_key', 'records_by_seq')"
            )?.intValue == 2)
        #expect(try check.scalar("PRAGMA integrity_check")?.stringValue == "ok")
        #expect(try check.scalar("SELECT COUNT(*) FROM refusals")?.intValue == 0, "the refusals table is made")
        #expect(try upgraded.records(account: "alice") == before)
        #expect(try upgraded.accounts().first?.records == 30, "the upgrade counts what the account holds")
        #expect(upgraded.epoch == epoch, "an upgrade is not a restore")
        // Nor does the account get a timeline of its own: its clients see the epoch they knew.
        let page = try Wire.read(
            String(decoding: try upgraded.pullText(token: token, since: 30, limit: 10), as: UTF8.self),
            PullResponse.init(reading:))
        #expect(page.epoch == epoch)
        // The stream goes on (no gap, no divergence); an update and a new record.
        let response = try push([change("site0.example", "chrome"), change("new.example", "firefox")], into: upgraded)
        #expect(response.acknowledged == 32 && response.applied == 2 && response.epoch == epoch)
        let after = try upgraded.records(account: "alice")
        #expect(after.count == 31)
        #expect(after.first { $0.key == "site0.example" }?.state.fields["browser"]?.value == .string("chrome"))
        #expect(after.map(\.sequence) == after.map(\.sequence).sorted())
    }
}
