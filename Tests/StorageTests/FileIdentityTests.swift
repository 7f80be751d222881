import Foundation
import Storage
import TestSupport
import Testing

/// A store or replica tells its own file from a copy by ``FileIdentity``.
@Suite struct FileIdentityTests {
    /// A copy put in place of a deleted file is another file, though the file
    /// system often hands the copy the freed inode number at once.
    @Test func aCopyPutInPlaceIsAnotherFile() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("store.sqlite"), saved = directory.file("saved.sqlite")
        try Data("one".utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.copyItem(atPath: path, toPath: saved)
        let before = try #require(FileIdentity.of(path))
        var reusedInode = 0
        for _ in 0..<5 {
            let inode = try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? UInt64
            try FileManager.default.removeItem(atPath: path)
            try FileManager.default.copyItem(atPath: saved, toPath: path)
            let after = try #require(FileIdentity.of(path))
            if inode == (try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? UInt64) {
                reusedInode += 1
            }
            #expect(!FileIdentity.matches(before, after), "\(before) vs \(after)")
        }
        print("FileIdentityTests: the copy reused the inode number \(reusedInode) of 5 times")
    }

    /// Written over in place (`cat backup > store`), it is the same file.
    @Test func aFileRewrittenInPlaceKeepsItsIdentity() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("store.sqlite")
        try Data("one".utf8).write(to: URL(fileURLWithPath: path))
        let before = try #require(FileIdentity.of(path))
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data("two".utf8))
        try handle.close()
        #expect(FileIdentity.of(path) == before)
        #expect(FileIdentity.of(directory.file("missing")) == nil)
    }

    /// An identity recorded before birth times were kept still names its file.
    @Test func anIdentityOfTheOlderFormMatchesItsFile() throws {
        #expect(FileIdentity.matches("2049:77:abc", "2049:77:1700000000.5:abc"))
        #expect(!FileIdentity.matches("2049:78:abc", "2049:77:1700000000.5:abc"))
        #expect(!FileIdentity.matches("2049:77:abc", "2049:77:1700000000.5:abd"))
        #expect(!FileIdentity.matches("2049:77:1700000000.4:abc", "2049:77:1700000000.5:abc"))
    }
}
