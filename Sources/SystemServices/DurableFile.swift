import Glibc

/// Every file brsync writes whole: a temporary file beside it, written,
/// given its exact mode (the umask may only take bits away), synced, then
/// renamed over the old one and the folder synced. A reader sees the old
/// file or the new one, never a part, even if the process or the machine
/// stops half way. Secrets go through ``SecretFile`` (owner-only), the rest
/// (a desktop entry, a certificate) straight here.
public enum DurableFile {
    /// Why a file could not be written (the C library's words).
    public struct Failure: Error, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var description: String { "cannot write \(path): \(reason)" }
    }

    /// Writes `text` to `path` with `mode` (see ``DurableFile``).
    public static func write(_ text: String, to path: String, mode: mode_t) throws(Failure) {
        try write(Array(text.utf8), to: path, mode: mode)
    }

    /// Writes `bytes` to `path` with `mode` (see ``DurableFile``).
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t) throws(Failure) {
        let slash = path.lastIndex(of: "/")
        let folder = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let temporary = (folder == "/" ? "" : folder) + "/.\(name).\(getpid()).tmp"
        unlink(temporary) // left by a process of the same id that was stopped
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw Failure(path: path, reason: SystemError.text()) }
        var failure: String?
        // The umask may have taken bits away, never added any; this makes it exact.
        if fchmod(descriptor, mode) != 0 { failure = SystemError.text() }
        var written = 0
        while failure == nil, written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                failure = SystemError.text()
            } else {
                written += count
            }
        }
        if failure == nil, fsync(descriptor) != 0 { failure = SystemError.text() }
        close(descriptor)
        if failure == nil, rename(temporary, path) != 0 { failure = SystemError.text() }
        if let failure {
            unlink(temporary)
            throw Failure(path: path, reason: failure)
        }
        // The rename itself is durable once the folder is synced.
        let directory = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
    }
}
