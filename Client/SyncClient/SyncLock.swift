import Glibc
import SystemServices

/// One sync at a time per replica: an advisory lock (flock) on
/// `HOME/sync.lock`, held while pushing or pulling. A second `brsync sync`
/// (the timer firing while one runs by hand) waits for the first instead of
/// pushing the same changes at the same time, and the lock goes away with the
/// process however it ends. Edits never take it: they are serialised by
/// SQLite and stamped from the clock kept in the replica.
final class SyncLock {
    private let path: String
    private var descriptor: Int32 = -1
    private var depth = 0

    init(home: String) {
        path = "\(home)/sync.lock"
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Runs `body` holding the lock (re-entrant within one client).
    /// Whether this process holds the lock now (a call inside ``withLock(_:)``).
    var isHeld: Bool { depth > 0 }

    func withLock<T>(_ body: () throws -> T) throws -> T {
        if depth == 0 {
            descriptor = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw SyncError.usage("cannot open \(path): \(SystemError.text())") }
            while flock(descriptor, LOCK_EX) != 0 {
                guard errno == EINTR else {
                    let problem = SystemError.text()
                    close(descriptor)
                    descriptor = -1
                    throw SyncError.usage("cannot lock \(path): \(problem)")
                }
            }
        }
        depth += 1
        defer {
            depth -= 1
            if depth == 0 {
                close(descriptor) // releases the lock
                descriptor = -1
            }
        }
        return try body()
    }
}
