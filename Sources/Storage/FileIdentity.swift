import CSQLite
import Glibc

/// Where a database file lives: its file system and inode numbers, its birth
/// time (an inode number is reused at once for a copy put in place of a
/// deleted file) and the machine's id. A copy of the file (a copied home, a restored backup, a file
/// moved to another machine) has another value, so a store or replica can tell
/// that it is no longer the file that wrote its own history.
public enum FileIdentity {
    /// The identity of the file at `path`, or `nil` when it cannot be read.
    public static func of(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        var seconds: Int64 = 0
        var nanoseconds: UInt32 = 0
        let birth = brsync_file_birth(path, &seconds, &nanoseconds) == 0 ? "\(seconds).\(nanoseconds)" : "-"
        return "\(info.st_dev):\(info.st_ino):\(birth):\(machineID)"
    }

    /// Whether identity `stored` (recorded earlier) names the file whose
    /// identity is `current`. One recorded before birth times were kept
    /// (`dev:ino:machine`) is compared without it, so an upgrade is not
    /// taken for a copy.
    public static func matches(_ stored: String, _ current: String) -> Bool {
        let old = stored.split(separator: ":", omittingEmptySubsequences: false)
        let new = current.split(separator: ":", omittingEmptySubsequences: false)
        if old.count == 3 && new.count == 4 { return old[0] == new[0] && old[1] == new[1] && old[2] == new[3] }
        return stored == current
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
