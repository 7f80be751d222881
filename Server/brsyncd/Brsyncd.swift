import ArgumentParser
import BrsyncServer
import Foundation
import Glibc
import Logging
import Postgres
import ServerStore
import SystemServices

struct Brsyncd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "brsyncd",
        abstract: "The brsync sync server: HTTPS, an SQLite (or PostgreSQL) store, accounts and devices.",
        discussion:
            "Every command takes --db PATH (or BRSYNCD_DB), or --store postgres://… (or BRSYNCD_STORE). Exit codes: 0 done, 2 error.",
        version: BrsyncVersion.current,
        subcommands: [Serve.self, Dev.self, AccountCommand.self, DeviceCommand.self, Backup.self, Migrate.self]
    )
}

/// The store every command works on: an SQLite file (`--db PATH`,
/// `BRSYNCD_DB`), or PostgreSQL (`--store postgres://…`, `BRSYNCD_STORE`)
/// for several brsyncd processes behind a load balancer.
struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The SQLite store (default: $BRSYNCD_DB).", valueName: "path"))
    var db: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A PostgreSQL store (default: $BRSYNCD_STORE), or sqlite:PATH. The password comes from $BRSYNCD_STORE_PASSWORD_FILE, "
                + "$BRSYNCD_STORE_PASSWORD or ~/.pgpass, never from the URL (it would show in ps).",
            valueName: "postgres://USER@HOST:PORT/DATABASE"))
    var store: String?

    enum Location {
        case sqlite(String)
        case postgres(String)
    }

    func location() throws -> Location {
        let db = self.db.flatMap { $0.isEmpty ? nil : $0 }
        let store = self.store.flatMap { $0.isEmpty ? nil : $0 }
        if db != nil && store != nil { throw CLIFailure(message: "give --db PATH or --store URL, not both") }
        if let db { return .sqlite(db) }
        // The flags, then BRSYNCD_STORE, then BRSYNCD_DB: a unit that sets
        // BRSYNCD_DB by default is moved to PostgreSQL by BRSYNCD_STORE alone.
        if let store = store ?? ProcessEnvironment.value("BRSYNCD_STORE") {
            if store.hasPrefix("postgres://") || store.hasPrefix("postgresql://") { return .postgres(store) }
            if store.hasPrefix("sqlite:") { return .sqlite(String(store.dropFirst("sqlite:".count))) }
            throw CLIFailure(
                message: "the store '\(store)' is neither postgres://USER@HOST:PORT/DATABASE nor sqlite:PATH")
        }
        if let path = ProcessEnvironment.value("BRSYNCD_DB") { return .sqlite(path) }
        throw CLIFailure(
            message: "no store given: pass --db PATH or --store postgres://…, or set BRSYNCD_DB or BRSYNCD_STORE")
    }

    func path() throws -> String {
        guard case .sqlite(let path) = try location() else {
            throw CLIFailure(message: "this command works on an SQLite store (--db PATH)")
        }
        return path
    }

    /// - Parameter creating: whether a missing SQLite file is made (the
    ///   first `account add`, `serve`); every other command refuses it, so
    ///   a mistyped `--db` never leaves an empty store behind.
    func open(connections: Int = 2, creating: Bool = false) throws -> SyncStore {
        switch try location() {
        case .sqlite(let path):
            if !creating, access(path, F_OK) != 0 {
                throw CLIFailure(
                    message:
                        "there is no store at \(path): check --db (or BRSYNCD_DB); 'brsyncd account add NAME' makes a new one"
                )
            }
            return try SyncStore(sqlite: path, connections: connections)
        case .postgres(let url):
            let configuration = try PostgresConfiguration.fromEnvironment(
                url: url, environment: ProcessEnvironment.all())
            return try SyncStore(postgres: configuration, connections: connections)
        }
    }
}

/// `--log-level`, and logging to stderr through swift-log.
struct LoggingOptions: ParsableArguments {
    @Option(help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    func bootstrap() throws -> Logger {
        guard let level = Logger.Level(rawValue: logLevel) else {
            throw CLIFailure(message: "--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "brsyncd")
    }
}
