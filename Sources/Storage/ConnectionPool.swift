import Glibc
import Synchronization

/// SQLite connections shared by threads: each borrower has one to itself, so
/// no connection is used by two threads at once (as GRDB's `DatabasePool`). WAL lets readers run
/// beside the one writer; writers queue on SQLite's lock (busy timeout).
///
/// Striped: each connection has a lock of its own, and a borrower starts at a
/// slot chosen by its thread, so threads rarely wait on each other's locks.
public final class ConnectionPool: Sendable {
    /// One connection and the lock that makes its borrower the only user.
    private final class Slot: @unchecked Sendable {
        // @unchecked: `database` is only used by the thread holding `mutex`.
        var database: Database?
        private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

        init(_ database: Database) {
            self.database = database
            pthread_mutex_init(mutex, nil)
        }

        deinit {
            pthread_mutex_destroy(mutex)
            mutex.deallocate()
        }

        func tryLock() -> Bool { pthread_mutex_trylock(mutex) == 0 }
        func lock() { pthread_mutex_lock(mutex) }
        func unlock() { pthread_mutex_unlock(mutex) }
    }

    private let slots: [Slot]
    private let next = Atomic<Int>(0)
    public let path: String

    public init(path: String, size: Int, open: () throws -> Database) throws {
        var slots: [Slot] = []
        for _ in 0..<size { slots.append(Slot(try open())) }
        self.slots = slots
        self.path = path
    }

    /// What a borrower of a closed pool is told.
    public struct Closed: Error, Sendable {}

    /// Runs `body` with a connection: a free one if any, else waits for one.
    public func withConnection<T>(_ body: (Database) throws -> T) throws -> T {
        let start = next.add(1, ordering: .relaxed).newValue
        var chosen: Slot?
        for offset in 0..<slots.count where chosen == nil {
            let slot = slots[(start &+ offset) % slots.count]
            if slot.tryLock() { chosen = slot }
        }
        let slot =
            chosen
            ?? {
                let home = slots[start % slots.count]
                home.lock()
                return home
            }()
        defer { slot.unlock() }
        guard let database = slot.database else { throw Closed() }
        return try body(database)
    }

    /// Closes every connection, each once its borrower is done; later
    /// borrowers are told it is closed (``Closed``). After this the files may be
    /// replaced (a restore) without an open connection of this process
    /// holding the old ones.
    public func close() {
        for slot in slots {
            slot.lock()
            slot.database = nil
            slot.unlock()
        }
    }
}
