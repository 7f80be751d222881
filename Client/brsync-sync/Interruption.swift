import Glibc

/// Ctrl-C during a transfer: every page pulled and every batch the server
/// acknowledged is kept (each commits on its own), so the helper says so on
/// a clean line (a progress line may be drawn) rather than leave the screen
/// as it was, and exits as interrupted (130).
enum Interruption {
    /// Made before the handler is set: the handler only writes it and exits.
    static let line: [UInt8] = Array(
        ((isatty(2) == 1 ? "\r\u{1B}[2K" : "")
            + "brsync: interrupted; nothing is lost: the next sync goes on from where this one stopped\n").utf8)

    static func sayWhatIsKept() {
        _ = line.count
        signal(SIGINT) { _ in
            Interruption.line.withUnsafeBufferPointer { _ = write(2, $0.baseAddress, $0.count) }
            _exit(128 + SIGINT)
        }
    }
}
