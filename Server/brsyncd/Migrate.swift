import ArgumentParser
import BrsyncServer
import Foundation
import Postgres
import ServerStore
import SystemServices

/// `brsyncd migrate --from sqlite:PATH --to postgres://…`
struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Copy an SQLite store into an empty PostgreSQL store.",
        discussion: """
            Stop the server on the SQLite store first: what it accepts after the copy is not in the copy. Accounts, devices \
            (their token hashes: tokens stay valid), records, change numbers and the epoch are kept, so clients go on from \
            where they were. The target must hold no account; the counts are checked after the copy, which is one \
            transaction (all or nothing). The password: BRSYNCD_STORE_PASSWORD_FILE, BRSYNCD_STORE_PASSWORD or ~/.pgpass.
            """)

    @Option(help: ArgumentHelp("The SQLite store to copy.", valueName: "sqlite:PATH")) var from: String
    @Option(help: ArgumentHelp("The PostgreSQL store to fill.", valueName: "postgres://USER@HOST:PORT/DATABASE"))
    var to: String

    func run() throws {
        guard from.hasPrefix("sqlite:") else {
            throw CLIFailure(message: "--from must be sqlite:PATH (the SQLite store to copy)")
        }
        let path = String(from.dropFirst("sqlite:".count))
        guard FileManager.default.fileExists(atPath: path) else {
            throw CLIFailure(message: "--from: \(path) does not exist")
        }
        guard to.hasPrefix("postgres://") || to.hasPrefix("postgresql://") else {
            throw CLIFailure(message: "--to must be postgres://USER@HOST:PORT/DATABASE")
        }
        let source = try SyncStore(sqlite: path, connections: 1)
        defer { source.close() }
        let target = try SyncStore(
            postgres: try PostgresConfiguration.fromEnvironment(url: to, environment: ProcessEnvironment.all()),
            connections: 1)
        defer { target.close() }
        let counts = try StoreMigration.copy(from: source, to: target)
        print("copied \(counts) from \(path) to \(to) (epoch \(target.epoch)); the counts match")
    }
}
