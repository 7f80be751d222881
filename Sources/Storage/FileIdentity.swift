import Glibc

/// Where a database file lives: its file system and inode numbers and the
/// machine's id. A copy of the file (a copied home, a restored backup, a file
/// moved to another machine) has another value, so a store or replica can tell
/// that it is no longer the file that wrote its own history.
public enum FileIdentity {
    /// The identity of the file at `path`, or `nil` when it cannot be read.
    public static func of(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return "\(info.st_dev):\(info.st_ino):\(machineID)"
    }

    /// The machine's id (`/etc/machine-id`), or "" without one.
    static var machineID: String {
        let descriptor = open("/etc/machine-id", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return "" }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 64)
        let count = read(descriptor, &bytes, bytes.count)
        guard count > 0 else { return "" }
        return String(decoding: bytes[..<count], as: UTF8.self).filter { $0.isHexDigit }
    }
}
