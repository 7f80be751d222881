import Glibc

/// Ctrl-C (or `kill`, systemd stopping the timer's sync: SIGTERM) during a
/// transfer: every page pulled and every batch the server acknowledged is
/// kept (each commits on its own), so the helper says so on a clean line (a
/// progress line may be drawn) rather than leave the screen as it was, and
/// exits as interrupted (128 + the signal: 130, 143).
enum Interruption {
    /// Made before the handlers are set: a handler only writes one and exits.
    static let interrupted = line("interrupted")
    static let stopped = line("stopped")

    private static func line(_ what: String) -> [UInt8] {
        Array(
            ((isatty(2) == 1 ? "\r\u{1B}[2K" : "")
                + "brsync: \(what); nothing is lost: the next sync goes on from where this one stopped\n").utf8)
    }

    static func sayWhatIsKept() {
        _ = interrupted.count + stopped.count
        for number in [SIGINT, SIGTERM] {
            signal(number) { number in
                (number == SIGTERM ? Interruption.stopped : Interruption.interrupted).withUnsafeBufferPointer {
                    _ = write(2, $0.baseAddress, $0.count)
                }
                _exit(128 + number)
            }
        }
    }
}
