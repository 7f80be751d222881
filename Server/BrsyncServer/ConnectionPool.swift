import Dispatch
import Storage
import Synchronization

/// SQLite connections shared by the connection threads: each request borrows
/// one, so no connection is used by two threads at once. WAL lets readers run
/// beside the one writer; writers queue on SQLite's lock (busy timeout).
final class ConnectionPool: @unchecked Sendable {
    // @unchecked: `Database` is not Sendable, but a connection is handed to one
    // borrower at a time under `idle`'s lock and the semaphore.
    /// A connection in the idle list; it is only ever used by its current borrower.
    private struct Slot: @unchecked Sendable {
        let database: Database
    }

    private let idle: Mutex<[Slot]>
    private let available: DispatchSemaphore
    let path: String

    init(path: String, size: Int, open: () throws -> Database) throws {
        var connections: [Database] = []
        for _ in 0..<size { connections.append(try open()) }
        idle = Mutex(connections.map(Slot.init))
        available = DispatchSemaphore(value: size)
        self.path = path
    }

    /// Runs `body` with a connection, waiting for one to be free.
    func withConnection<T>(_ body: (Database) throws -> T) throws -> T {
        available.wait()
        defer { available.signal() }
        // The semaphore guarantees a connection is there.
        let slot = idle.withLock { $0.removeLast() }
        defer { idle.withLock { $0.append(slot) } }
        return try body(slot.database)
    }

    /// Closes every connection (they close when released).
    func close() {
        idle.withLock { $0.removeAll() }
    }
}
