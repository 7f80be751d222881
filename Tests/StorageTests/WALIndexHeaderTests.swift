import Foundation
import TestSupport
import Testing

@testable import Storage

/// The WAL index's header, read from SQLite's own mapping: every commit of
/// this process or another one (the sqlite3 CLI here, as an administration
/// command writes the store) moves it; reads and checkpoints do not make a
/// difference that a later commit would not; no WAL, no header.
@Suite struct WALIndexHeaderTests {
    @Test func everyCommitOfAnyProcessMovesIt() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("store.sqlite")
        let writer = try Database(path: path)
        try writer.execute("PRAGMA journal_mode = WAL; CREATE TABLE t (a)")
        let header = try #require(WALIndexHeader(path: path))
        let first = try #require(header.read())
        #expect(header.read() == first, "nothing written")
        _ = try writer.scalar("SELECT count(*) FROM t")
        #expect(header.read() == first, "a read changes nothing")

        try writer.run("INSERT INTO t VALUES (1)")
        let second = try #require(header.read())
        #expect(second != first && second.change != first.change)

        // Another process.
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3") {
            let cli = try ProcessRunner.run("/usr/bin/sqlite3", [path, "INSERT INTO t VALUES (2);"])
            #expect(cli.status == 0, "\(cli)")
            let third = try #require(header.read())
            #expect(third != second, "a commit of another process")
        } else {
            Issue.record("the sqlite3 CLI is needed (scripts/setup installs it)")
        }

        // The log emptied by a checkpoint, then written from its start again: still told apart.
        let before = try #require(header.read())
        _ = try writer.scalar("PRAGMA wal_checkpoint(TRUNCATE)")
        try writer.run("INSERT INTO t VALUES (3)")
        let after = try #require(header.read())
        #expect(after != before, "\(before) \(after)")

        header.close()
        #expect(header.read() == nil)
        try writer.run("INSERT INTO t VALUES (4)")
        #expect(
            try writer.scalar("SELECT count(*) FROM t")?.intValue == 4,
            "the writer is not disturbed by the header's connection closing")
    }

    @Test func aDatabaseWithoutAWriteAheadLogHasNone() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("plain.sqlite")
        try Database(path: path).execute("CREATE TABLE t (a)")
        #expect(WALIndexHeader(path: path) == nil)
        #expect(WALIndexHeader(path: directory.file("missing/none.sqlite")) == nil)
    }
}
