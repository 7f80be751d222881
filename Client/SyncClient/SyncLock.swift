import Glibc
import SystemServices

/// One sync at a time per replica: an advisory lock (flock) on
/// `HOME/sync.lock`, held while pushing or pulling. A second `brsync sync`
/// (the timer firing while one runs by hand) waits for the first instead of
/// pushing the same changes at the same time, and the lock goes away with the
/// process however it ends. Edits never take it: they are serialised by
/// SQLite and stamped from the clock kept in the replica.
///
/// The wait is said (``Waiting``: which process holds the lock, how long
/// so far) and bounded: a sync held up behind one that hangs (stopped, or
/// stuck on a network that never answers) gives up after
/// ``SyncClient/Options/lockWaitMilliseconds`` and says which process holds
/// the replica; a stop asked for (a window's Stop) ends the wait at once.
final class SyncLock {
    private let path: String
    private var descriptor: Int32 = -1
    private var depth = 0
    private let waiting: Waiting

    /// How a wait for the lock goes: at most `limitMilliseconds`, told
    /// once to `told` (what holds it, seconds at most), ended when
    /// `stopRequested` says so.
    struct Waiting {
        var limitMilliseconds: Int
        var stopRequested: (@Sendable () -> Bool)?
        var told: ((_ holder: String, _ limitSeconds: Int) -> Void)?
    }

    init(home: String, waiting: Waiting) {
        path = "\(home)/sync.lock"
        self.waiting = waiting
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Whether this process holds the lock now (a call inside ``withLock(_:)``).
    var isHeld: Bool { depth > 0 }

    /// Runs `body` holding the lock (re-entrant within one client).
    func withLock<T>(_ body: () throws -> T) throws -> T {
        if depth == 0 {
            // Never through a link: the lock is the home's own file.
            descriptor = open(path, O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard descriptor >= 0 else { throw SyncError.usage("cannot open \(path): \(SystemError.text())") }
            do {
                try take()
            } catch {
                close(descriptor)
                descriptor = -1
                throw error
            }
            // Who holds it, for a sync that waits meanwhile.
            let pid = Array("\(getpid())\n".utf8)
            if ftruncate(descriptor, 0) == 0 {
                _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
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

    /// Takes the lock, waiting as ``Waiting`` says.
    private func take() throws {
        let started = Clock.monotonicMillis()
        var told = false
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else {
                throw SyncError.usage("cannot lock \(path): \(SystemError.text())")
            }
            if waiting.stopRequested?() == true { throw SyncError.cancelled }
            let waited = Clock.monotonicMillis() - started
            guard waited < waiting.limitMilliseconds else {
                throw SyncError.replicaBusy(
                    "another sync of this replica (\(holder())) has held it for \(waited / 1000) s; it may be stuck "
                        + "(stopped, or on a network that does not answer): end it, or try again once it is done")
            }
            if !told {
                told = true
                waiting.told?(holder(), waiting.limitMilliseconds / 1000)
            }
            usleep(50_000)
        }
    }

    /// The process that holds the lock, as it wrote itself in the file
    /// (a brsync does); one that is gone wrote it before, and another
    /// program holds the lock now.
    private func holder() -> String {
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        let text = count > 0 ? String(decoding: bytes.prefix(count), as: UTF8.self) : ""
        guard let line = text.split(separator: "\n").first, let pid = Int32(line), pid > 0,
            kill(pid, 0) == 0 || errno == EPERM
        else { return "a process that is not a brsync" }
        return "process \(pid)"
    }
}
