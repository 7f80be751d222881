import Foundation
import JSON
import Model
import Storage
import SyncCore
import SystemServices
import TestSupport
import Testing

@testable import Replica

@Suite struct ReplicaFileTests {
    func expectUntouched(_ path: String, _ body: () throws -> Void, message: String) throws {
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect { try body() } throws: { String(describing: $0).contains(message) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test func aFileThatIsNotADatabase() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file(Replica.fileName)
        try Data(String(repeating: "not sqlite ", count: 500).utf8).write(to: URL(fileURLWithPath: path))
        try expectUntouched(path, { _ = try Replica.open(home: directory.path) }, message: "not an SQLite database")
        try expectUntouched(
            path, { _ = try Replica.initialize(home: directory.path, deviceName: nil) },
            message: "not an SQLite database")
    }

    /// A replica whose pages were overwritten says it is damaged and how to
    /// start again from the server's copy; nothing is written to it.
    @Test func aCorruptReplicaSaysHowToStartAgain() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.file(Replica.fileName)
        do {
            let replica = try Replica.initialize(home: directory.path, deviceName: nil).replica
            try replica.addBrowser(id: "firefox", name: nil, format: nil, scheme: nil, exec: nil)
            try replica.addRule(pattern: "zoom.us", browser: "firefox", priority: nil)
        } // closed: the WAL is checkpointed into the file
        var bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        for index in 100..<min(bytes.count, 8192) { bytes[index] = 0x41 }
        try bytes.write(to: URL(fileURLWithPath: file))
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file + suffix) }
        try expectUntouched(file, { _ = try Replica.open(home: directory.path) }, message: "is damaged")
        do { _ = try Replica.open(home: directory.path) } catch {
            #expect("\(error)".contains("brsync init") && "\(error)".contains("mv \(file) \(file).damaged"), "\(error)")
        }
    }

    /// An `init` stopped before it wrote anything leaves a file of 0 bytes:
    /// any command says so, and `init` makes the replica again.
    @Test func anEmptyReplicaFileIsMadeAgainByInit() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file(Replica.fileName)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(), attributes: [.posixPermissions: 0o600]))
        try expectUntouched(path, { _ = try Replica.open(home: directory.path) }, message: "is empty (0 bytes)")
        let (replica, created) = try Replica.initialize(home: directory.path, deviceName: "again")
        #expect(created)
        try replica.addBrowser(id: "firefox", name: nil, format: nil, scheme: nil, exec: nil)
        try replica.addRule(pattern: "zoom.us", browser: "firefox", priority: nil)
        #expect(try Replica.open(home: directory.path).rules().count == 1)
    }

    /// Records written before manifests have none, and machines refuse a
    /// record without one: a replica of an encrypted account sends every
    /// record again (with manifests) at its first sync after the upgrade.
    @Test func anEncryptedReplicaOfSchema11RelaysEverythingOnce() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.file(Replica.fileName)
        do { _ = try Replica.initialize(home: directory.path, deviceName: nil) }
        let database = try Database(path: file)
        try database.execute(
            """
            INSERT INTO meta (key, value) VALUES ('e2e_key', '0123456789abcdef');
            ALTER TABLE changes DROP COLUMN manifest;
            ALTER TABLE changes DROP COLUMN replaced;
            DROP TABLE profile_approvals;
            ALTER TABLE removed DROP COLUMN why;
            DROP INDEX IF EXISTS records_by_precedence;
            ALTER TABLE records DROP COLUMN precedence;
            ALTER TABLE records DROP COLUMN rule_pattern;
            ALTER TABLE records DROP COLUMN rule_browser;
            ALTER TABLE records DROP COLUMN rule_created;
            ALTER TABLE records DROP COLUMN rule_rest;
            ALTER TABLE changes DROP COLUMN refused;
            DROP TABLE device_writes;
            DROP TABLE pulled_aside;
            DROP TABLE record_tags; DROP TABLE ledger_book; DROP TABLE ledger_entries; DROP TABLE ledger_failures; DROP TABLE ledger_checked; DROP TABLE forgotten_devices; DROP TABLE writes_from_elsewhere; DROP TABLE ledger_unmet; DROP TABLE boxes;
            ALTER TABLE changes DROP COLUMN sealed_format;
            DROP INDEX changes_by_record;
            PRAGMA user_version = 11;
            """)
        #expect(try Replica.open(home: directory.path).encryptionState().relayPending)
        #expect(try database.scalar("SELECT value FROM meta WHERE key = 'relay_all'")?.stringValue == "1")
    }

    /// Schema 29: a replica an older brsync had pulled with (its cursor
    /// past the start) may lack withdrawals its pulls passed, and asks for
    /// them once; one that had pulled nothing, or a new one, lacks none.
    @Test(arguments: [("0", false), ("17", true), (nil, false)])
    func aReplicaOfSchema28PulledBeforeMayLackWithdrawals(cursor: String?, mayLack: Bool) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.file(Replica.fileName)
        #expect(try !Replica.initialize(home: directory.path, deviceName: nil).replica.withdrawalsMayBeMissed())
        let database = try Database(path: file)
        try database.execute(
            "DELETE FROM meta WHERE key IN ('withdrawals_read', 'pull_cursor'); ALTER TABLE changes DROP COLUMN sealed_format; DROP TABLE boxes; DROP INDEX changes_by_record; PRAGMA user_version = 28;"
        )
        if let cursor { try database.run("INSERT INTO meta (key, value) VALUES ('pull_cursor', ?)", [.text(cursor)]) }
        let upgraded = try Replica.open(home: directory.path)
        #expect(try upgraded.withdrawalsMayBeMissed() == mayLack)
        try upgraded.noteWithdrawalsRead()
        #expect(try !Replica.open(home: directory.path).withdrawalsMayBeMissed())
    }

    /// Schema 32: the boxes a replica of schema 31 kept (a table without
    /// row ids) are kept as they were, each under its record and stamp.
    @Test func aReplicaOfSchema31KeepsItsBoxes() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        _ = try Replica.initialize(home: directory.path, deviceName: nil)
        let database = try Database(path: directory.file(Replica.fileName))
        let stamps = ["0000019a00000001-00000000-aaaaaaaaaaaaaaaa", "0000019a00000002-00000000-bbbbbbbbbbbbbbbb"]
        try database.execute(
            """
            DROP INDEX changes_by_record;
            DROP TABLE boxes;
            CREATE TABLE boxes (
                collection TEXT NOT NULL, key TEXT NOT NULL, stamp TEXT NOT NULL, sealed TEXT NOT NULL,
                PRIMARY KEY (collection, key, stamp)
            ) WITHOUT ROWID;
            INSERT INTO boxes VALUES ('rules', 'zoom.us', '\(stamps[1])', 'e2.second');
            INSERT INTO boxes VALUES ('rules', 'zoom.us', '\(stamps[0])', 'e2.first');
            INSERT INTO boxes VALUES ('browsers', 'zoom.us', '\(stamps[0])', 'e2.browser');
            PRAGMA user_version = 31;
            """)
        let upgraded = try Replica.open(home: directory.path)
        #expect(
            try upgraded.keptBoxes(.rules, key: "zoom.us")
                == [
                    StampedValue(.string("e2.first"), stamp: HLCTimestamp(text: stamps[0])!),
                    StampedValue(.string("e2.second"), stamp: HLCTimestamp(text: stamps[1])!),
                ])
        #expect(try upgraded.keptBoxes(.browsers, key: "zoom.us").map(\.value) == [.string("e2.browser")])
        #expect(try database.scalar("PRAGMA user_version")?.intValue == ReplicaSchema.migrator.latestVersion)
        #expect(
            try database.scalar(
                "SELECT COUNT(*) FROM sqlite_schema WHERE name = 'boxes' AND sql LIKE '%WITHOUT ROWID%'")?
                .intValue == 0)
        // Kept before weights (schema 33): each waits to be weighed (schema 34), until weighed or dropped.
        let unweighed = try upgraded.unweighedBoxes(limit: 10)
        #expect(unweighed.map(\.sealed).sorted() == ["e2.browser", "e2.first", "e2.second"])
        try upgraded.weighBoxes(unweighed.map { ($0, $0.sealed == "e2.first" ? nil : 5) })
        #expect(try upgraded.unweighedBoxes(limit: 10).isEmpty)
        #expect(try upgraded.keptBoxes(.rules, key: "zoom.us").map(\.value) == [.string("e2.second")])
        #expect(try database.scalar("SELECT COUNT(*) FROM boxes WHERE weight = 5")?.intValue == 2)
        #expect(try database.scalar("SELECT COUNT(*) FROM meta WHERE key = 'boxes_unweighed'")?.intValue == 0)
    }

    @Test func anotherProgramsDatabase() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file(Replica.fileName)
        try Database(path: path).execute("CREATE TABLE photos (id)")
        try expectUntouched(path, { _ = try Replica.open(home: directory.path) }, message: "another program")
    }

    @Test func aReplicaFromANewerBrsync() throws {
        let fixture = try ReplicaFixture()
        _ = fixture.replica
        try Database(path: fixture.file).execute("PRAGMA user_version = 99")
        try expectUntouched(fixture.file, { _ = try Replica.open(home: fixture.home) }, message: "schema version 99")
    }

    /// A replica of schema 9 kept its records clustered by key; opening it
    /// moves them to a table with row ids (schema 10) in one transaction,
    /// with every record, tombstone and index entry as it was.
    @Test func aReplicaWithRecordsClusteredByKeyOpensWithEveryRecord() throws {
        let fixture = try ReplicaFixture()
        try fixture.usable("firefox")
        try fixture.usable("chrome")
        for (index, pattern) in ["zoom.us", "*.github.com", "a.example", "bank.example/login"].enumerated() {
            try fixture.replica.addRule(
                pattern: pattern, browser: index % 2 == 0 ? "firefox" : "chrome", priority: index)
        }
        _ = try fixture.replica.removeRule(pattern: "a.example")
        let url = try NormalizedURL("https://gist.github.com/x")
        let resolvedBefore = try fixture.replica.resolve(url).browser?.browser.id
        let listedBefore = try fixture.replica.rules()
        let columns = "collection, key, fields, versions, deleted, index_key, priority"
        func rows(_ database: Database) throws -> [String] {
            try database.query("SELECT \(columns) FROM records ORDER BY collection, key") { row in
                (0..<7).map { "\(row[$0])" }.joined(separator: "|")
            }
        }
        // Back to schema 9's table, as a replica made before this version has it.
        let database = try Database(path: fixture.file)
        let before = try rows(database)
        try database.execute(
            """
            BEGIN;
            CREATE TABLE records_clustered (
                collection TEXT NOT NULL CHECK (collection IN ('browsers', 'rules', 'settings')),
                key TEXT NOT NULL, fields TEXT NOT NULL, versions TEXT NOT NULL,
                deleted INTEGER NOT NULL DEFAULT 0, index_key TEXT, priority INTEGER,
                PRIMARY KEY (collection, key)
            ) WITHOUT ROWID;
            INSERT INTO records_clustered SELECT \(columns) FROM records;
            DROP TABLE records;
            ALTER TABLE records_clustered RENAME TO records;
            CREATE INDEX records_by_index_key ON records (collection, index_key);
            DROP TABLE removed;
            ALTER TABLE changes DROP COLUMN manifest;
            ALTER TABLE changes DROP COLUMN replaced;
            ALTER TABLE changes DROP COLUMN refused;
            DROP TABLE device_writes;
            DROP TABLE pulled_aside;
            DROP TABLE record_tags; DROP TABLE ledger_book; DROP TABLE ledger_entries; DROP TABLE ledger_failures; DROP TABLE ledger_checked; DROP TABLE forgotten_devices; DROP TABLE writes_from_elsewhere; DROP TABLE ledger_unmet; DROP TABLE boxes;
            ALTER TABLE changes DROP COLUMN sealed_format;
            DROP INDEX changes_by_record;
            PRAGMA user_version = 9;
            COMMIT;
            """)
        #expect(throws: (any Error).self, "schema 9 has no row ids") {
            try database.execute("SELECT rowid FROM records")
        }

        let reopened = try Replica.open(home: fixture.home)
        #expect(try database.userVersion == ReplicaSchema.migrator.latestVersion)
        #expect(try rows(database) == before)
        // Schema 15 gave every rule its place again: listed in the same order, without a NULL.
        #expect(try reopened.rules() == listedBefore)
        #expect(
            try database.scalar(
                "SELECT COUNT(*) FROM records WHERE collection = 'rules' AND deleted = 0 AND (precedence IS NULL OR rule_pattern IS NULL)"
            )?
            .intValue == 0)
        #expect(try database.scalar("SELECT COUNT(id) FROM records")?.intValue == before.count)
        #expect(try database.scalar("PRAGMA integrity_check")?.stringValue == "ok")
        #expect(try reopened.resolve(url).browser?.browser.id == resolvedBefore)
        #expect(try reopened.rules().map(\.pattern).sorted() == ["*.github.com", "bank.example/login", "zoom.us"])
        // The unique key still holds: the same pattern updates its record.
        try reopened.addRule(pattern: "zoom.us", browser: "chrome", priority: nil)
        #expect(
            try database.scalar("SELECT COUNT(*) FROM records WHERE collection = 'rules' AND key = 'zoom.us'")?.intValue
                == 1)
        #expect(try reopened.resolve(try NormalizedURL("https://zoom.us/j/1")).browser?.browser.id == "chrome")
    }

    @Test func aMissingReplica() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        #expect { _ = try Replica.open(home: directory.path) } throws: {
            String(describing: $0).contains("brsync init")
        }
    }

    @Test func aLockedReplicaWaitsThenSaysSo() throws {
        let fixture = try ReplicaFixture()
        try fixture.usable("firefox")
        let holder = try Database(path: fixture.file)
        try holder.execute("BEGIN EXCLUSIVE")
        let replica = try Replica.open(home: fixture.home, busyTimeout: 100)
        #expect { try replica.addRule(pattern: "a.com", browser: "firefox", priority: nil) } throws: {
            String(describing: $0).contains("locked by another process")
        }
        // Reading still works while another process writes (WAL).
        #expect(try replica.resolve(try NormalizedURL("https://a.com")).source == .none)
        try holder.execute("ROLLBACK")
        try replica.addRule(pattern: "a.com", browser: "firefox", priority: nil)
    }
}
