import Glibc

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
    let status = pthread_create(&thread, &attributes, { argument in
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
