import ArgumentParser
import BrsyncServer
import Glibc
import HTTP
import Logging
import Net
import SystemServices

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the sync API over HTTPS until SIGTERM or SIGINT; SIGHUP reloads the certificate.")

    @OptionGroup var store: StoreOptions
    @OptionGroup var logging: LoggingOptions
    @OptionGroup var options: ServeOptions

    func run() throws {
        let logger = try logging.bootstrap()
        let configuration = try options.configuration()
        // A first start makes the store; said aloud, since a mistyped --db
        // would otherwise serve an empty store whose tokens all fail.
        if case .sqlite(let path) = try self.store.location(), access(path, F_OK) != 0 {
            logger.warning(
                "there is no store at \(path): starting a new, empty one (check --db if one exists elsewhere)")
        }
        let store = try self.store.open(connections: configuration.storeConnections, creating: true)
        let server = try SyncServer(configuration: configuration, store: store, logger: logger)
        try runUntilSignalled(server, logger: logger)
    }
}

/// Options shared by `serve` and `dev`.
struct ServeOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "HOST:PORT to listen on; repeat for several ([::1]:8443 for IPv6). Default 127.0.0.1:8443.",
            valueName: "host:port"))
    var listen: [String] = []
    @Option(
        name: .long,
        help: ArgumentHelp(
            "HOST:PORT of a plain-HTTP listener for GET /metrics (Prometheus), for the host or a private network; repeatable. Off by default: the sync listeners never serve metrics.",
            valueName: "host:port"))
    var metricsListen: [String] = []
    @Option(help: ArgumentHelp("PEM certificate chain.", valueName: "file")) var cert: String?
    @Option(help: ArgumentHelp("PEM private key.", valueName: "file")) var key: String?
    @Flag(help: "Serve plain HTTP: only for tests, or behind a TLS-terminating proxy.") var insecurePlaintext = false
    @Option(
        help: "Most connections open at once, waiting (handshake, idle: memory only) or being answered (default 16384)."
    )
    var maxConnections: Int?
    @Option(
        help:
            "Most requests read and answered at once, each on a thread; more are answered 503 with Retry-After (default 256)."
    )
    var maxActiveRequests: Int?
    @Option(
        help:
            "Most connections from one IP address at once (default 64; raise it behind a NAT or a proxy that keeps TLS)."
    )
    var maxConnectionsPerAddress: Int?
    @Option(
        help:
            "Requests one device token may have in progress at once; more are answered 503 with Retry-After (default 2)."
    )
    var maxRequestsPerToken: Int?
    @Option(help: "Largest request body in bytes (default 8388608).") var maxBodyBytes: Int?
    @Option(help: "Largest header section in bytes (default 16384).") var maxHeaderBytes: Int?
    @Option(help: "Longest request line in bytes (default 8192).") var maxRequestLineBytes: Int?
    @Option(help: "Milliseconds to receive a request's headers (default 10000).") var headerTimeoutMs: Int?
    @Option(help: "Milliseconds to receive a body (default 30000).") var bodyTimeoutMs: Int?
    @Option(help: "Milliseconds an idle keep-alive connection stays open (default 60000).") var idleTimeoutMs: Int?
    @Option(help: "Milliseconds for the TLS handshake (default 10000).") var handshakeTimeoutMs: Int?
    @Option(
        help:
            "A pull page's byte budget: records are added while those before hold less, so the largest record still fits (default 1048576)."
    )
    var maxPageBytes: Int?
    @Option(help: "Seconds a stamp may be ahead of the server's clock (default 300).") var maxClockOffsetSeconds: Int?
    @Option(help: "Days a deleted record is kept at least, and until every device has pulled it (default 90).")
    var tombstoneRetentionDays: Int?

    func configuration(defaultListen: [SocketAddress]? = nil) throws -> ServerConfiguration {
        var configuration = ServerConfiguration()
        if !listen.isEmpty {
            configuration.listen = try listen.map { text in
                do { return try SocketAddress(parsing: text) } catch { throw CLIFailure(message: "--listen \(error)") }
            }
        } else if let defaultListen {
            configuration.listen = defaultListen
        }
        configuration.metricsListen = try metricsListen.map { text in
            do { return try SocketAddress(parsing: text) } catch {
                throw CLIFailure(message: "--metrics-listen \(error)")
            }
        }
        configuration.certificateFile = cert
        configuration.keyFile = key
        configuration.insecurePlaintext = insecurePlaintext
        if insecurePlaintext && (cert != nil || key != nil) {
            throw CLIFailure(message: "--insecure-plaintext and --cert/--key exclude each other")
        }
        if !insecurePlaintext && (cert == nil || key == nil) {
            throw CLIFailure(
                message:
                    "--cert FILE and --key FILE are required (or --insecure-plaintext for tests and behind a TLS proxy)"
            )
        }
        func positive(_ value: Int?, _ name: String, _ apply: (Int) -> Void) throws {
            guard let value else { return }
            guard value > 0 else { throw CLIFailure(message: "--\(name) must be a positive number") }
            apply(value)
        }
        try positive(maxConnections, "max-connections") { configuration.limits.maxConnections = $0 }
        try positive(maxActiveRequests, "max-active-requests") { configuration.limits.maxActiveRequests = $0 }
        try positive(maxConnectionsPerAddress, "max-connections-per-address") {
            configuration.limits.maxConnectionsPerAddress = $0
        }
        try positive(maxRequestsPerToken, "max-requests-per-token") { configuration.maxRequestsPerToken = $0 }
        try positive(maxBodyBytes, "max-body-bytes") { configuration.limits.maxBodyBytes = $0 }
        try positive(maxHeaderBytes, "max-header-bytes") { configuration.limits.maxHeaderBytes = $0 }
        try positive(maxRequestLineBytes, "max-request-line-bytes") { configuration.limits.maxRequestLineBytes = $0 }
        try positive(headerTimeoutMs, "header-timeout-ms") { configuration.limits.headerReadTimeoutMilliseconds = $0 }
        try positive(bodyTimeoutMs, "body-timeout-ms") { configuration.limits.bodyReadTimeoutMilliseconds = $0 }
        try positive(idleTimeoutMs, "idle-timeout-ms") { configuration.limits.idleTimeoutMilliseconds = $0 }
        try positive(handshakeTimeoutMs, "handshake-timeout-ms") {
            configuration.limits.tlsHandshakeTimeoutMilliseconds = $0
        }
        try positive(maxClockOffsetSeconds, "max-clock-offset-seconds") {
            configuration.maxClockOffsetMilliseconds = Int64($0) * 1000
        }
        try positive(maxPageBytes, "max-page-bytes") { configuration.maxPageBytes = $0 }
        if let tombstoneRetentionDays {
            guard tombstoneRetentionDays >= 0 else {
                throw CLIFailure(message: "--tombstone-retention-days must be 0 or more")
            }
            configuration.tombstoneRetentionMilliseconds = Int64(tombstoneRetentionDays) * 86_400_000
        }
        return configuration
    }
}

/// Serves until SIGTERM or SIGINT (graceful shutdown); SIGHUP reloads the
/// certificate. The signals are blocked in every thread and taken here with
/// `sigwait`, so no handler runs in signal context.
func runUntilSignalled(_ server: SyncServer, logger: Logger, started: (([UInt16]) -> Void)? = nil) throws {
    var signals = sigset_t()
    sigemptyset(&signals)
    for signal in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&signals, signal) }
    pthread_sigmask(SIG_BLOCK, &signals, nil) // before any thread starts, so all inherit it
    let ports = try server.start()
    started?(ports)
    while true {
        var received: Int32 = 0
        guard sigwait(&signals, &received) == 0 else { continue }
        if received == SIGHUP {
            do { try server.reloadCertificates() } catch {
                logger.error("certificate reload failed, keeping the old one: \(error)")
            }
            continue
        }
        logger.notice("received signal \(received)")
        server.shutdown()
        return
    }
}
