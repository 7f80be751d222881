import Foundation
import SystemServices

/// The result of running a program to its end.
public struct ProcessResult: Sendable, CustomStringConvertible {
    /// The exit status, or 128 plus the signal that ended it.
    public let status: Int32
    public let stdout: String
    public let stderr: String
    public var description: String { "exit \(status)\nstdout: \(stdout)\nstderr: \(stderr)" }
}

/// Runs the real binaries the package builds, through the product's own
/// way of starting a program (``Subprocess`` and ``ChildProcess``).
public enum ProcessRunner {
    /// The folder of built products (`.build/debug`): the test bundle lives there.
    public static var productsDirectory: URL {
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = executable.deletingLastPathComponent()
        // The test runner may live inside `X.xctest/` or be the bundle itself.
        while directory.path != "/"
            && !FileManager.default.fileExists(atPath: directory.appendingPathComponent("brsync").path)
        {
            directory = directory.deletingLastPathComponent()
        }
        return directory
    }

    public static func binary(_ name: String) -> String {
        productsDirectory.appendingPathComponent(name).path
    }

    /// The environment of a program a test starts: this process's without
    /// BRSYNC_* (the host's settings never leak in), with `environment` added.
    /// Nothing a test starts touches the real home: `HOME` and the XDG base
    /// folders a test does not set are a scratch home of this test run's
    /// (``scratchHome``), never the user's.
    public static func environment(
        _ environment: [String: String], unsetting more: [String] = []
    ) -> ChildProcess.Environment {
        var isolated = environment
        let home = environment["HOME"] ?? scratchHome
        isolated["HOME"] = home
        for (name, folder) in [
            ("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"), ("XDG_STATE_HOME", ".local/state"),
            ("XDG_CACHE_HOME", ".cache"),
        ] where isolated[name] == nil && !more.contains(name) {
            isolated[name] = "\(home)/\(folder)"
        }
        return ChildProcess.Environment(set: isolated, unset: ["BRSYNC_*"] + more)
    }

    /// A home of this test run's own, made once (owner-only), for programs
    /// whose test gives them none.
    public static let scratchHome: String = {
        let path = "\(NSTemporaryDirectory())/brsync-test-home-\(getpid())"
        try? FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return path
    }()

    /// Runs `executable` with `arguments` (see ``environment(_:unsetting:)``)
    /// and `stdin` as input; killed after `timeout` seconds.
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], stdin: String? = nil,
        timeout: TimeInterval = 60
    ) throws -> ProcessResult {
        let result = try Subprocess.run(
            [executable] + arguments, input: stdin ?? "", timeoutMilliseconds: Int(timeout * 1000),
            environment: Self.environment(environment), outputLimit: 1 << 28, errorsLimit: 1 << 28)
        return ProcessResult(status: result.termination.code, stdout: result.output, stderr: result.errors)
    }
}
