import Glibc

/// Runs a program to completion (a menu, a notifier, a test's binary): text
/// on its standard input, its output and errors captured, killed when it
/// overruns its time. Built on ``ChildProcess``.
public enum Subprocess {
    public struct Result: Sendable, Equatable {
        /// The exit status, or nil when it was killed by a signal (or by the timeout).
        public let status: Int32?
        public let output: String
        public let errors: String
        public let timedOut: Bool
        /// How the program ended (a signal's number is kept here).
        public let termination: ChildProcess.Termination
    }

    /// Runs `arguments` (found on `PATH` when the program has no `/`).
    /// `input` is made once the program has started, so its start-up
    /// overlaps with making it.
    /// - Parameters:
    ///   - environment: set in the child's environment, over this process's.
    ///   - outputLimit: most bytes of output kept (the rest is read and dropped).
    ///   - errorsLimit: most bytes of errors kept.
    /// - Returns: nil when the program could not be started.
    public static func run(
        _ arguments: [String], input: @autoclosure () -> String = "", timeoutMilliseconds: Int = 120_000,
        environment extra: [String: String] = [:]
    ) -> Result? {
        try? run(
            arguments, input: input(), timeoutMilliseconds: timeoutMilliseconds,
            environment: ChildProcess.Environment(set: extra))
    }

    /// ``run(_:input:timeoutMilliseconds:environment:)`` with the child's
    /// environment given whole, throwing why a program did not start.
    public static func run(
        _ arguments: [String], input: @autoclosure () -> String = "", timeoutMilliseconds: Int = 120_000,
        environment: ChildProcess.Environment, outputLimit: Int = 1 << 20,
        errorsLimit: Int = 1 << 16
    ) throws(ChildProcess.SpawnError) -> Result {
        let child = try ChildProcess(arguments, environment: environment, input: .pipe, output: .pipe, errors: .pipe)
        // The input is written before reading (a menu's lines, a test's
        // stdin): a child that does not read it gets EPIPE, not a hang
        // (SIGPIPE is ignored, as every binary here does at start).
        signal(SIGPIPE, SIG_IGN)
        let bytes = Array(input().utf8)
        if let descriptor = child.input { writeAll(bytes, to: descriptor) }
        child.closeInput()
        var output: [UInt8] = []
        var errors: [UInt8] = []
        var open = [child.output, child.errors].compactMap { $0 }
        let deadline = Clock.monotonicMillis() + Int64(timeoutMilliseconds)
        var timedOut = false
        var buffer = [UInt8](repeating: 0, count: 16384)
        while !open.isEmpty {
            let left = deadline - Clock.monotonicMillis()
            if left <= 0 { timedOut = true; break }
            var descriptors = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&descriptors, nfds_t(descriptors.count), Int32(min(left, 1_000)))
            if ready < 0 && errno != EINTR { break }
            for descriptor in descriptors where descriptor.revents != 0 {
                let count = read(descriptor.fd, &buffer, buffer.count)
                if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
                if count <= 0 {
                    open.removeAll { $0 == descriptor.fd }
                } else if descriptor.fd == child.output {
                    if output.count < outputLimit { output += buffer[0..<min(count, outputLimit - output.count)] }
                } else if errors.count < errorsLimit {
                    errors += buffer[0..<min(count, errorsLimit - errors.count)]
                }
            }
        }
        if timedOut { child.signal(SIGKILL) }
        let ended = child.wait()
        child.closeOutputs()
        var status: Int32?
        if case .exited(let code) = ended, !timedOut { status = code }
        return Result(
            status: status, output: String(decoding: output, as: UTF8.self),
            errors: String(decoding: errors, as: UTF8.self),
            timedOut: timedOut, termination: ended)
    }

    /// Writes all of `bytes`; stops at the first error (the child closed its end).
    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) {
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return }
            offset += count
        }
    }
}
