import Glibc

/// A value behind a pthread mutex, and the one lock of brsync's own code.
/// Synchronization's `Mutex` spins before it waits, and is
/// priority-inheriting; with many more threads than cores (a thread per
/// request in progress) the spinning took the time the holder needed — a
/// quarter of brsyncd's samples on no-change pulls. A waiter here sleeps in
/// the kernel. The value is only reached inside ``withLock(_:)``,
/// ``tryWithLock(_:)`` or ``wait(deadlineMillis:until:)``; a waiter is woken
/// by ``wakeOne()`` or ``wakeAll()`` after a change it may wait for.
/// (`Mutex` stays in modules below this one, HTTP and Cryptography, for
/// state a request touches once.)
public final class Locked<Value>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let changed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var value: Value

    public init(_ value: Value) {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        // Deadlines on the monotonic clock: a wall clock set back does not stretch a wait.
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(changed, &attributes)
        pthread_condattr_destroy(&attributes)
        self.value = value
    }

    deinit {
        pthread_cond_destroy(changed)
        pthread_mutex_destroy(mutex)
        changed.deallocate()
        mutex.deallocate()
    }

    public func withLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// ``withLock(_:)`` when the lock is free now; nil, without waiting, when
    /// another thread holds it.
    public func tryWithLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// Waits, sleeping, until `ready` (run under the lock whenever a waker
    /// says the value changed) returns a result, and returns it; nil when
    /// `deadlineMillis` (``Clock/monotonicMillis()``) comes first.
    public func wait<T>(deadlineMillis: Int64? = nil, until ready: (inout Value) -> T?) -> T? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        var deadline = timespec()
        if let deadlineMillis {
            deadline.tv_sec = Int(deadlineMillis / 1000)
            deadline.tv_nsec = Int(deadlineMillis % 1000) * 1_000_000
        }
        while true {
            if let result = ready(&value) { return result }
            if deadlineMillis == nil {
                pthread_cond_wait(changed, mutex)
            } else if pthread_cond_timedwait(changed, mutex, &deadline) == ETIMEDOUT {
                return ready(&value)
            }
        }
    }

    /// Wakes one thread waiting in ``wait(deadlineMillis:until:)``.
    public func wakeOne() { pthread_cond_signal(changed) }

    /// Wakes every thread waiting in ``wait(deadlineMillis:until:)``.
    public func wakeAll() { pthread_cond_broadcast(changed) }
}
