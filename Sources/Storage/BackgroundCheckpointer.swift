import CSQLite
import Glibc
import Synchronization
import SystemServices

/// Checkpoints a database's write-ahead log on a thread of its own.
///
/// SQLite's automatic checkpoint runs inside the commit that fills the log
/// past 1,000 pages: that request copies the log back into the database file
/// and waits for its fsync. A brsyncd push of 1,000 sealed changes writes
/// about 1.5 MB, so every third push paid for the pushes before it (its
/// commit took 60% longer). With connections ``attach(_:)``ed here, a commit
/// that fills the log past ``pages`` only wakes this thread, which runs a
/// passive checkpoint (it never blocks a reader or a writer).
///
/// If the thread falls behind (a long read keeps the log from being
/// reset), a commit that finds the log past ``inlinePages`` checkpoints
/// itself, as without this: the log stays bounded.
///
/// The thread ends when the checkpointer and every connection attached to
/// it are gone, or at ``stop()``.
public final class BackgroundCheckpointer: Sendable {
    /// Log pages at which a commit wakes the thread.
    public let pages: Int32
    /// Log pages at which a commit checkpoints itself.
    public let inlinePages: Int32
    private let shared: Shared

    /// What the thread and the connections' hooks share.
    private final class Shared: @unchecked Sendable {
        // `wake` is a POSIX semaphore (posted from any thread); `database` is
        // used by the checkpoint thread alone once it started.
        let wake = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
        let ended = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
        let stopping = Atomic<Bool>(false)
        let checkpoints = Atomic<Int>(0)
        /// Closed when the thread ends, so the last connection to close
        /// removes the log as without this thread.
        var database: Database?

        init(database: Database) {
            self.database = database
            sem_init(wake, 0, 0)
            sem_init(ended, 0, 0)
        }

        deinit {
            sem_destroy(wake)
            sem_destroy(ended)
            wake.deallocate()
            ended.deallocate()
        }

        func run() {
            while true {
                while sem_wait(wake) != 0 && errno == EINTR {}
                if stopping.load(ordering: .acquiring) { break }
                // Wakes that piled up while this one ran are served by it.
                while sem_trywait(wake) == 0 {}
                // Busy (another checkpoint, a write lock being taken) is
                // harmless: the next wake tries again.
                if let database,
                    sqlite3_wal_checkpoint_v2(database.handle, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil) == SQLITE_OK
                {
                    checkpoints.add(1, ordering: .relaxed)
                }
            }
            database = nil
            sem_post(ended)
        }
    }

    /// Opens a connection of its own to `path` (a database in WAL mode) and
    /// starts the thread.
    /// - Throws: ``DatabaseError`` when the database cannot be opened;
    ///   `CheckpointerError` when no thread can be made.
    public init(path: String, pages: Int32 = 1000, inlinePages: Int32 = 8000) throws {
        self.pages = max(1, pages)
        self.inlinePages = max(self.pages, inlinePages)
        let database = try Database(path: path, mode: .readWrite)
        // A connection learns that the file is in WAL mode when it first
        // reads it; until then a checkpoint is a no-op.
        _ = try database.scalar("PRAGMA schema_version")
        let shared = Shared(database: database)
        self.shared = shared
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setstacksize(&attributes, 256 * 1024)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        let argument = Unmanaged.passRetained(shared).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(
            &thread, &attributes,
            { argument in
                let shared = Unmanaged<Shared>.fromOpaque(argument!).takeRetainedValue()
                shared.run()
                return nil
            }, argument)
        guard status == 0 else {
            Unmanaged<Shared>.fromOpaque(argument).release()
            throw CheckpointerError(message: "cannot start the checkpoint thread: \(SystemError.text(status))")
        }
    }

    deinit { stop() }

    /// Checkpoints the thread has completed (for tests and metrics).
    public var completed: Int { shared.checkpoints.load(ordering: .relaxed) }

    /// Ends the thread and waits for it (at most the checkpoint it is
    /// running). Attached connections then checkpoint themselves past
    /// ``inlinePages``. Calling it again does nothing.
    public func stop() {
        guard !shared.stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        sem_post(shared.wake)
        while sem_wait(shared.ended) != 0 && errno == EINTR {}
    }

    /// Hands `connection`'s checkpoints to this thread (it replaces SQLite's
    /// automatic checkpoint on that connection). The connection keeps this
    /// checkpointer alive.
    public func attach(_ connection: Database) {
        connection.checkpointer = self
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_wal_hook(
            connection.handle,
            { context, handle, name, pages in
                let checkpointer = Unmanaged<BackgroundCheckpointer>.fromOpaque(context!).takeUnretainedValue()
                if pages >= checkpointer.inlinePages
                    || checkpointer.shared.stopping.load(ordering: .relaxed) && pages >= checkpointer.pages
                {
                    sqlite3_wal_checkpoint_v2(handle, name, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                } else if pages >= checkpointer.pages {
                    sem_post(checkpointer.shared.wake)
                }
                return SQLITE_OK
            }, context)
    }
}

extension BackgroundCheckpointer {
    /// Gives `connection` back SQLite's automatic checkpoint (every 1,000
    /// pages, in the commit), after ``attach(_:)``.
    public static func detach(_ connection: Database) {
        sqlite3_wal_autocheckpoint(connection.handle, 1000)
        connection.checkpointer = nil
    }
}

public struct CheckpointerError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
