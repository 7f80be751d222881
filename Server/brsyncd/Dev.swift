import ArgumentParser
import BrsyncServer
import Glibc
import Net
import Plumbing
import SyncCore
import Foundation

struct Dev: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev",
        abstract: "Run a development server with embedded defaults: a data folder, a private CA and a localhost certificate, one account and device, HTTPS on 127.0.0.1:8443.",
        discussion: "Prints the URL, the CA file and the device token a client needs. Each run issues a fresh token.")

    @Option(help: ArgumentHelp("The data folder (default: $XDG_DATA_HOME/brsyncd-dev, else ~/.local/share/brsyncd-dev).", valueName: "dir"))
    var dir: String?
    @Option(name: .long, help: ArgumentHelp("HOST:PORT to listen on (default 127.0.0.1:8443).", valueName: "host:port"))
    var listen: String = "127.0.0.1:8443"
    @OptionGroup var logging: LoggingOptions

    func run() throws {
        let logger = try logging.bootstrap()
        let folder = dir ?? Self.defaultFolder()
        guard mkdir(folder, 0o700) == 0 || errno == EEXIST else {
            throw CLIFailure(message: "cannot create \(folder): \(String(cString: strerror(errno)))")
        }
        let caFile = "\(folder)/ca.pem"
        let certificateFile = "\(folder)/server.pem"
        let keyFile = "\(folder)/server.key"
        if access(caFile, R_OK) != 0 || access(certificateFile, R_OK) != 0 || access(keyFile, R_OK) != 0 {
            let authority = try CertificateAuthority(name: "brsyncd dev CA")
            let issued = try authority.issue(hosts: ["localhost", "127.0.0.1", "::1"])
            try Self.write(authority.certificatePEM, to: caFile, mode: 0o644)
            // The chain holds the CA too, so `brsync join` can pin it by fingerprint.
            try Self.write(issued.certificatePEM + authority.certificatePEM, to: certificateFile, mode: 0o644)
            do throws(SecretFile.Failure) {
                try SecretFile.write(Array(issued.privateKeyPEM.utf8), to: keyFile, what: "the TLS key")
            } catch {
                throw CLIFailure(message: error.message)
            }
        }
        let chain: [[UInt8]], authority: [[UInt8]]
        do {
            chain = try CertificatePinning.certificates(pemFile: certificateFile)
            authority = try CertificatePinning.certificates(pemFile: caFile)
        } catch {
            throw CLIFailure(message: "\(error)")
        }
        if chain.count == 1, let pem = try? String(contentsOfFile: certificateFile, encoding: .utf8),
           let caPEM = try? String(contentsOfFile: caFile, encoding: .utf8) {
            try Self.write(pem + caPEM, to: certificateFile, mode: 0o644) // a folder of an older brsyncd dev
        }
        let fingerprint = CertificatePinning.fingerprint(der: authority[0])
        let address: SocketAddress
        do { address = try SocketAddress(parsing: listen) } catch { throw CLIFailure(message: "--listen \(error)") }
        var configuration = ServerConfiguration()
        configuration.listen = [address]
        configuration.certificateFile = certificateFile
        configuration.keyFile = keyFile
        let store = try SQLiteStore(path: "\(folder)/brsyncd.sqlite", connections: configuration.storeConnections)
        if !(try store.accounts().contains { $0.name == "dev" }) { try store.addAccount("dev") }
        let server = try SyncServer(configuration: configuration, store: store, logger: logger)
        try runUntilSignalled(server, logger: logger) { ports in
            // A token only once the port is bound: a failed start changes nothing.
            // The join code is for another device: joining replaces its token.
            let token: String
            let joinSecret: String
            do {
                let devices = try store.devices(account: "dev")
                token = devices.contains { $0.name == "laptop" }
                    ? try store.reissueToken(account: "dev", device: "laptop")
                    : try store.addDevice(account: "dev", name: "laptop")
                joinSecret = try store.enroll(account: "dev", device: "second", adding: !devices.contains { $0.name == "second" },
                                              validMilliseconds: JoinOptions.defaultValidMilliseconds)
            } catch {
                logger.error("cannot issue the dev token: \(error)")
                return
            }
            let url = "https://\(SocketAddress(host: address.host, port: ports.first ?? address.port))"
            print("""
                brsyncd dev is serving \(url)
                  CA file:  \(caFile)
                  account:  dev, device: laptop
                  token:    \(token)
                  store:    \(folder)/brsyncd.sqlite
                Try:  curl --cacert \(caFile) \(url)/v1/health
                Point a replica at it:
                  brsync remote set \(url) --ca \(caFile) --token \(token)
                or join another machine in one step (device 'second'; the CA pinned by its fingerprint,
                no file to copy; the code works once, within a day, and a new one is made at every start):
                  echo '\((try? JoinCode(server: url, token: joinSecret, caFingerprint: fingerprint).description) ?? "?")' | brsync join
                Stop with Ctrl-C.
                """)
            fflush(nil) // all output streams: the banner must show before serving blocks
        }
    }

    static func defaultFolder() -> String {
        let xdg = XDGDirectories.current()
        // The data home may not exist yet (a fresh account, or an
        // XDG_DATA_HOME set for a try): each missing folder is made, private.
        var path = ""
        for component in xdg.dataHome.split(separator: "/") {
            path += "/\(component)"
            _ = mkdir(path, 0o700)
        }
        return "\(xdg.dataHome)/brsyncd-dev"
    }

    static func write(_ text: String, to path: String, mode: mode_t) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode)
        guard descriptor >= 0 else { throw CLIFailure(message: "cannot write \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        let bytes = Array(text.utf8)
        guard Glibc.write(descriptor, bytes, bytes.count) == bytes.count else {
            throw CLIFailure(message: "cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }
}
