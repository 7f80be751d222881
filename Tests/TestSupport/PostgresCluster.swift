import Foundation
import Glibc
import SystemServices

/// A throw-away PostgreSQL cluster for the tests: `initdb` in a temporary
/// folder, started on a free port of 127.0.0.1 with password (SCRAM)
/// authentication, as the `postgres` user when the tests run as root (the
/// server refuses to run as root), and stopped when the test process ends.
/// One cluster serves the whole test process; each test takes a database of
/// its own (``createDatabase()``).
public final class PostgresCluster: Sendable {
    public let port: Int
    public let user = "brsync"
    public let password: String
    /// A file holding the password, readable by its owner only (for
    /// `BRSYNCD_STORE_PASSWORD_FILE`).
    public let passwordFile: String
    let folder: String
    /// The cluster's files (its tables and write-ahead log), for tests that
    /// search the raw bytes a server keeps.
    public var dataDirectory: String { folder + "/data" }
    let binaries: String
    let runAs: String?

    /// The cluster of this test process, started on first use.
    /// - Throws: ``PostgresClusterError`` when PostgreSQL is not installed
    ///   (`apt-get install -y postgresql`) or does not start.
    public static func shared() throws -> PostgresCluster {
        try sharedCluster.get()
    }

    private static let sharedCluster: Result<PostgresCluster, PostgresClusterError> = {
        do {
            let cluster = try PostgresCluster()
            stopAtExit = cluster
            atexit { PostgresCluster.stopAtExit?.stop() }
            return .success(cluster)
        } catch let error as PostgresClusterError {
            return .failure(error)
        } catch {
            return .failure(PostgresClusterError(message: "\(error)"))
        }
    }()

    nonisolated(unsafe) private static var stopAtExit: PostgresCluster?

    init() throws {
        guard let binaries = Self.findBinaries() else {
            throw PostgresClusterError(
                message:
                    "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): apt-get install -y postgresql")
        }
        self.binaries = binaries
        runAs = getuid() == 0 ? "postgres" : nil
        var template = Array("/tmp/brsync-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw PostgresClusterError(message: "mkdtemp failed") }
        folder = String(cString: made)
        password = "pw-" + UUID().uuidString
        passwordFile = folder + "/client-password"
        port = try Self.freePort()
        let data = folder + "/data"
        let serverPassword = folder + "/server-password"
        try Data(password.utf8).write(to: URL(fileURLWithPath: serverPassword))
        try Data((password + "\n").utf8).write(to: URL(fileURLWithPath: passwordFile))
        chmod(passwordFile, 0o600)
        if let runAs {
            guard let account = getpwnam(runAs) else {
                throw PostgresClusterError(
                    message:
                        "the tests run as root and there is no '\(runAs)' user to run PostgreSQL as (Debian's postgresql package makes one)"
                )
            }
            chown(folder, account.pointee.pw_uid, account.pointee.pw_gid)
            chown(serverPassword, account.pointee.pw_uid, account.pointee.pw_gid)
            chmod(folder, 0o700)
        }
        try run(
            "initdb",
            [
                "-D", data, "-U", user, "--pwfile", serverPassword, "-A", "scram-sha-256", "-E", "UTF8", "--locale",
                "C", "--no-sync",
            ])
        let options =
            "-p \(port) -c listen_addresses=127.0.0.1 -k \(folder) -c fsync=off -c full_page_writes=off -c max_connections=200"
        try run("pg_ctl", ["-D", data, "-l", folder + "/server.log", "-w", "-t", "60", "-o", options, "start"])
    }

    /// A new, empty database and its URL (without the password).
    public func createDatabase() throws -> String {
        let name = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try psql("CREATE DATABASE \(name)")
        return url(database: name)
    }

    public func url(database: String = "postgres") -> String {
        "postgres://\(user)@127.0.0.1:\(port)/\(database)"
    }

    /// Runs SQL with `psql` (as the cluster's superuser).
    public func psql(_ sql: String, database: String = "postgres") throws {
        let result = try execute(
            binaries + "/psql",
            [
                "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", String(port), "-U", user, "-d", database,
                "-c", sql,
            ],
            environment: ["PGPASSWORD": password], asServerUser: false)
        guard result.status == 0 else { throw PostgresClusterError(message: "psql failed: \(result.output)") }
    }

    /// Dumps a database with `pg_dump` (custom format; online, one snapshot).
    public func dump(database: String, to file: String) throws {
        let result = try execute(
            binaries + "/pg_dump", ["-h", "127.0.0.1", "-p", String(port), "-U", user, "-Fc", "-f", file, database],
            environment: ["PGPASSWORD": password], asServerUser: false)
        guard result.status == 0 else { throw PostgresClusterError(message: "pg_dump failed: \(result.output)") }
    }

    /// A database as plain SQL (`pg_dump`, rows as `INSERT`s, no owners or grants).
    public func dumpSQL(database: String) throws -> String {
        let file = NSTemporaryDirectory() + "brsync-pg-dump-\(UUID().uuidString).sql"
        defer { unlink(file) }
        let result = try execute(
            binaries + "/pg_dump",
            [
                "-h", "127.0.0.1", "-p", String(port), "-U", user, "--inserts", "--no-owner", "--no-privileges",
                "-f", file, database,
            ],
            environment: ["PGPASSWORD": password], asServerUser: false)
        guard result.status == 0 else { throw PostgresClusterError(message: "pg_dump failed: \(result.output)") }
        return try String(contentsOfFile: file, encoding: .utf8)
    }

    /// Restores a `pg_dump` file into a new database of that name.
    public func restore(_ file: String, into database: String) throws {
        try psql("CREATE DATABASE \(database)")
        let result = try execute(
            binaries + "/pg_restore",
            ["-h", "127.0.0.1", "-p", String(port), "-U", user, "--exit-on-error", "-d", database, file],
            environment: ["PGPASSWORD": password], asServerUser: false)
        guard result.status == 0 else { throw PostgresClusterError(message: "pg_restore failed: \(result.output)") }
    }

    /// The database named in a URL made by ``createDatabase()``.
    public static func databaseName(_ url: String) -> String { String(url.split(separator: "/").last ?? "") }

    /// Stops the server (immediate: it is thrown away) and removes its files.
    public func stop() {
        _ = try? run("pg_ctl", ["-D", folder + "/data", "-m", "immediate", "-w", "-t", "30", "stop"])
        try? FileManager.default.removeItem(atPath: folder)
    }

    private func run(_ tool: String, _ arguments: [String]) throws {
        let result = try execute(binaries + "/" + tool, arguments, environment: [:], asServerUser: true)
        guard result.status == 0 else {
            let log = (try? String(contentsOfFile: folder + "/server.log", encoding: .utf8)) ?? ""
            throw PostgresClusterError(message: "\(tool) failed (\(result.status)): \(result.output)\n\(log)")
        }
    }

    private func execute(
        _ path: String, _ arguments: [String], environment: [String: String], asServerUser: Bool
    ) throws -> (status: Int32, output: String) {
        var argv = [path] + arguments
        if asServerUser, let runAs { argv = ["/usr/sbin/runuser", "-u", runAs, "--"] + argv }
        // In "/": the server's user may not enter the tests' folder.
        argv = ["/usr/bin/env", "-C", "/"] + argv
        // Output to a file, not a pipe: the server that `pg_ctl start`
        // leaves running could hold a pipe open.
        let outputPath = NSTemporaryDirectory() + "brsync-pg-output-\(UUID().uuidString)"
        defer { unlink(outputPath) }
        let child: ChildProcess
        do {
            child = try ChildProcess(
                argv,
                environment: ChildProcess.Environment(set: environment.merging(["LC_ALL": "C"]) { _, new in new }),
                output: .file(outputPath), errors: .sameAsOutput)
        } catch {
            throw PostgresClusterError(message: "\(error)")
        }
        let exitStatus = child.wait().code
        let data = FileManager.default.contents(atPath: outputPath) ?? Data()
        return (exitStatus, String(decoding: data, as: UTF8.self))
    }

    static func findBinaries() -> String? {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init)
            .sorted()
        for version in versions.reversed()
        where FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/initdb") {
            return "\(root)/\(version)/bin"
        }
        return nil
    }

    static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw PostgresClusterError(message: "socket failed") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw PostgresClusterError(message: "bind failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

public struct PostgresClusterError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

extension PostgresCluster {
    /// A port of 127.0.0.1 where nothing listens (for a refused connection).
    public static func freePortForTests() throws -> Int { try freePort() }
}
