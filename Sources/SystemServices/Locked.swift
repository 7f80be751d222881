import Glibc

/// A value behind a pthread mutex. Synchronization's `Mutex` spins before it
/// waits; with many more threads than cores (a thread per request in
/// progress) the spinning took the time the holder needed — a quarter of
/// brsyncd's samples on no-change pulls. A waiter here sleeps in the kernel.
/// Use it for state many request threads touch; the value is only reached
/// inside ``withLock(_:)``.
public final class Locked<Value>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: Value

    public init(_ value: Value) {
        pthread_mutex_init(mutex, nil)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func withLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
