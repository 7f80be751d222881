import Foundation
import Storage
import TestSupport

/// The real `brsync` binary run in a temporary home.
final class CLIHarness: Sendable {
    let directory: TemporaryDirectory
    let binary = ProcessRunner.binary("brsync")

    init() throws {
        directory = try TemporaryDirectory(prefix: "brsync-cli")
    }

    deinit { directory.remove() }

    var home: String { directory.path + "/home" }
    var replicaFile: String { home + "/replica.sqlite" }

    @discardableResult
    func run(_ arguments: String..., environment: [String: String] = [:], stdin: String? = nil) throws -> ProcessResult
    {
        try run(arguments, environment: environment, stdin: stdin)
    }

    /// Runs `brsync` (or `program`) with the home in `BRSYNC_HOME` unless `environment` sets it.
    func run(
        _ arguments: [String], environment: [String: String] = [:], stdin: String? = nil, program: String? = nil
    ) throws -> ProcessResult {
        var env = environment
        env["BRSYNC_HOME"] = env["BRSYNC_HOME"] ?? home
        return try ProcessRunner.run(program ?? binary, arguments, environment: env, stdin: stdin)
    }

    /// A replica with firefox and chrome usable, firefox the default, and a rule.
    func standardSetup() throws {
        try mustSucceed("init", "--device-name", "cli-test")
        try mustSucceed("browsers", "add", "firefox", "--exec", "firefox %u")
        try mustSucceed("browsers", "add", "chrome", "--exec", "google-chrome %u")
        try mustSucceed("rules", "add", "github.com", "chrome")
    }

    func mustSucceed(_ arguments: String...) throws {
        let result = try run(arguments)
        guard result.status == 0 else { throw HarnessFailure(result: result, arguments: arguments) }
    }

    /// The replica's bytes and change count, to prove a failed command changed nothing.
    func snapshot() throws -> Snapshot {
        let database = try Database(path: replicaFile, mode: .readOnly)
        let changes = try database.scalar("SELECT COUNT(*) FROM changes")?.intValue ?? -1
        let records = try database.query("SELECT collection, key, fields FROM records ORDER BY 1, 2") {
            "\($0.string(0) ?? "")|\($0.string(1) ?? "")|\($0.string(2) ?? "")"
        }
        let local = try database.query("SELECT id, exec FROM local_browsers ORDER BY 1") {
            "\($0.string(0) ?? "")|\($0.string(1) ?? "")"
        }
        return Snapshot(changes: changes, records: records, local: local)
    }

    struct Snapshot: Equatable {
        let changes: Int
        let records: [String]
        let local: [String]
    }

    struct HarnessFailure: Error, CustomStringConvertible {
        let result: ProcessResult
        let arguments: [String]
        var description: String { "brsync \(arguments.joined(separator: " ")) failed: \(result)" }
    }
}
