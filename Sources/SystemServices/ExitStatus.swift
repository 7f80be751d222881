import JSON

/// The exit codes of `brsync`, `brsync-sync` and `brsyncd`; the one funnel
/// every failure of theirs goes through, `ExitStatus.report`, is in
/// ProgramExit (it needs the argument parser, which nothing else here does).
///
/// | code | meaning |
/// |---|---|
/// | 0 | done |
/// | 1 | `rules test`: no match; `doctor`: something is wrong; `open`/`pick`: the person cancelled the picker |
/// | 2 | any error: bad input, unknown name, unusable replica or store (nothing changed) |
/// | 3 | `resolve`: nothing decided, a picker would have to ask; `open`/`pick`: a picker had to ask and none could |
/// | 4 | the server could not be reached or verified (replica unchanged) |
/// | 5 | the server refused (auth, revoked, a change it will not take), or the sync stopped on what it answered (another account's key, acknowledgements of changes this machine did not make); the pull still ran |
/// | 6 | the server's answer could not be used (not brsync's protocol) |
public enum ExitStatus {
    public static let noMatch: Int32 = 1
    /// `open`/`pick`: the person closed the picker without choosing (not an error).
    public static let cancelled: Int32 = 1
    public static let error: Int32 = 2
    public static let pickerNeeded: Int32 = 3
    public static let unreachable: Int32 = 4
    public static let refused: Int32 = 5
    public static let badAnswer: Int32 = 6

    /// Every code, for the commands' help (`--help`).
    public static let help = """
        Exit codes: 0 done; 1 'rules test' found no match, 'doctor' found a problem, or the picker was cancelled; 2 error (nothing \
        changed); 3 'resolve' decided nothing (a picker would have to ask), or no picker could ask; 4 the server could not be reached or verified (the replica \
        is unchanged and usable offline); 5 the server refused, or the sync stopped on its answer ('sync stopped'); 6 the server's answer is not brsync's protocol.
        """

    /// What an exit code means, as a word for JSON.
    public static func name(of code: Int32) -> String {
        switch code {
        case noMatch: return "no_match"
        case pickerNeeded: return "picker_needed"
        case unreachable: return "unreachable"
        case refused: return "refused"
        case badAnswer: return "bad_answer"
        default: return "error"
        }
    }

    public static func printError(_ message: String) {
        writeToStandardError("brsync: error: \(DisplayText.printableLines(message))\n")
    }

    public static func warn(_ message: String) {
        writeToStandardError("brsync: warning: \(DisplayText.printableLines(message))\n")
    }
}

/// A failure reported with its own message and exit code.
public struct CLIFailure: Error, CustomStringConvertible {
    public let message: String
    public var code: Int32 = ExitStatus.error
    /// Not an error, but how the command ended (the person cancelled):
    /// said without "error:", still with its exit status.
    public var isOutcome = false

    public init(message: String, code: Int32 = ExitStatus.error, isOutcome: Bool = false) {
        self.message = message
        self.code = code
        self.isOutcome = isOutcome
    }

    public var description: String { message }
}
