import SystemServices

/// Writers of one SQLite store take its one write lock in the order they
/// came (a ticket lock). SQLite's own wait is a sleep-and-retry loop that
/// favours no one: under a flood of large pushes from one account, another
/// account's small push could lose every retry for seconds. In turn, a
/// writer waits for at most the writes queued before it.
final class WriterQueue: Sendable {
    private let tickets = Locked((next: UInt64(0), serving: UInt64(0)))

    /// Writers in the queue, the one writing included.
    var queued: Int { tickets.withLock { Int($0.next - $0.serving) } }

    /// Runs `body` once every writer that came before has finished.
    func inTurn<T>(_ body: () throws -> T) rethrows -> T {
        let ticket = tickets.withLock { tickets in
            defer { tickets.next += 1 }
            return tickets.next
        }
        _ = tickets.wait { $0.serving == ticket ? true : nil }
        defer {
            tickets.withLock { $0.serving += 1 }
            tickets.wakeAll()
        }
        return try body()
    }
}
