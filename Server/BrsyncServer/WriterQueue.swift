import Glibc

/// Writers of one SQLite store take its one write lock in the order they
/// came (a ticket lock). SQLite's own wait is a sleep-and-retry loop that
/// favours no one: under a flood of large pushes from one account, another
/// account's small push could lose every retry for seconds. In turn, a
/// writer waits for at most the writes queued before it.
final class WriterQueue: @unchecked Sendable {
    // Guarded by `mutex`.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let turn = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var next: UInt64 = 0
    private var serving: UInt64 = 0

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(turn, nil)
    }

    deinit {
        pthread_cond_destroy(turn)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        turn.deallocate()
    }

    /// Writers in the queue, the one writing included.
    var queued: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return Int(next - serving)
    }

    /// Runs `body` once every writer that came before has finished.
    func inTurn<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        let ticket = next
        next += 1
        while serving != ticket { pthread_cond_wait(turn, mutex) }
        pthread_mutex_unlock(mutex)
        defer {
            pthread_mutex_lock(mutex)
            serving += 1
            pthread_cond_broadcast(turn)
            pthread_mutex_unlock(mutex)
        }
        return try body()
    }
}
