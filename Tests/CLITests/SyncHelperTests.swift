import Foundation
import TestSupport
import Testing

/// `brsync push|pull|sync` run in the helper `brsync-sync` beside brsync:
/// when it is missing, or is brsync itself under its name, brsync says so
/// and stops at once (it used to start itself again forever).
@Suite struct SyncHelperTests {
    @Test func aMissingOrWrongHelperIsNamedAndNothingLoops() throws {
        let directory = try TemporaryDirectory(prefix: "brsync-helper")
        defer { directory.remove() }
        let brsync = directory.file("brsync")
        // Copied by cp: a file this process held open for writing could be
        // inherited by a program another test starts meanwhile ("text file busy").
        func copy(_ from: String, _ to: String) throws {
            #expect(try ProcessRunner.run("/bin/cp", [from, to]).status == 0)
        }
        try copy(ProcessRunner.binary("brsync"), brsync)
        let home = directory.file("home")
        let missing = try ProcessRunner.run(brsync, ["sync"], environment: ["BRSYNC_HOME": home], timeout: 20)
        #expect(missing.status != 0 && missing.stderr.contains("brsync-sync is missing"), "\(missing)")
        // A link to brsync, then a copy of it, under the helper's name.
        try FileManager.default.createSymbolicLink(atPath: directory.file("brsync-sync"), withDestinationPath: brsync)
        let linked = try ProcessRunner.run(brsync, ["sync", "--json"], environment: ["BRSYNC_HOME": home], timeout: 20)
        #expect(linked.status != 0 && linked.stderr.contains("is brsync itself"), "\(linked)")
        try FileManager.default.removeItem(atPath: directory.file("brsync-sync"))
        try copy(brsync, directory.file("brsync-sync"))
        let copied = try ProcessRunner.run(brsync, ["pull"], environment: ["BRSYNC_HOME": home], timeout: 20)
        #expect(copied.status != 0 && copied.stderr.contains("install the brsync-sync binary"), "\(copied)")
    }
}
