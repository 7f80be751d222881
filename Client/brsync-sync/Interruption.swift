import Glibc
import ProgramExit
import SystemServices

/// Ctrl-C (or `kill`, systemd stopping the timer's sync: SIGTERM) during a
/// transfer: every page pulled and every batch the server acknowledged is
/// kept (each commits on its own), so the helper says so on a clean line (a
/// progress line may be drawn) rather than leave the screen as it was, and
/// exits as interrupted (128 + the signal: 130, 143).
enum Interruption {
    /// Made before the handlers are set: a handler only writes them and
    /// exits. A run that asked for JSON gets its one document on standard
    /// output too, as for any other failure.
    static let interrupted = said("interrupted", SIGINT)
    static let stopped = said("stopped", SIGTERM)

    private static func said(_ what: String, _ number: Int32) -> (line: [UInt8], json: [UInt8]) {
        let message = "\(what); nothing is lost: the next sync goes on from where this one stopped"
        let json =
            ExitStatus.wantsJSON ? #"{"error":"\#(what)","exit":\#(128 + number),"message":"\#(message)"}"# + "\n" : ""
        return (Array(((isatty(2) == 1 ? "\r\u{1B}[2K" : "") + "brsync: \(message)\n").utf8), Array(json.utf8))
    }

    static func sayWhatIsKept() {
        _ = interrupted.line.count + stopped.line.count
        for number in [SIGINT, SIGTERM] {
            signal(number) { number in
                let said = number == SIGTERM ? Interruption.stopped : Interruption.interrupted
                said.line.withUnsafeBufferPointer { _ = write(2, $0.baseAddress, $0.count) }
                said.json.withUnsafeBufferPointer { _ = write(1, $0.baseAddress, $0.count) }
                _exit(128 + number)
            }
        }
    }
}
