import CSQLite
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import Storage

@Suite struct DatabaseTests {
    @Test func bindsAndReadsEveryType() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.file("t.sqlite"))
        try database.execute("CREATE TABLE t (a, b, c, d, e)")
        let values: [DatabaseValue] = [.null, .integer(-42), .real(2.5), .text("zoom.us ü 例"), .blob([0, 1, 255])]
        try database.run("INSERT INTO t VALUES (?, ?, ?, ?, ?)", values)
        let row = try database.queryFirst("SELECT a, b, c, d, e FROM t") { row in (0..<5).map { row[$0] } }
        #expect(row == values)
    }

    @Test func wrongArgumentCountIsAnError() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.file("t.sqlite"))
        try database.execute("CREATE TABLE t (a)")
        #expect(throws: DatabaseError.self) { try database.run("INSERT INTO t VALUES (?)", []) }
    }

    @Test func transactionRollsBackWhenTheBodyThrows() throws {
        struct Boom: Error {}
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.file("t.sqlite"))
        try database.execute("CREATE TABLE t (a)")
        #expect(throws: Boom.self) {
            try database.transaction {
                try database.run("INSERT INTO t VALUES (1)")
                throw Boom()
            }
        }
        #expect(try database.scalar("SELECT COUNT(*) FROM t") == .integer(0))
        try database.transaction { try database.run("INSERT INTO t VALUES (1)") }
        #expect(try database.scalar("SELECT COUNT(*) FROM t") == .integer(1))
    }

    @Test func errorsCarryExtendedCodeAndMessage() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.file("t.sqlite"))
        try database.execute("CREATE TABLE t (a UNIQUE)")
        try database.run("INSERT INTO t VALUES (1)")
        do {
            try database.run("INSERT INTO t VALUES (1)")
            Issue.record("a duplicate was accepted")
        } catch {
            #expect(error.code == SQLITE_CONSTRAINT)
            #expect(error.extendedCode == 2067) // SQLITE_CONSTRAINT_UNIQUE
            #expect(error.message.contains("UNIQUE constraint failed"))
            #expect(error.sql == "INSERT INTO t VALUES (1)")
        }
        #expect(throws: DatabaseError.self) { try database.execute("SELEC nonsense") }
    }

    @Test func aFileThatIsNotADatabaseIsReportedAndLeftAlone() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("garbage.sqlite")
        let garbage = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try garbage.write(to: URL(fileURLWithPath: path))
        let database = try Database(path: path, mode: .readWrite)
        do {
            _ = try database.scalar("PRAGMA application_id")
            Issue.record("garbage was read as a database")
        } catch let error as DatabaseError {
            #expect(error.isNotADatabase)
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == garbage)
    }

    @Test func lockedDatabaseWaitsForTheBusyTimeoutThenFails() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("t.sqlite")
        let holder = try Database(path: path)
        try holder.execute("CREATE TABLE t (a)")
        try holder.execute("BEGIN EXCLUSIVE")
        let waiter = try Database(path: path, busyTimeoutMilliseconds: 150)
        let start = Date()
        do {
            try waiter.run("INSERT INTO t VALUES (1)")
            Issue.record("the write went through a lock")
        } catch {
            #expect(error.isBusy)
        }
        #expect(Date().timeIntervalSince(start) >= 0.1, "it waited for the busy timeout")
        try holder.execute("ROLLBACK")
        try waiter.run("INSERT INTO t VALUES (1)")
    }

    @Test func onlineBackupCopiesEverything() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let source = try Database(path: directory.file("a.sqlite"))
        try source.execute("CREATE TABLE t (a); INSERT INTO t VALUES (1), (2), (3)")
        let destination = try Database(path: directory.file("b.sqlite"))
        try source.backup(to: destination)
        #expect(try destination.scalar("SELECT SUM(a) FROM t") == .integer(6))
    }
}

@Suite struct MigratorTests {
    let migrator = Migrator([
        .init(version: 2, sql: "ALTER TABLE t ADD COLUMN b"),
        .init(version: 1, sql: "CREATE TABLE t (a)"),
    ])

    @Test func appliesPendingMigrationsInOrder() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.file("m.sqlite"))
        try migrator.migrate(database)
        #expect(try database.userVersion == 2)
        try database.run("INSERT INTO t (a, b) VALUES (1, 2)")
        try migrator.migrate(database) // again: nothing to do
        #expect(try database.userVersion == 2)
    }

    @Test func refusesANewerSchemaWithoutTouchingIt() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("m.sqlite")
        do {
            let database = try Database(path: path)
            try database.execute("CREATE TABLE future (x); PRAGMA user_version = 9")
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let database = try Database(path: path)
        #expect(throws: Migrator.Problem.newerSchema(found: 9, supported: 2)) { try migrator.migrate(database) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    /// Two processes open the same old file at once: the second read the
    /// version before the first migrated, and waits for its lock. It must
    /// not apply the migrations again (`CREATE TABLE t` would fail).
    @Test func migrationsAnotherConnectionAppliedMeanwhileAreSkipped() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("m.sqlite")
        let first = try Database(path: path)
        try first.execute("PRAGMA journal_mode = WAL") // the second reads while the first holds the write lock
        try first.execute("BEGIN EXCLUSIVE")
        let outcome = Mutex<Result<Int, any Error>?>(nil)
        let migrator = self.migrator
        let second = Thread {
            outcome.withLock {
                $0 = Result { () throws -> Int in
                    let database = try Database(path: path, busyTimeoutMilliseconds: 10_000)
                    try migrator.migrate(database)
                    return try database.userVersion
                }
            }
        }
        second.start()
        // The second has read version 0 and waits for the lock by now.
        Thread.sleep(forTimeInterval: 0.3)
        try first.execute("CREATE TABLE t (a); ALTER TABLE t ADD COLUMN b; PRAGMA user_version = 2; COMMIT")
        for _ in 0..<200 where outcome.withLock({ $0 == nil }) { Thread.sleep(forTimeInterval: 0.05) }
        let result = try #require(outcome.withLock { $0 })
        #expect(try result.get() == 2)
        #expect(try first.scalar("SELECT COUNT(*) FROM pragma_table_info('t')")?.intValue == 2)
    }

    @Test func aFailedMigrationLeavesTheVersion() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Database(path: directory.file("m.sqlite"))
        let broken = Migrator([
            .init(version: 1, sql: "CREATE TABLE t (a)"), .init(version: 2, sql: "ALTER TABLE nope ADD b"),
        ])
        #expect(throws: DatabaseError.self) { try broken.migrate(database) }
        #expect(try database.userVersion == 1)
    }
}

@Suite struct BackgroundCheckpointerTests {
    /// Writes `rows` rows of 1 KB in commits of 10 on `database`.
    func write(_ database: Database, rows: Int) throws {
        for start in stride(from: 0, to: rows, by: 10) {
            try database.transaction {
                for index in start..<min(rows, start + 10) {
                    try database.run(
                        "INSERT INTO t (a, b) VALUES (?, ?)",
                        [.integer(Int64(index)), .text(String(repeating: "x", count: 1000))])
                }
            }
        }
    }

    /// A database in WAL mode with the table `write` fills.
    func walDatabase(in directory: TemporaryDirectory) throws -> (path: String, database: Database) {
        let path = directory.file("c.sqlite")
        let database = try Database(path: path)
        try database.execute("PRAGMA journal_mode = WAL; CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT)")
        return (path, database)
    }

    func size(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : -1
    }

    /// Commits that fill the log wake the thread, which copies the log into
    /// the database file; the committing connection does not (SQLite's
    /// automatic checkpoint is off on it).
    @Test func theThreadCheckpointsWhatCommitsWrite() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (path, database) = try walDatabase(in: directory)
        let checkpointer = try BackgroundCheckpointer(path: path, pages: 20, inlinePages: 100_000)
        checkpointer.attach(database)
        let before = size(path)
        try write(database, rows: 400) // about 100 pages
        for _ in 0..<200 where checkpointer.completed == 0 || size(path) < 300_000 {
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(checkpointer.completed > 0)
        #expect(size(path) > before + 300_000, "the rows reached the database file")
        #expect(try database.scalar("SELECT COUNT(*) FROM t")?.intValue == 400)
        #expect(try database.scalar("PRAGMA integrity_check")?.stringValue == "ok")
    }

    /// Stopped (or fallen behind), the connection checkpoints itself: the log
    /// does not grow without bound.
    @Test func aStoppedThreadLeavesCheckpointsToTheCommits() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (path, database) = try walDatabase(in: directory)
        let checkpointer = try BackgroundCheckpointer(path: path, pages: 20, inlinePages: 50)
        checkpointer.attach(database)
        checkpointer.stop()
        checkpointer.stop() // again: nothing
        let before = size(path)
        try write(database, rows: 400)
        #expect(checkpointer.completed == 0)
        #expect(size(path) > before + 300_000, "the commits checkpointed")
        #expect(size(path + "-wal") < 1_000_000, "the log was reset, not grown past 400 KB of rows")
    }

    /// The thread's own connection closes when it stops: the last connection
    /// to close removes the log, as without the thread.
    @Test func closingTheLastConnectionAfterStopRemovesTheLog() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("c.sqlite")
        var checkpointer: BackgroundCheckpointer?
        do {
            let (_, database) = try walDatabase(in: directory)
            checkpointer = try BackgroundCheckpointer(path: path, pages: 20)
            checkpointer?.attach(database)
            try write(database, rows: 100)
            checkpointer?.stop()
        }
        // The checkpointer outlives its stop (as in a store closed but not yet released).
        #expect(checkpointer != nil)
        #expect(access(path + "-wal", F_OK) != 0, "the log is gone")
        #expect(try Database(path: path).scalar("SELECT COUNT(*) FROM t")?.intValue == 100)
    }
}
