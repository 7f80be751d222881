import Glibc

/// Writes `text` to standard error (file descriptor 2) directly: no shared
/// `FILE*` buffer, so threads never race on it and nothing waits in a buffer
/// when the process ends.
public func writeToStandardError(_ text: String) {
    var remaining = Array(text.utf8)[...]
    while !remaining.isEmpty {
        let written = remaining.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        if written < 0 && errno == EINTR { continue }
        if written <= 0 { return }
        remaining = remaining.dropFirst(written)
    }
}

/// A program brsync starts with no arguments of its own (the picker, the
/// settings window): `--help` prints its usage, anything else is refused, and
/// a failure is one line on standard error and an exit status.
public struct HelperProgram: Sendable {
    public let name: String
    public let usage: String

    public init(name: String, usage: String) {
        self.name = name
        self.usage = usage
    }

    /// Ends the process with `message` (its caller made it printable) and `status`.
    public func fail(_ message: String, _ status: Int32) -> Never {
        writeToStandardError("\(name): \(message)\n")
        exit(status)
    }

    /// Prints the usage for `-h`/`--help` and exits 0; refuses any other argument (exit 2).
    public func refuseArguments(_ arguments: [String] = CommandLine.arguments) {
        guard arguments.count > 1 else { return }
        if ["-h", "--help"].contains(arguments[1]) {
            print(usage)
            exit(0)
        }
        fail(usage, 2)
    }
}
