import Foundation
import SystemServices

/// A program started in the background (a server), whose output is collected
/// as it comes, so a test can wait for a line and then talk to it.
public final class BackgroundProcess: @unchecked Sendable {
    // @unchecked: `output` and `ended` are guarded by `lock`; the child is
    // only waited for by the test that owns this value.
    public let child: ChildProcess
    private let lock = NSLock()
    private var output = ""
    /// The pipe reached its end: everything the process printed is in `output`.
    private var ended = false

    /// Starts `executable`; stdout and stderr are merged into ``text``.
    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        child = try ChildProcess(
            [executable] + arguments, environment: ProcessRunner.environment(environment), output: .pipe,
            errors: .sameAsOutput)
        guard let descriptor = child.output else { throw BackgroundProcessError(message: "no output pipe") }
        // The reader owns a copy of the pipe's end, so it reads to the end
        // whatever happens to this value.
        let reading = dup(descriptor)
        child.closeOutputs()
        Thread.detachNewThread { [weak self] in
            var buffer = [UInt8](repeating: 0, count: 16384)
            while true {
                let count = read(reading, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                guard let self else { break }
                guard count > 0 else {
                    self.lock.withLock { self.ended = true }
                    break
                }
                let text = String(decoding: buffer[0..<count], as: UTF8.self)
                self.lock.withLock { self.output += text }
            }
            close(reading)
        }
    }

    deinit {
        child.stop(signal: SIGKILL, timeoutMilliseconds: 5_000)
    }

    public var pid: pid_t { child.pid }
    public var isRunning: Bool { child.isRunning }

    /// Sends `signal` without waiting.
    public func signal(_ signal: Int32) { child.signal(signal) }

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
        func found(in current: String) -> String? {
            guard let match = expression.firstMatch(in: current, range: NSRange(current.startIndex..., in: current))
            else { return nil }
            let range = match.numberOfRanges > 1 ? match.range(at: 1) : match.range
            return Range(range, in: current).map { String(current[$0]) }
        }
        while Date() < deadline {
            if let found = found(in: text) { return found }
            if let ended = child.poll() {
                // What it printed just before it exited may not have been read yet.
                let all = drained()
                if let found = found(in: all) { return found }
                throw BackgroundProcessError(
                    message: "the process exited (\(ended.code)) before printing /\(pattern)/:\n\(all)")
            }
            usleep(20_000)
        }
        throw BackgroundProcessError(message: "no /\(pattern)/ within \(timeout) s:\n\(text)")
    }

    /// Waits (at most `timeout` seconds) for the process to exit by itself;
    /// its exit status (128 plus a signal), or nil when it is still running.
    public func wait(timeout: TimeInterval = 30) -> Int32? {
        guard let ended = child.wait(timeoutMilliseconds: Int64(timeout * 1000)) else { return nil }
        _ = drained()
        return ended.code
    }

    /// Sends `signal` and waits (at most `timeout` seconds) for the exit
    /// status; nil when it had to be killed.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM, timeout: TimeInterval = 30) -> Int32? {
        let (ended, killed) = child.stop(signal: signal, timeoutMilliseconds: Int64(timeout * 1000))
        return killed ? nil : ended.code
    }

    /// The output once the pipe reached its end (at most 2 s after the exit:
    /// a child of the process may hold it open).
    private func drained() -> String {
        let deadline = Date().addingTimeInterval(2)
        while Date() < deadline, !(lock.withLock { ended }) { usleep(5_000) }
        return text
    }
}

public struct BackgroundProcessError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
