import Glibc
import SystemServices

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Reading a file named on the command line, with errors that say what is wrong.
public enum FileInput {
    public static func read(_ path: String, what: String) throws -> Data {
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw CLIFailure(message: "cannot read \(what) at \(path): no such file")
        }
        if status.st_mode & S_IFMT == S_IFDIR {
            throw CLIFailure(message: "cannot read \(what) at \(path): it is a directory")
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw CLIFailure(message: "cannot read \(what) at \(path): permission denied")
        }
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw CLIFailure(message: "cannot read \(what) at \(path): \(error)")
        }
    }
}
