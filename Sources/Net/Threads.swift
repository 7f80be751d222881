import Glibc
import Synchronization

/// Starts a detached POSIX thread running `body`. Blocking socket work runs on
/// threads of its own, never on Swift concurrency's cooperative pool.
/// - Parameter stackSize: bytes of stack (default 256 KiB: connection threads
///   are many and shallow).
public func startThread(stackSize: Int = 256 * 1024, _ body: @escaping @Sendable () -> Void) throws(NetError) {
    final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setstacksize(&attributes, stackSize)
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let status = pthread_create(
        &thread, &attributes,
        { argument in
            // The argument is the retained Box passed below; it is released here, once.
            let box = Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue()
            box.body()
            return nil
        }, box)
    if status != 0 {
        Unmanaged<Box>.fromOpaque(box).release()
        throw .system("pthread_create", status)
    }
}

/// Work on a thread of its own whose result one owner waits for: a pull
/// fetches its next page while the page before is applied.
public final class ThreadJob<Value: Sendable>: @unchecked Sendable {
    // `value` is written by the job's thread before it posts `done`, and read
    // by the owner only after waiting on `done`: the semaphore orders them.
    private let done = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
    private var value: Value?
    private var finished = false

    /// Starts `body` on a new thread (8 MiB of stack, as the main thread);
    /// when no thread can be made, runs it here and now.
    public init(_ body: @escaping @Sendable () -> Value) {
        sem_init(done, 0, 0)
        do {
            try startThread(stackSize: 8 * 1024 * 1024) { [self] in
                value = body()
                sem_post(done)
            }
        } catch {
            value = body()
            sem_post(done)
        }
    }

    deinit {
        sem_destroy(done)
        done.deallocate()
    }

    /// The job's result, once it has finished (waits for it the first time).
    public func wait() -> Value {
        if !finished {
            while sem_wait(done) != 0 {} // EINTR: wait again
            finished = true
        }
        return value!
    }
}

/// Threads lent to one piece of work's second half (SyncCore's
/// `SecondThread`): a large push read and digested, a page read, in two
/// halves at once. At most one fewer than the cores are lent at a time,
/// so a busy server does not double its threads; work that finds none
/// spare runs whole on its own thread.
public enum SpareThreads {
    private static let lent = Atomic<Int>(0)
    private static let limit = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))) - 1)

    /// Starts `body` on a lent thread and returns what waits for it; nil
    /// when none is spare (or no thread can be made).
    public static func start(_ body: @escaping @Sendable () -> Void) -> (@Sendable () -> Void)? {
        guard lent.add(1, ordering: .relaxed).newValue <= limit else {
            lent.subtract(1, ordering: .relaxed)
            return nil
        }
        let job = ThreadJob<Bool> {
            body()
            return true
        }
        return {
            _ = job.wait()
            lent.subtract(1, ordering: .relaxed)
        }
    }
}
