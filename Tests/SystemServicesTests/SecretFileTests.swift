import Foundation
import Glibc
import SystemServices
import TestSupport
import Testing

/// The one way a secret is written and read: owner-only, replaced whole, and refused on read when anyone else could have read,
/// planted or swapped it.
@Suite struct SecretFileTests {
    static func mode(_ path: String) -> mode_t {
        var status = stat()
        return lstat(path, &status) == 0 ? status.st_mode & 0o7777 : 0
    }

    @Test func aSecretIsWrittenOwnerOnlyAndReplacedWhole() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let path = folder.path + "/token"
        try SecretFile.write(Array("first\n".utf8), to: path, what: "the token")
        #expect(Self.mode(path) == 0o600)
        #expect(try SecretFile.read(path, what: "the token") == Array("first\n".utf8))
        // A file left readable by others is replaced by one that is not.
        chmod(path, 0o644)
        try SecretFile.write(Array("second".utf8), to: path, what: "the token")
        #expect(Self.mode(path) == 0o600)
        #expect(try SecretFile.read(path, what: "the token") == Array("second".utf8))
        // Nothing is left beside it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["token"])
        #expect(try SecretFile.read(folder.path + "/missing", what: "the token") == nil)
    }

    @Test func aSecretThatCannotBeWrittenSaysWhere() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        #expect(throws: SecretFile.Failure.self) {
            try SecretFile.write([1], to: folder.path + "/no/such/folder/key", what: "the key")
        }
        do {
            try SecretFile.write([1], to: folder.path + "/no/key", what: "the key")
        } catch {
            #expect(
                error.kind == .unwritable && error.message.hasPrefix("cannot write the key at \(folder.path)/no/key:"))
        }
    }

    /// Each row: how the file is made, and what reading it says.
    static let refusals: [(String, SecretFile.Failure.Kind, String)] = [
        ("a link to a good file", .notRegularFile, "is not a regular file (a link)"),
        ("a folder", .notRegularFile, "is not a regular file"),
        ("a named pipe", .notRegularFile, "is not a regular file"),
        ("mode 644", .readableByOthers, "can be read by others (mode 644): run 'chmod 600 "),
        ("mode 640", .readableByOthers, "can be read by others (mode 640)"),
        ("too large", .tooLarge, "is larger than 65536 bytes"),
    ]

    @Test(arguments: refusals) func aSecretAnyoneElseCouldTouchIsRefused(
        made: String, kind: SecretFile.Failure.Kind, message: String
    ) throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let path = folder.path + "/key"
        let good = folder.path + "/good"
        try SecretFile.write([7], to: good, what: "the key")
        switch made {
        case "a link to a good file": symlink(good, path)
        case "a folder": mkdir(path, 0o700)
        case "a named pipe": mkfifo(path, 0o600) // read must not wait for a writer
        case "mode 644", "mode 640":
            try SecretFile.write([7], to: path, what: "the key")
            chmod(path, made == "mode 644" ? 0o644 : 0o640)
        default:
            try SecretFile.write([UInt8](repeating: 65, count: SecretFile.maximumBytes + 1), to: path, what: "the key")
        }
        do {
            _ = try SecretFile.read(path, what: "the key")
            Issue.record("\(made) was read")
        } catch {
            #expect(
                error.kind == kind && error.message.hasPrefix("the key at \(path) ") && error.message.contains(message),
                "\(error)")
        }
    }

    /// A file another user made (planted where this user's secret goes) is
    /// refused; root's own files are trusted (they cannot be planted).
    @Test func aSecretOfAnotherUserIsRefused() throws {
        guard geteuid() == 0 else { return } // only root can give a file away
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let path = folder.path + "/key"
        try SecretFile.write([7], to: path, what: "the key")
        #expect(try SecretFile.read(path, what: "the key") == [7])
        chown(path, 65534, 65534)
        do {
            _ = try SecretFile.read(path, what: "the key")
            Issue.record("another user's file was read")
        } catch {
            #expect(
                error.kind == .ownedByAnother && error.message.contains("belongs to another user (uid 65534)"),
                "\(error)")
        }
    }
}
