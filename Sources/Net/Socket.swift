import Glibc

/// A non-blocking TCP socket. Reads and writes wait with `poll` until a
/// deadline, so no call blocks forever. Owned by one thread at a time.
public final class Socket: @unchecked Sendable {
    // @unchecked: the descriptor is immutable; a socket is used by one thread
    // at a time (its connection's), and `close` is idempotent.
    public let descriptor: Int32
    private var isClosed = false

    init(descriptor: Int32) {
        self.descriptor = descriptor
        _ = Self.ignoreBrokenPipes
    }

    /// A peer that closes while we write must be an error (EPIPE), not the end
    /// of the process: OpenSSL writes with write(2), which raises SIGPIPE.
    /// Done once, the first time a socket exists.
    private static let ignoreBrokenPipes: Void = {
        signal(SIGPIPE, SIG_IGN)
    }()

    deinit { close() }

    public func close() {
        guard !isClosed else { return }
        isClosed = true
        Glibc.close(descriptor)
    }

    static func makeNonBlocking(_ descriptor: Int32) {
        let flags = fcntl(descriptor, F_GETFL, 0)
        _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
    }

    /// Opens a listening socket on `address` (IPv6 sockets listen on IPv6 only).
    /// - Throws: ``NetError`` (for example `EADDRINUSE` when the port is taken).
    public static func listen(on address: SocketAddress, backlog: Int32 = 1024) throws(NetError) -> Socket {
        guard let target = try address.resolve(passive: true).first else {
            throw .badAddress("no address for \(address)")
        }
        let descriptor = socket(target.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw .lastSystem("socket") }
        let socket = Socket(descriptor: descriptor)
        var on: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        if target.family == AF_INET6 {
            setsockopt(descriptor, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &on, socklen_t(MemoryLayout<Int32>.size))
        }
        var storage = target.storage
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, target.length) }
        }
        guard bound == 0 else { throw .system("bind \(address)", errno) }
        guard Glibc.listen(descriptor, backlog) == 0 else { throw .system("listen \(address)", errno) }
        makeNonBlocking(descriptor)
        return socket
    }

    /// The port the socket is bound to (for listeners on port 0).
    public var localPort: UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        if Int32(storage.ss_family) == AF_INET6 {
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            }
        }
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
    }

    /// Accepts one connection, or nil when none is waiting.
    public func accept() throws(NetError) -> (Socket, String)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let client = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(descriptor, $0, &length) }
        }
        if client < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED { return nil }
            throw .lastSystem("accept")
        }
        _ = fcntl(client, F_SETFD, FD_CLOEXEC)
        Self.makeNonBlocking(client)
        var on: Int32 = 1
        setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        return (Socket(descriptor: client), Self.describe(storage))
    }

    static func describe(_ storage: sockaddr_storage) -> String {
        var storage = storage
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        if Int32(storage.ss_family) == AF_INET6 {
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address in
                    var raw = address.pointee.sin6_addr
                    inet_ntop(AF_INET6, &raw, &buffer, socklen_t(buffer.count))
                    return "[\(String(nullTerminated: buffer))]:\(UInt16(bigEndian: address.pointee.sin6_port))"
                }
            }
        }
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
                var raw = address.pointee.sin_addr
                inet_ntop(AF_INET, &raw, &buffer, socklen_t(buffer.count))
                return "\(String(nullTerminated: buffer)):\(UInt16(bigEndian: address.pointee.sin_port))"
            }
        }
    }

    /// Connects to `address` within the deadline, trying each resolved address.
    /// - Parameter source: the local IPv4 address to connect from (the
    ///   benchmarks open tens of thousands of connections from several
    ///   loopback addresses); the system's choice when nil.
    public static func connect(
        to address: SocketAddress, deadline: Deadline, source: String? = nil
    ) throws(NetError) -> Socket {
        var lastError = NetError.badAddress("no address for \(address)")
        for target in try address.resolve(passive: false) {
            let descriptor = socket(
                target.family,
                Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard descriptor >= 0 else { throw .lastSystem("socket") }
            let socket = Socket(descriptor: descriptor)
            if let source {
                var local = sockaddr_in()
                local.sin_family = sa_family_t(AF_INET)
                guard inet_pton(AF_INET, source, &local.sin_addr) == 1 else {
                    throw .badAddress("not an IPv4 address: \(source)")
                }
                let bound = withUnsafePointer(to: &local) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                guard bound == 0 else { throw .lastSystem("bind \(source)") }
            }
            var storage = target.storage
            let status = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, target.length) }
            }
            if status != 0 && errno != EINPROGRESS {
                lastError = .system("connect \(address)", errno)
                continue
            }
            if status != 0 {
                do {
                    try socket.wait(for: Int16(POLLOUT), until: deadline, what: "connecting to \(address)")
                } catch {
                    lastError = error
                    continue
                }
                var problem: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &problem, &length)
                if problem != 0 {
                    lastError = .system("connect \(address)", problem)
                    continue
                }
            }
            var on: Int32 = 1
            setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
            return socket
        }
        throw lastError
    }

    /// Waits until the socket is ready for `events`, or until another
    /// descriptor (`wakeup`) becomes readable. Returns false when woken.
    @discardableResult
    public func wait(
        for events: Int16, until deadline: Deadline, wakeup: Int32? = nil, what: String
    ) throws(NetError) -> Bool {
        while true {
            var fds = [pollfd(fd: descriptor, events: events, revents: 0)]
            if let wakeup { fds.append(pollfd(fd: wakeup, events: Int16(POLLIN), revents: 0)) }
            let remaining = deadline.remaining
            if remaining == 0 && deadline.hasPassed { throw .timeout(what) }
            let status = poll(&fds, nfds_t(fds.count), remaining)
            if status < 0 {
                if errno == EINTR { continue }
                throw .lastSystem("poll")
            }
            if status == 0 { throw .timeout(what) }
            if fds.count > 1 && fds[1].revents != 0 && fds[0].revents == 0 { return false }
            return true
        }
    }

    /// Reads what is available (up to `buffer.count` bytes), waiting until the deadline.
    /// - Returns: the number of bytes read; 0 means the peer closed.
    public func read(
        into buffer: UnsafeMutableRawBufferPointer, deadline: Deadline, what: String
    ) throws(NetError) -> Int {
        while true {
            let count = Glibc.read(descriptor, buffer.baseAddress, buffer.count)
            if count >= 0 { return count }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK {
                try wait(for: Int16(POLLIN), until: deadline, what: what)
                continue
            }
            if errno == ECONNRESET { return 0 }
            throw .lastSystem("read")
        }
    }

    /// Writes all of `bytes` before the deadline.
    public func write(_ bytes: UnsafeRawBufferPointer, deadline: Deadline) throws(NetError) {
        var offset = 0
        while offset < bytes.count {
            // non-empty: offset < count
            let count = send(descriptor, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            if count > 0 {
                offset += count
                continue
            }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                try wait(for: Int16(POLLOUT), until: deadline, what: "writing")
                continue
            }
            if count < 0 && (errno == EPIPE || errno == ECONNRESET) { throw .closed }
            throw .lastSystem("send")
        }
    }

    /// Half-closes the write side (so the peer reads the end of the response).
    public func shutdownWrite() {
        Glibc.shutdown(descriptor, Int32(SHUT_WR))
    }
}
