/// `brsyncd serve` as a process of its own, on 127.0.0.1 with an ephemeral
/// port and TLS: the real binary, as a deployment runs it.
public struct BrsyncdProcess: Sendable {
    public let process: BackgroundProcess
    public let port: UInt16

    /// Starts `brsyncd serve ARGUMENTS --listen 127.0.0.1:PORT --cert CERT --key KEY`
    /// and waits until it listens.
    /// - Parameters:
    ///   - arguments: the store (``StoreKind/brsyncdStore(in:)``) and any other options.
    ///   - certificate: the certificate file in `directory` (the chain, for `brsync join`).
    ///   - port: 0 for an ephemeral port, or one a restarted server takes again.
    public init(
        _ arguments: [String], certificates directory: TemporaryDirectory, certificate: String = "server.pem",
        port: UInt16 = 0,
        environment: [String: String] = [:], binary: String = ProcessRunner.binary("brsyncd")
    ) throws {
        process = try BackgroundProcess(
            binary,
            ["serve"] + arguments + [
                "--listen", "127.0.0.1:\(port)", "--cert", directory.file(certificate),
                "--key", directory.file("server.key"),
            ],
            environment: environment)
        let listening = try process.waitFor(#"listening on https://127\.0\.0\.1:(\d+)"#)
        guard let port = UInt16(listening) else {
            process.stop()
            throw ProcessFailure("brsyncd said it listens on '\(listening)'")
        }
        self.port = port
    }

    public func stop() { process.stop() }
}

/// A test's own failure to set up what it needs.
public struct ProcessFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension StoreKind {
    /// brsyncd's options for a fresh store of this kind (`--db FILE` in
    /// `directory`, or `--store URL` of a new database in the shared
    /// cluster) and the environment they need (the password file).
    public func brsyncdStore(
        in directory: TemporaryDirectory
    ) throws -> (arguments: [String], environment: [String: String]) {
        switch self {
        case .sqlite: return (["--db", directory.file("store.sqlite")], [:])
        case .postgres:
            let cluster = try PostgresCluster.shared()
            return (["--store", try cluster.createDatabase()], ["BRSYNCD_STORE_PASSWORD_FILE": cluster.passwordFile])
        }
    }
}
