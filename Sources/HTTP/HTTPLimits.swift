/// Every limit and timeout of the HTTP server, with its default.
///
/// The parser enforces the size limits; the connection loop enforces the
/// timeouts and the connection cap.
public struct HTTPLimits: Sendable, Equatable {
    /// Longest request line (method, target, version), in bytes. Default 8 KiB;
    /// longer is refused with 414.
    public var maxRequestLineBytes: Int = 8 * 1024
    /// Largest header section (all field lines together), in bytes. Default 16 KiB;
    /// larger is refused with 431.
    public var maxHeaderBytes: Int = 16 * 1024
    /// Most header fields in one request. Default 100; more is refused with 431.
    public var maxHeaderCount: Int = 100
    /// Largest request body, in bytes. Default 8 MiB; larger is refused with 413.
    public var maxBodyBytes: Int = 8 * 1024 * 1024
    /// Time allowed from the first byte of a request to the end of its headers.
    /// Default 10 s: a client sending a byte a second cannot hold a connection.
    public var headerReadTimeoutMilliseconds: Int = 10_000
    /// Time allowed to receive a body once the headers are in. Default 30 s.
    public var bodyReadTimeoutMilliseconds: Int = 30_000
    /// Time an idle keep-alive connection is kept open. Default 60 s.
    public var idleTimeoutMilliseconds: Int = 60_000
    /// Time allowed for the TLS handshake. Default 10 s.
    public var tlsHandshakeTimeoutMilliseconds: Int = 10_000
    /// Time allowed to write a response. Default 30 s.
    public var writeTimeoutMilliseconds: Int = 30_000
    /// Most connections open at once, waiting (in their TLS handshake, for
    /// a request, idle between requests: memory, no thread) or being
    /// answered; more are answered 503 and closed. Default 16,384 (an idle
    /// TLS connection takes about 14 KB; the process raises its limit of open
    /// files to the system's hard limit at start).
    public var maxConnections: Int = 16_384
    /// Most requests read and answered at once, each on a thread; a request
    /// that arrives past it is answered 503 with `Retry-After`. Default 256.
    public var maxActiveRequests: Int = 256
    /// After an answer, how long its thread waits for the connection's next
    /// request before handing the connection back to the event loop: a
    /// client that asks again at once is served on without a hand-over.
    /// Default 20 ms.
    public var keepThreadMilliseconds: Int = 20
    /// Most connections from one IP address at once. Default 64: one client
    /// (or one attacker) cannot hold every slot; more are answered 503.
    /// Raise it when many clients share an address (a NAT, a proxy that does
    /// not terminate TLS).
    public var maxConnectionsPerAddress: Int = 64
    /// Connections over a cap that are still answered 503 at once (over TLS
    /// this needs a handshake, so each takes a thread for up to
    /// ``refusalTimeoutMilliseconds``); past this many they are closed
    /// unanswered. Default 32.
    public var maxConcurrentRefusals: Int = 32
    /// Time allowed to refuse a connection over a cap: the TLS handshake and
    /// the 503. Default 2 s.
    public var refusalTimeoutMilliseconds: Int = 2_000
    /// After the last answer on a connection, how long unread input is read
    /// and discarded before closing, so the kernel does not reset the
    /// connection and destroy answers the client has not read yet (RFC 9112
    /// §9.6). Default 2 s, at most ``lingerMaxBytes``.
    public var lingerMilliseconds: Int = 2_000
    /// Most bytes discarded while lingering. Default 16 MiB.
    public var lingerMaxBytes: Int = 16 * 1024 * 1024
    /// Most requests on one keep-alive connection. Default 10,000.
    public var maxRequestsPerConnection: Int = 10_000

    public init() {}
}
