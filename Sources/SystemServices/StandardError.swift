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
