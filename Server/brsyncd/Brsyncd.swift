import ArgumentParser
import BrsyncServer
import Glibc
import Logging

struct Brsyncd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "brsyncd",
        abstract: "The brsync sync server: HTTPS, an SQLite store, accounts and devices.",
        discussion: "Every command takes --db PATH (or BRSYNCD_DB). Exit codes: 0 done, 2 error.",
        version: brsyncdVersion,
        subcommands: [Serve.self, Dev.self, AccountCommand.self, DeviceCommand.self, Backup.self]
    )
}

/// The store every command works on.
struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The SQLite store (default: $BRSYNCD_DB).", valueName: "path"))
    var db: String?

    func path() throws -> String {
        if let db, !db.isEmpty { return db }
        if let value = getenv("BRSYNCD_DB"), !String(cString: value).isEmpty { return String(cString: value) }
        throw CommandFailure(message: "no store given: pass --db PATH or set BRSYNCD_DB")
    }

    func open(connections: Int = 2) throws -> ServerStore {
        try ServerStore(path: try path(), connections: connections)
    }
}

/// `--log-level`, and logging to stderr through swift-log.
struct LoggingOptions: ParsableArguments {
    @Option(help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    func bootstrap() throws -> Logger {
        guard let level = Logger.Level(rawValue: logLevel) else {
            throw CommandFailure(message: "--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "brsyncd")
    }
}
