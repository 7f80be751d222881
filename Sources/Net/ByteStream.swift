import Glibc

/// A connected byte stream: a plain socket or TLS over one.
public protocol ByteStream: AnyObject {
    /// Reads what is available (at least one byte), waiting until the deadline;
    /// 0 when the peer closed. With `wakeup`, returns nil when that descriptor
    /// becomes readable first (used to end idle connections at shutdown).
    func read(
        into buffer: UnsafeMutableRawBufferPointer, deadline: Deadline, wakeup: Int32?, what: String
    ) throws(NetError) -> Int?
    /// Reads what has arrived, never waiting (an event loop's read).
    func readNow(into buffer: UnsafeMutableRawBufferPointer) throws(NetError) -> ReadNow
    func write(_ bytes: [UInt8], deadline: Deadline) throws(NetError)
    func close()
    /// Ends the sending side (TLS close_notify, then a TCP half-close); the
    /// peer can still be read from, to drain input before ``close()``.
    func finishWriting()
    /// Whether bytes already received wait to be read (an event loop must
    /// not wait for the socket to become readable then).
    var hasBufferedInput: Bool { get }
    var socket: Socket { get }
}

/// What a read that does not wait found (``ByteStream/readNow(into:)``).
public enum ReadNow: Sendable, Equatable {
    /// This many bytes (at least one).
    case bytes(Int)
    /// Nothing has arrived.
    case nothing
    /// The peer closed (or reset) the connection.
    case closed
    /// TLS must write before it can read (a key update): a thread that may
    /// wait takes the connection.
    case needsWait
}

/// A plain TCP stream (only with `--insecure-plaintext`, or behind a TLS proxy).
public final class PlainStream: ByteStream {
    public let socket: Socket

    public init(socket: Socket) {
        self.socket = socket
    }

    public func read(
        into buffer: UnsafeMutableRawBufferPointer, deadline: Deadline, wakeup: Int32?, what: String
    ) throws(NetError) -> Int? {
        while true {
            switch try readNow(into: buffer) {
            case .bytes(let count): return count
            case .closed: return 0
            case .nothing, .needsWait:
                guard try socket.wait(for: Int16(POLLIN), until: deadline, wakeup: wakeup, what: what) else {
                    return nil
                }
            }
        }
    }

    public func readNow(into buffer: UnsafeMutableRawBufferPointer) throws(NetError) -> ReadNow {
        while true {
            let count = Glibc.read(socket.descriptor, buffer.baseAddress, buffer.count)
            if count > 0 { return .bytes(count) }
            if count == 0 { return .closed }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return .nothing }
            if errno == ECONNRESET { return .closed }
            throw .system("read", errno)
        }
    }

    public func write(_ bytes: [UInt8], deadline: Deadline) throws(NetError) {
        let result = bytes.withUnsafeBytes { buffer in
            Result<Void, NetError> { () throws(NetError) in try socket.write(buffer, deadline: deadline) }
        }
        try result.get()
    }

    public func close() {
        socket.close()
    }

    public var hasBufferedInput: Bool { false }

    public func finishWriting() {
        socket.shutdownWrite()
    }
}
