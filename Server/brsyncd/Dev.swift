import ArgumentParser
import BrsyncServer
import Foundation
import Glibc
import Net
import ServerStore
import SyncCore
import SystemServices

struct Dev: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev",
        abstract:
            "Run a development server with embedded defaults: a data folder, a private CA and a localhost certificate, one account and device, HTTPS on 127.0.0.1:8443.",
        discussion: """
            Prints the URL, the CA file and the device token a client needs, and a join code for another machine. The \
            folder keeps the store, the certificates and the first device's token across runs, so a machine paired \
            once keeps syncing after a restart; each run's join code is for a machine not paired yet.
            """)

    @Option(
        help: ArgumentHelp(
            "The data folder (default: $XDG_DATA_HOME/brsyncd-dev, else ~/.local/share/brsyncd-dev).", valueName: "dir")
    )
    var dir: String?
    @Option(name: .long, help: ArgumentHelp("HOST:PORT to listen on.", valueName: "host:port"))
    var listen: String = "127.0.0.1:8443"
    @OptionGroup var logging: LoggingOptions

    func run() throws {
        let logger = try logging.bootstrap()
        let folder = dir ?? Self.defaultFolder()
        guard mkdir(folder, 0o700) == 0 || errno == EEXIST else {
            throw CLIFailure(message: "cannot create \(folder): \(SystemError.text())")
        }
        let (caFile, certificateFile, keyFile) = ("\(folder)/ca.pem", "\(folder)/server.pem", "\(folder)/server.key")
        let fingerprint = try Self.certificates(caFile: caFile, certificateFile: certificateFile, keyFile: keyFile)
        let address: SocketAddress
        do { address = try SocketAddress(parsing: listen) } catch { throw CLIFailure(message: "--listen \(error)") }
        var configuration = ServerConfiguration()
        configuration.listen = [address]
        configuration.certificateFile = certificateFile
        configuration.keyFile = keyFile
        let store = try SyncStore(sqlite: "\(folder)/brsyncd.sqlite", connections: configuration.storeConnections)
        if !(try store.accounts().contains { $0.name == "dev" }) { try store.addAccount("dev") }
        let server = try SyncServer(configuration: configuration, store: store, logger: logger)
        try runUntilSignalled(server, logger: logger) { ports in
            // A token only once the port is bound: a failed start changes nothing.
            // The join code is for another device: joining replaces its token.
            let joinSecret: Store.JoinSecret
            let joining: String
            do {
                // Made (or kept) in laptop.token, which the banner names: never printed.
                _ = try Self.laptopToken(store: store, folder: folder)
                (joining, joinSecret) = try Self.joinSecret(store: store, folder: folder)
            } catch {
                logger.error("cannot issue the dev token: \(error)")
                return
            }
            let url = "https://\(SocketAddress(host: address.host, port: ports.first ?? address.port))"
            Self.printBanner(
                url: url, folder: folder, caFile: caFile, joining: joining, joinSecret: joinSecret,
                fingerprint: fingerprint)
            fflush(nil) // all output streams: the banner must show before serving blocks
        }
    }

    /// The dev CA, and the server's certificate and key it issued, made in
    /// the folder when any is missing; the CA's fingerprint (for join codes).
    private static func certificates(caFile: String, certificateFile: String, keyFile: String) throws -> [UInt8] {
        if access(caFile, R_OK) != 0 || access(certificateFile, R_OK) != 0 || access(keyFile, R_OK) != 0 {
            let authority = try CertificateAuthority(name: "brsyncd dev CA")
            let issued = try authority.issue(hosts: ["localhost", "127.0.0.1", "::1"])
            try write(authority.certificatePEM, to: caFile, mode: 0o644)
            // The chain holds the CA too, so `brsync join` can pin it by fingerprint.
            try write(issued.certificatePEM + authority.certificatePEM, to: certificateFile, mode: 0o644)
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
            let caPEM = try? String(contentsOfFile: caFile, encoding: .utf8)
        {
            try write(pem + caPEM, to: certificateFile, mode: 0o644) // a folder of an older brsyncd dev
        }
        return CertificatePinning.fingerprint(der: authority[0])
    }

    /// What the dev server serves and how to point a replica at it.
    private static func printBanner(
        url: String, folder: String, caFile: String, joining: String, joinSecret: Store.JoinSecret,
        fingerprint: [UInt8]
    ) {
        // The commands name the client beside this brsyncd (where `swift build` puts both), or say how to build it.
        let tools = ProcessEnvironment.executablePath().split(separator: "/").dropLast().joined(separator: "/")
        let brsync = "/\(tools)/brsync"
        let build =
            access(brsync, X_OK) == 0 && access("/\(tools)/brsync-sync", X_OK) == 0
            ? ""
            : "First build the client (it is not beside this brsyncd yet): swift build -c release\n"
        let code =
            (try? JoinCode(
                server: url, token: joinSecret.secret, caFingerprint: fingerprint,
                encrypted: joinSecret.accountEncrypted
            ).description) ?? "?"
        print(
            """
            brsyncd dev is serving \(url)
              CA file:  \(caFile)
              account:  dev, device: laptop
              token:    in \(folder)/laptop.token
              store:    \(folder)/brsyncd.sqlite
            Try:  curl --cacert \(caFile) \(url)/v1/health
            \(build)Point a replica at it (as device 'laptop'; the token is read from its file, never typed on a command line):
              \(brsync) remote set \(url) --ca \(caFile) --token-file \(folder)/laptop.token
            or join another machine in one step (as device '\(joining)'; the CA pinned by its fingerprint, no file
            to copy). The code works once, within a day; every start prints the same one until it is used or expires:
              echo '\(code)' | \(brsync) join
            Manage it with brsyncd's commands on its store, e.g.:
              \(ProcessEnvironment.executablePath()) device list dev --db \(folder)/brsyncd.sqlite
            Stop with Ctrl-C.
            """)
    }

    /// The first device's token, kept in the dev folder (owner-only, like
    /// the TLS key) so a replica paired with it keeps working across
    /// restarts; issued when there is none or it no longer authenticates.
    static func laptopToken(store: SyncStore, folder: String) throws -> String {
        let file = "\(folder)/laptop.token"
        if let kept = try? String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines),
            (try? store.authenticate(token: kept)) != nil
        {
            return kept
        }
        let exists = try store.devices(account: "dev").contains { $0.name == "laptop" }
        let token =
            exists
            ? try store.reissueToken(account: "dev", device: "laptop")
            : try store.addDevice(account: "dev", name: "laptop")
        do throws(SecretFile.Failure) {
            try SecretFile.write(Array(token.utf8), to: file, what: "the dev token")
        } catch {
            throw CLIFailure(message: error.message)
        }
        return token
    }

    /// A join code for a machine not paired yet: the device the previous
    /// start enrolled when its code was not used (its token is still that
    /// code's secret, kept in the dev folder), else a new `machine-N`. A code
    /// never replaces the token of a machine that joined.
    static func joinSecret(store: SyncStore, folder: String) throws -> (device: String, enrollment: Store.JoinSecret) {
        let file = "\(folder)/join.pending"
        let valid = JoinOptions.defaultValidMilliseconds
        let pending = (try? String(contentsOfFile: file, encoding: .utf8))?.split(separator: " ").map(String.init)
        var reissue: String?
        if let pending, pending.count == 2 {
            let secret = pending[1].trimmingCharacters(in: .whitespacesAndNewlines)
            do {
                // The previous start's code still works (unused, unexpired): the same one, so a code printed before keeps working.
                let device = try store.authenticate(token: secret)
                if device.name == pending[0] {
                    return (pending[0], Store.JoinSecret(secret: secret, accountEncrypted: device.accountEncrypted))
                }
            } catch ServerError.unauthorized(let reason) where reason.contains("expired") {
                // It expired unused: the same device gets a new code (no machine-N left behind that never joined).
                reissue = pending[0]
            } catch {
                // Used (that machine joined), or replaced: a new device for the next machine.
            }
        }
        let name: String
        let adding: Bool
        if let reissue {
            (name, adding) = (reissue, false)
        } else {
            let names = Set(try store.devices(account: "dev").map(\.name))
            (name, adding) = ((2...).lazy.map { "machine-\($0)" }.first { !names.contains($0) }!, true)
        }
        let enrollment = try store.enroll(account: "dev", device: name, adding: adding, validMilliseconds: valid)
        do throws(SecretFile.Failure) {
            try SecretFile.write(Array("\(name) \(enrollment.secret)".utf8), to: file, what: "the pending join code")
        } catch {
            throw CLIFailure(message: error.message)
        }
        return (name, enrollment)
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
        do { try DurableFile.write(text, to: path, mode: mode) } catch { throw CLIFailure(message: error.description) }
    }
}
