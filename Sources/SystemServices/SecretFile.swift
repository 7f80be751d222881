import Glibc

/// The one way a secret (a device token, the account key, a database
/// password, a TLS private key) is written and read.
///
/// Written owner-only (0600) to a temporary file in the same folder, synced,
/// then renamed over the old one and the folder synced: a process stopped at
/// any point leaves the old file or the new one, never a part, and never a
/// moment where others could read it. Read through a descriptor opened
/// without following a link, and checked on that descriptor (so what is
/// checked is what is read): a regular file, owned by this user (or root),
/// that nobody else can read.
public enum SecretFile {
    /// Why a secret could not be read or written; ``message`` says so
    /// naming the file.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public enum Kind: Sendable, Equatable {
            case unreadable, notRegularFile, readableByOthers, writableByOthers, ownedByAnother, tooLarge, unwritable
        }

        public let kind: Kind
        public let message: String
        public var description: String { message }
    }

    /// Most bytes a secret file may hold (a key file with its rotated keys is
    /// under 2 KB).
    public static let maximumBytes = 64 * 1024

    /// The file's bytes, or nil when there is no file at `path`.
    /// - Parameter what: the secret, as the messages name it ("the account key").
    /// - Throws: ``Failure`` for a file that cannot be read, is not a regular
    ///   file (a link, a folder), belongs to another user, can be read by
    ///   others, or holds more than ``maximumBytes``.
    /// - Parameter othersMayRead: for a setting that is no secret (written
    ///   the same way): a file others can read is taken, one others can
    ///   change is not.
    public static func read(_ path: String, what: String, othersMayRead: Bool = false) throws(Failure) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            if errno == ELOOP {
                throw Failure(kind: .notRegularFile, message: "\(what) at \(path) is not a regular file (a link)")
            }
            throw Failure(kind: .unreadable, message: "cannot read \(what) at \(path): \(SystemError.text())")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw Failure(kind: .unreadable, message: "cannot read \(what) at \(path): \(SystemError.text())")
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw Failure(kind: .notRegularFile, message: "\(what) at \(path) is not a regular file")
        }
        guard status.st_uid == geteuid() || status.st_uid == 0 else {
            throw Failure(
                kind: .ownedByAnother,
                message:
                    "\(what) at \(path) belongs to another user (uid \(status.st_uid)): it could have been put there by them"
            )
        }
        if othersMayRead {
            guard status.st_mode & 0o022 == 0 else {
                throw Failure(
                    kind: .writableByOthers,
                    message:
                        "\(what) at \(path) can be changed by others (mode \(String(status.st_mode & 0o777, radix: 8)))"
                )
            }
        } else if status.st_mode & 0o077 != 0 {
            throw Failure(
                kind: .readableByOthers,
                message:
                    "\(what) at \(path) can be read by others (mode \(String(status.st_mode & 0o777, radix: 8))): run 'chmod 600 \(path)'"
            )
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = Glibc.read(descriptor, &buffer, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw Failure(kind: .unreadable, message: "cannot read \(what) at \(path): \(SystemError.text())")
            }
            if count == 0 { return bytes }
            bytes += buffer[0..<count]
            guard bytes.count <= maximumBytes else {
                throw Failure(
                    kind: .tooLarge,
                    message: "\(what) at \(path) is larger than \(maximumBytes) bytes: not a secret brsync wrote")
            }
        }
    }

    /// Writes `bytes` to `path`, replacing any file there, owner-only and
    /// durably (see ``SecretFile``, ``DurableFile``).
    public static func write(_ bytes: [UInt8], to path: String, what: String) throws(Failure) {
        do {
            try DurableFile.write(bytes, to: path, mode: 0o600)
        } catch {
            throw Failure(kind: .unwritable, message: "cannot write \(what) at \(path): \(error.reason)")
        }
    }
}
