import BrsyncServer
import Foundation
import Net
import Postgres
import Replica
import ServerStore
import SyncClient
import SystemServices

/// The server of a sync test's world: a real brsyncd in this process (the
/// sync API over TLS on 127.0.0.1, an ephemeral port) over a real store, an
/// SQLite file or a database of the test process's PostgreSQL cluster,
/// which a test stops, copies, restores and starts again as an operator
/// would. The end-to-end tests' `SyncWorld` and the convergence runs both
/// stand on it, and make their clients with ``client(_:token:port:options:settlingKeyChange:)``.
public final class TestServer: @unchecked Sendable {
    // Used by one test thread (and threads it joins).

    /// Where the store is kept.
    public enum Place: Sendable {
        case sqlite(path: String)
        /// A database of the test process's cluster.
        case postgres(cluster: PostgresCluster, database: String)
    }

    /// A copy of the store, to restore later.
    public enum Copy: Sendable {
        /// A copy of the SQLite file (and its WAL), or its online backup.
        case file(String)
        /// `CREATE DATABASE … TEMPLATE` of the stopped server's database.
        case database(String)
        /// A `pg_dump` of the serving database.
        case dump(String)
    }

    public let directory: TemporaryDirectory
    /// The CA certificate clients trust (``TestCertificates``).
    public let caFile: String
    public private(set) var place: Place
    public private(set) var store: SyncStore
    public private(set) var server: SyncServer
    public private(set) var port: UInt16
    /// The server's wall clock (a test skews it).
    let clock: @Sendable () -> Int64
    let configure: (inout ServerConfiguration) -> Void
    /// Copies made so far (each gets a name of its own).
    private var copies = 0

    /// Starts a server on a new store of `kind` in `directory`.
    public init(
        _ kind: StoreKind, in directory: TemporaryDirectory,
        clock: @escaping @Sendable () -> Int64 = { SystemServices.Clock.wallMillis() },
        configure: @escaping (inout ServerConfiguration) -> Void = { _ in }
    ) throws {
        self.directory = directory
        caFile = try TestCertificates(in: directory).caFile
        switch kind {
        case .sqlite: place = .sqlite(path: directory.file("server.sqlite"))
        case .postgres:
            let cluster = try PostgresCluster.shared()
            place = .postgres(cluster: cluster, database: PostgresCluster.databaseName(try cluster.createDatabase()))
        }
        self.clock = clock
        self.configure = configure
        (store, server, port) = try Self.start(place, directory, clock, configure)
    }

    deinit { server.shutdown() }

    private static func start(
        _ place: Place, _ directory: TemporaryDirectory, _ clock: @escaping @Sendable () -> Int64,
        _ configure: (inout ServerConfiguration) -> Void
    ) throws -> (SyncStore, SyncServer, UInt16) {
        let store: SyncStore
        switch place {
        case .sqlite(let path): store = try SyncStore(sqlite: path, clock: clock)
        case .postgres(let cluster, let database):
            store = try SyncStore(
                postgres: try PostgresConfiguration(url: cluster.url(database: database), password: cluster.password),
                clock: clock)
        }
        let (server, port) = try InProcessServer.start(store: store, certificates: directory, configure: configure)
        return (store, server, port)
    }

    /// Stops serving (the store closes with the server).
    public func stop() { server.shutdown() }

    /// Starts serving the store again (on a new port).
    public func start() throws {
        (store, server, port) = try Self.start(place, directory, clock, configure)
    }

    /// A copy of the store as it is now: `online`, made while it serves
    /// (SQLite's online backup, `pg_dump`); otherwise of the stopped
    /// server's file or database, the server started again after.
    public func copy(online: Bool) throws -> Copy {
        copies += 1
        let suffix = "\(copies)-\(UInt32.random(in: 0...UInt32.max))"
        switch (place, online) {
        case (.sqlite, true):
            let copy = directory.file("server-backup-\(suffix).sqlite")
            try store.backup(to: copy)
            return .file(copy)
        case (.postgres(let cluster, let database), true):
            let copy = directory.file("server-backup-\(suffix).dump")
            try cluster.dump(database: database, to: copy)
            return .dump(copy)
        case (.sqlite(let path), false):
            stop()
            let copy = directory.file("server-copy-\(suffix).sqlite")
            let made = Result { try StoreFiles.copy(path, to: copy) }
            try start()
            try made.get()
            return .file(copy)
        case (.postgres(let cluster, let database), false):
            stop()
            let copy = "\(database)_copy\(suffix.replacingOccurrences(of: "-", with: "_"))"
            let made = Result { try cluster.psql("CREATE DATABASE \(copy) TEMPLATE \(database)") }
            try start()
            try made.get()
            return .database(copy)
        }
    }

    /// Puts `copy` back in place of the store and starts the server on it
    /// (its tokens are those of its time: issuing new ones is the test's).
    public func restore(_ copy: Copy) throws {
        stop()
        switch (place, copy) {
        case (.sqlite(let path), .file(let file)): try StoreFiles.putBack(file, over: path)
        case (.postgres(let cluster, let database), .database(let name)):
            try cluster.psql("DROP DATABASE \(database) WITH (FORCE)")
            try cluster.psql("CREATE DATABASE \(database) TEMPLATE \(name)")
        case (.postgres(let cluster, let database), .dump(let file)):
            try cluster.psql("DROP DATABASE \(database) WITH (FORCE)")
            try cluster.restore(file, into: database)
        default:
            try? start()
            throw TestServerError("a copy of another kind of store: \(copy)")
        }
        try start()
    }

    /// What `brsyncd migrate --from sqlite:… --to postgres://…` does, with
    /// the server stopped: the SQLite store copied into a new PostgreSQL
    /// database, then the server started on it.
    public func moveToPostgres() throws {
        guard case .sqlite(let path) = place else { throw TestServerError("the store is on PostgreSQL already") }
        stop()
        let cluster = try PostgresCluster.shared()
        let url = try cluster.createDatabase()
        let source = try SyncStore(sqlite: path)
        let target = try SyncStore(postgres: try PostgresConfiguration(url: url, password: cluster.password))
        defer {
            source.close()
            target.close()
        }
        try StoreMigration.copy(from: source, to: target)
        place = .postgres(cluster: cluster, database: PostgresCluster.databaseName(url))
        try start()
    }

    /// A sync client of `replica` as `brsync` makes one: the account key
    /// and older keys from the home's key files, the server's CA trusted.
    /// - Parameters:
    ///   - port: where to connect (a proxy's port; the server's by default).
    ///   - settlingKeyChange: first settle a key change stopped half way, as
    ///     `brsync sync` does.
    public func client(
        _ replica: Replica, token: String, port: UInt16? = nil, options: SyncClient.Options,
        settlingKeyChange: Bool = false
    ) throws -> SyncClient {
        let remote = try RemoteURL(parsing: "https://127.0.0.1:\(port ?? self.port)")
        if settlingKeyChange {
            try AccountKeyFile.settle(home: replica.home) {
                try SyncClient(replica: replica, remote: remote, token: token, caFile: caFile, options: options)
                    .accountKeyID()
            }
        }
        return try SyncClient(
            replica: replica, remote: remote, token: token, caFile: caFile,
            accountKey: try AccountKeyFile.read(home: replica.home),
            olderKeys: try AccountKeyFile.readOlder(home: replica.home), options: options)
    }
}

/// A test world asked for what it cannot do.
public struct TestServerError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A server store's files (the database and its WAL), handled as an
/// administrator would with the server stopped.
public enum StoreFiles {
    /// Copies the store at `source` to `destination`.
    public static func copy(_ source: String, to destination: String) throws {
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: source + suffix) {
            try FileManager.default.copyItem(atPath: source + suffix, toPath: destination + suffix)
        }
    }

    /// Puts the copy at `source` in place of the store at `destination` (new files).
    public static func putBack(_ source: String, over destination: String) throws {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: destination + suffix) }
        try copy(source, to: destination)
    }
}
