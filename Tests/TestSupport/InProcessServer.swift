import BrsyncServer
import Logging
import Net
import ServerStore

/// A real brsyncd server in the test's own process: the sync API over TLS
/// (the certificates of ``TestCertificates`` in `directory`) on 127.0.0.1
/// with an ephemeral port, serving `store`, its log quiet. Stop it with
/// `server.shutdown()`. (The binary as a process: ``BrsyncdProcess``.)
public enum InProcessServer {
    public static func start(
        store: SyncStore, certificates directory: TemporaryDirectory,
        configure: (inout ServerConfiguration) -> Void = { _ in }
    ) throws -> (server: SyncServer, port: UInt16) {
        var configuration = ServerConfiguration()
        configuration.listen = [SocketAddress(host: "127.0.0.1", port: 0)]
        configuration.certificateFile = directory.file("server.pem")
        configuration.keyFile = directory.file("server.key")
        configure(&configuration)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let server = try SyncServer(configuration: configuration, store: store, logger: logger)
        return (server, try server.start()[0])
    }
}

extension SyncStore {
    /// A join code's secret for `device` of `account`, valid for an hour
    /// (`adding`: the device is made; otherwise it exists).
    public func joinSecret(_ account: String, _ device: String, adding: Bool = true) throws -> String {
        try enroll(account: account, device: device, adding: adding, validMilliseconds: 3_600_000).secret
    }
}
