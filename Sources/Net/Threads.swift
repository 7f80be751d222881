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

/// A list of items worked through by whichever threads are free: the
/// thread that made it, and any that joins with ``help()`` while it would
/// otherwise wait (a pull's applying thread opens part of the page it waits
/// for). Items are taken in chunks, in order; each result lands in its
/// item's place, so the results read as if one thread had made them.
public final class SharedWork<Item: Sendable, Result: Sendable>: @unchecked Sendable {
    // Each of `slots` is written by the one thread that took its
    // chunk, and read by the owner only after every chunk is counted done
    // (`finished`, then `allDone`): the atomics and the semaphore order them.
    private let items: [Item]
    private let slots: UnsafeMutableBufferPointer<Result?>
    private let chunk: Int
    private let work: @Sendable (Item) -> Result
    private let taken = Atomic<Int>(0)
    private let finished = Atomic<Int>(0)
    private let allDone = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
    private var collected = false

    /// - Parameter chunk: items taken at once (at least 1): small enough
    ///   that two threads end together, large enough that taking costs nothing.
    public init(_ items: [Item], chunk: Int = 32, work: @escaping @Sendable (Item) -> Result) {
        self.items = items
        self.chunk = max(1, chunk)
        self.work = work
        slots = .allocate(capacity: items.count)
        slots.initialize(repeating: nil)
        sem_init(allDone, 0, 0)
    }

    deinit {
        slots.deinitialize()
        slots.deallocate()
        sem_destroy(allDone)
        allDone.deallocate()
    }

    /// Works through chunks until none is left to take (others may still be
    /// finishing theirs).
    public func help() {
        while true {
            let start = taken.add(chunk, ordering: .relaxed).oldValue
            if start >= items.count { return }
            let end = min(start + chunk, items.count)
            for index in start..<end { slots[index] = work(items[index]) }
            // The one who finishes the last item wakes the owner.
            if finished.add(end - start, ordering: .releasing).newValue == items.count { sem_post(allDone) }
        }
    }

    /// Every item's result, in the items' order: helps, then waits for the
    /// chunks other threads took. Called once, by the owner.
    public func results() -> [Result] {
        precondition(!collected, "SharedWork's results are collected once")
        collected = true
        help()
        if !items.isEmpty {
            while sem_wait(allDone) != 0 {} // EINTR: wait again
            _ = finished.load(ordering: .acquiring)
        }
        return slots.map { $0! }
    }
}

/// Where a job on another thread hands out work it can share: the waiting
/// thread calls ``help()``, which returns once the job has shared nothing or
/// nothing of what it shared is left to take.
public final class WorkOffer: @unchecked Sendable {
    // `helper` is written by the job's thread before it posts `ready`, and
    // read by the waiting thread only after waiting on it.
    private let ready = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
    private var helper: (@Sendable () -> Void)?
    private var offered = false
    private var answered = false

    public init() { sem_init(ready, 0, 0) }

    deinit {
        sem_destroy(ready)
        ready.deallocate()
    }

    /// The job's side, once: `help` is what another thread may run
    /// (``SharedWork/help()``), or nil when there is nothing to share.
    public func offer(_ help: (@Sendable () -> Void)?) {
        precondition(!offered, "a WorkOffer is offered once")
        offered = true
        helper = help
        sem_post(ready)
    }

    /// The waiting side, once: waits until the job offers or declines,
    /// then does what it offered.
    public func help() {
        precondition(!answered, "a WorkOffer is taken up once")
        answered = true
        while sem_wait(ready) != 0 {} // EINTR: wait again
        helper?()
    }
}
