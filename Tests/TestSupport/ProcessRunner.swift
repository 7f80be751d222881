import Foundation

/// The result of running a program to its end.
public struct ProcessResult: Sendable, CustomStringConvertible {
    public let status: Int32
    public let stdout: String
    public let stderr: String
    public var description: String { "exit \(status)\nstdout: \(stdout)\nstderr: \(stderr)" }
}

/// Runs the real binaries the package builds.
public enum ProcessRunner {
    /// The folder of built products (`.build/debug`): the test bundle lives there.
    public static var productsDirectory: URL {
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = executable.deletingLastPathComponent()
        // The test runner may live inside `X.xctest/` or be the bundle itself.
        while directory.path != "/" && !FileManager.default.fileExists(atPath: directory.appendingPathComponent("brsync").path) {
            directory = directory.deletingLastPathComponent()
        }
        return directory
    }

    public static func binary(_ name: String) -> String {
        productsDirectory.appendingPathComponent(name).path
    }

    /// Runs `executable` with `arguments`, `environment` added to this process's
    /// (minus BRSYNC_* so the host's settings never leak in), and `stdin` as input.
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], stdin: String? = nil,
        timeout: TimeInterval = 60
    ) throws -> ProcessResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BRSYNC_") }
        env.merge(environment) { $1 }
        process.environment = env
        let out = Pipe()
        let err = Pipe()
        let input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        if let stdin { try? input.fileHandleForWriting.write(contentsOf: Data(stdin.utf8)) } // the program may exit without reading
        try? input.fileHandleForWriting.close()
        // Read both pipes while the process runs, so a large output cannot block it.
        let outData = LockedData()
        let errData = LockedData()
        let group = DispatchGroup()
        for (pipe, sink) in [(out, outData), (err, errData)] {
            group.enter()
            DispatchQueue.global().async {
                sink.set(pipe.fileHandleForReading.readDataToEndOfFile())
                group.leave()
            }
        }
        if group.wait(timeout: .now() + timeout) == .timedOut {
            process.terminate()
            group.wait()
        }
        process.waitUntilExit()
        return ProcessResult(
            status: process.terminationStatus,
            stdout: String(decoding: outData.get(), as: UTF8.self),
            stderr: String(decoding: errData.get(), as: UTF8.self))
    }
}

/// Bytes written by one thread and read by another; guarded by a lock.
private final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    func set(_ value: Data) { lock.lock(); data = value; lock.unlock() }
    func get() -> Data { lock.lock(); defer { lock.unlock() }; return data }
}
