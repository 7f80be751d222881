import Glibc
import HTTP
import Logging
import Net
import ServerStore
import SyncCore
import Synchronization
import SystemServices

/// The sync server: the store, the API and the HTTP server on its listeners.
public final class SyncServer: Sendable {
    public let configuration: ServerConfiguration
    public let store: SyncStore
    public let metrics = ServerMetrics()
    private let http: HTTPServer
    /// The metrics listener, when ``ServerConfiguration/metricsListen`` names one.
    private let metricsHTTP: HTTPServer?
    private let boundMetricsPorts = Locked<[UInt16]>([])
    private let logger: Logger

    /// Builds the server; nothing listens until ``start()``.
    /// - Throws: ``NetError`` for unusable certificate files.
    public init(configuration: ServerConfiguration, store: SyncStore, logger: Logger) throws {
        self.configuration = configuration
        self.store = store
        self.logger = logger
        Memory.configure()
        let tls = try Self.loadTLS(configuration)
        let metrics = self.metrics
        var observer = HTTPServer.Observer()
        observer.requestFinished = { request, status, milliseconds in
            metrics.requestFinished(path: request.path, status: status, milliseconds: milliseconds)
        }
        observer.rejected = { peer, reason in
            metrics.connectionRejected()
            logger.debug("rejected \(peer): \(reason)")
        }
        store.timelineGate.configure(intervalMilliseconds: configuration.timelineStartIntervalMilliseconds) {
            logger.notice("\($0)")
        }
        let box = ServerBox()
        let api = SyncAPI(
            store: store, configuration: configuration, metrics: metrics, logger: logger,
            activeRequests: { box.server?.activeRequests ?? 0 })
        http = try HTTPServer(
            addresses: configuration.listen, tls: tls, limits: configuration.limits, observer: observer,
            ownAnswers: Self.ownAnswers, admission: api.admit, quick: api.quick, handler: api.handle)
        box.server = http
        if configuration.metricsListen.isEmpty {
            metricsHTTP = nil
        } else {
            var limits = HTTPLimits()
            limits.maxConnections = 16
            limits.maxConnectionsPerAddress = 16
            limits.maxBodyBytes = 0
            metricsHTTP = try HTTPServer(
                addresses: configuration.metricsListen, tls: nil, limits: limits, ownAnswers: Self.ownAnswers,
                admission: { _, _ in SyncAPI.answer(ServerError.badRequest("the metrics listener takes no body")) },
                handler: { request, _ in Self.metricsAnswer(request, store: store, metrics: metrics, box: box) })
        }
    }

    /// `GET /metrics` on the metrics listener: Prometheus text. Nothing else is served there.
    static func metricsAnswer(
        _ request: HTTPRequest, store: SyncStore, metrics: ServerMetrics, box: ServerBox
    ) -> HTTPResponse {
        guard request.path == "/metrics" else {
            return SyncAPI.answer(ServerError.notFound("the metrics listener serves /metrics only"))
        }
        guard request.method == "GET" else {
            return SyncAPI.answer(ServerError.methodNotAllowed("use GET for /metrics", allow: ["GET"]))
        }
        do {
            let counts = try store.counts()
            let text = metrics.render(
                openConnections: box.server?.openConnections ?? 0, records: counts.records, devices: counts.devices,
                accounts: counts.accounts, watches: store.watches.count)
            return HTTPResponse(
                status: 200, headers: ["Content-Type": "text/plain; version=0.0.4"], body: Array(text.utf8))
        } catch let error as ServerError {
            return SyncAPI.answer(error)
        } catch {
            return SyncAPI.answer(ServerError.storeUnusable("\(error)"))
        }
    }

    /// The ports the metrics listener is bound to, once started (none when it is off).
    public var metricsPorts: [UInt16] { boundMetricsPorts.withLock { $0 } }

    /// The answers the HTTP layer makes itself, as every other error of the
    /// API: `{"error": CODE, "message": TEXT}` (docs/protocol.md), saying
    /// too that gzip bodies are taken.
    static let ownAnswers = HTTPServer.OwnAnswers { status, reason, message in
        let code: WireError.Code =
            switch reason {
            case .busy: .busy
            case .timeout: .timeout
            case .badRequest: .badRequest
            }
        var answer = HTTPResponse.json(status, WireError(code: code, message: message).json.jsonText)
        SyncAPI.advertiseCoding(&answer)
        return answer
    }

    static func loadTLS(_ configuration: ServerConfiguration) throws -> TLSContext? {
        if configuration.insecurePlaintext { return nil }
        guard let certificate = configuration.certificateFile, let key = configuration.keyFile else {
            throw NetError.tls(
                "--cert and --key are required (or --insecure-plaintext, for tests and behind a TLS proxy)")
        }
        return try TLSContext.server(certificateChainFile: certificate, privateKeyFile: key)
    }

    /// Binds the listeners and starts serving.
    /// - Returns: the bound ports, in the order of ``ServerConfiguration/listen``.
    @discardableResult
    public func start() throws -> [UInt16] {
        try store.startListening()
        let ports = try http.start()
        if let metricsHTTP {
            let bound: [UInt16]
            do { bound = try metricsHTTP.start() } catch {
                _ = http.shutdown(graceMilliseconds: 0)
                throw error
            }
            boundMetricsPorts.withLock { $0 = bound }
            for (address, port) in zip(configuration.metricsListen, bound) {
                logger.notice("metrics on http://\(SocketAddress(host: address.host, port: port))/metrics")
            }
        }
        startHousekeeping()
        for (address, port) in zip(configuration.listen, ports) {
            let scheme = configuration.insecurePlaintext ? "http" : "https"
            logger.notice("listening on \(scheme)://\(SocketAddress(host: address.host, port: port))")
        }
        return ports
    }

    /// Reloads the certificate and key from their files (SIGHUP); on failure the
    /// old ones stay in use.
    public func reloadCertificates() throws {
        guard let context = try Self.loadTLS(configuration) else { return }
        http.reloadTLS(context)
        logger.notice("reloaded the TLS certificate")
    }

    public var openConnections: Int { http.openConnections }
    /// Requests read and answered on threads now.
    public var activeRequests: Int { http.activeRequests }

    private let stopping = Atomic<Bool>(false)

    /// Purges tombstones every device has pulled, at start and then hourly,
    /// until shutdown.
    private func startHousekeeping() {
        let store = self.store
        let logger = self.logger
        let interval = configuration.housekeepingIntervalMilliseconds
        let retention = configuration.tombstoneRetentionMilliseconds
        try? startThread { [self] in
            var next = Deadline.now()
            while !stopping.load(ordering: .relaxed) {
                if !next.hasPassed {
                    usleep(100_000)
                    continue
                }
                do {
                    let purged = try store.purgeTombstones(retentionMilliseconds: retention)
                    if purged > 0 { logger.info("purged \(purged) tombstone(s) every device has pulled") }
                } catch {
                    logger.warning("tombstone purge failed: \(error)")
                }
                next = Deadline.after(milliseconds: interval)
            }
        }
    }

    /// Stops accepting, finishes in-flight requests, closes the store.
    public func shutdown() {
        logger.notice("shutting down: finishing in-flight requests")
        stopping.store(true, ordering: .relaxed)
        _ = metricsHTTP?.shutdown(graceMilliseconds: 1000)
        let clean = http.shutdown(graceMilliseconds: configuration.shutdownGraceMilliseconds)
        if !clean { logger.warning("some connections did not end within the grace period") }
        store.close()
        logger.notice("stopped")
    }
}

/// Lets the API read the server's connection count; set once, before serving.
final class ServerBox: @unchecked Sendable {
    // @unchecked: written once in SyncServer.init before any request can arrive.
    var server: HTTPServer?
}
