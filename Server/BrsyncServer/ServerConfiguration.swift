import HTTP
import Net
import ServerStore

/// Everything `brsyncd serve` is configured with, and the defaults.
public struct ServerConfiguration: Sendable {
    /// Addresses to listen on (IPv4 and IPv6). Default `127.0.0.1:8443`.
    public var listen: [SocketAddress] = [SocketAddress(host: "127.0.0.1", port: 8443)]
    /// PEM certificate chain and key; both required unless ``insecurePlaintext``.
    public var certificateFile: String?
    public var keyFile: String?
    /// Serve plain HTTP (tests, or behind a TLS-terminating proxy). Default false.
    public var insecurePlaintext = false
    /// Addresses of the metrics listener (plain HTTP, `GET /metrics` only),
    /// for a scraper on the host or a private network; none by default. The
    /// sync listeners never serve metrics.
    public var metricsListen: [SocketAddress] = []
    /// Sizes, timeouts and the connection cap (see ``HTTPLimits`` for defaults).
    public var limits = HTTPLimits()
    /// Pushed stamps further ahead than this of the server's clock are
    /// refused, unless not past the newest wall time the account holds (an
    /// edit made after seeing a stamp taken while the server's clock was
    /// fast). Default 5 minutes.
    public var maxClockOffsetMilliseconds: Int64 = 5 * 60 * 1000
    /// The same for relayed records (values a server, maybe an earlier
    /// timeline of this one, accepted once: after a restore, a clock that was
    /// fast then must not lose them). Default 24 hours: still no stamp years ahead.
    public var maxRelayClockOffsetMilliseconds: Int64 = 24 * 3_600_000
    /// Requests one bearer token may have in progress at once (a client
    /// syncs one request at a time); more are answered 503 with
    /// `Retry-After`, so one device cannot take every worker. Default 2.
    public var maxRequestsPerToken = 2
    /// Records per pull page when the client asks for none. Default 500.
    public var defaultPullLimit = 500
    /// Most records per pull page. Default 5,000.
    public var maxPullLimit = 5000
    /// A pull page's byte budget: records are added while those before hold
    /// less (the first always, so the largest record fits). Default 1 MiB.
    public var maxPageBytes = Store.defaultPageBytes
    /// SQLite connections shared by request threads. Default 8.
    public var storeConnections = 8
    /// How long shutdown waits for in-flight requests. Default 30 s.
    public var shutdownGraceMilliseconds = 30_000
    /// Deleted records are kept at least this long, and until every device of
    /// the account has pulled them. Default 90 days.
    public var tombstoneRetentionMilliseconds: Int64 = 90 * 86_400_000
    /// How often old tombstones every device has pulled are purged. Default 1 hour.
    public var housekeepingIntervalMilliseconds = 3_600_000
    /// The least time between two new timelines of one readable account
    /// started by its devices' requests from the future (a rollback), per
    /// process (``Store/TimelineGate``). Default 60 s.
    public var timelineStartIntervalMilliseconds: Int64 = 60_000

    public init() {}
}
