import Foundation

/// A program started in the background (a server), whose output is collected
/// as it comes, so a test can wait for a line and then talk to it.
public final class BackgroundProcess: @unchecked Sendable {
    // @unchecked: `output` is guarded by `lock`; the process object is only
    // touched by the test that owns this value.
    public let process = Process()
    private let lock = NSLock()
    private var output = ""
    /// The pipe reached its end: everything the process printed is in `output`.
    private var ended = false

    /// Starts `executable`; stdout and stderr are merged into ``text``.
    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BRSYNC") }
        env.merge(environment) { $1 }
        process.environment = env
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self else { return }
            self.lock.lock()
            defer { self.lock.unlock() }
            guard !data.isEmpty else {
                self.ended = true
                handle.readabilityHandler = nil
                return
            }
            self.output += String(decoding: data, as: UTF8.self)
        }
        try process.run()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// Everything printed so far.
    public var text: String {
        lock.lock()
        defer { lock.unlock() }
        return output
    }

    /// Waits (at most `timeout` seconds) until the output matches `pattern`
    /// (a regular expression) and returns its first capture group, or the match.
    public func waitFor(_ pattern: String, timeout: TimeInterval = 30) throws -> String {
        let expression = try NSRegularExpression(pattern: pattern)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let current = text
            if let match = expression.firstMatch(in: current, range: NSRange(current.startIndex..., in: current)) {
                let range = match.numberOfRanges > 1 ? match.range(at: 1) : match.range
                if let swiftRange = Range(range, in: current) { return String(current[swiftRange]) }
            }
            if !process.isRunning {
                throw BackgroundProcessError(message: "the process exited (\(process.terminationStatus)) before printing /\(pattern)/:\n\(current)")
            }
            usleep(20_000)
        }
        throw BackgroundProcessError(message: "no /\(pattern)/ within \(timeout) s:\n\(text)")
    }

    /// Waits (at most `timeout` seconds) for the process to exit by itself;
    /// its exit status, or nil when it is still running.
    public func wait(timeout: TimeInterval = 30) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { return nil }
        // The last output may still be on its way from the pipe (read on
        // another thread): a test reads `text` right after this.
        let drained = Date().addingTimeInterval(2)
        while Date() < drained, !(lock.withLock { ended }) { usleep(5_000) }
        return process.terminationStatus
    }

    /// Sends `signal` and waits (at most `timeout` seconds) for the exit status.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM, timeout: TimeInterval = 30) -> Int32? {
        guard process.isRunning else { return process.terminationStatus }
        kill(process.processIdentifier, signal)
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        return process.terminationStatus
    }
}

public struct BackgroundProcessError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
