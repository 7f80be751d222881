import Synchronization
import SystemServices

/// SQLite connections shared by threads: each borrower has one to itself, so
/// no connection is used by two threads at once (as GRDB's `DatabasePool`). WAL lets readers run
/// beside the one writer; writers queue on SQLite's lock (busy timeout).
///
/// Striped: each connection has a lock of its own, and a borrower starts at a
/// slot chosen by its thread, so threads rarely wait on each other's locks.
public final class ConnectionPool: Sendable {
    /// One connection, locked so its borrower is its only user (nil once closed).
    private typealias Slot = Locked<Database?>

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
        // A free connection if any; else the thread's own slot, waiting for it.
        for offset in 0..<slots.count {
            if let result = try slots[(start &+ offset) % slots.count].tryWithLock({ try use($0, body) }) {
                return result
            }
        }
        return try slots[start % slots.count].withLock { try use($0, body) }
    }

    private func use<T>(_ database: Database?, _ body: (Database) throws -> T) throws -> T {
        guard let database else { throw Closed() }
        return try body(database)
    }

    /// Closes every connection, each once its borrower is done; later
    /// borrowers are told it is closed (``Closed``). After this the files may be
    /// replaced (a restore) without an open connection of this process
    /// holding the old ones.
    public func close() {
        for slot in slots { slot.withLock { $0 = nil } }
    }
}
