import ArgumentParser
import JSON
import SystemServices

/// The exit funnel of the command-line programs (`brsync`, `brsync-sync`,
/// `brsyncd`): the one module besides the programs that reads the argument
/// parser's errors, so the libraries below them never link it.
extension ExitStatus {
    /// Whether this run asked for JSON (`--json` before any `--`). A failure
    /// is then a JSON object on standard output too, so a script reads one
    /// document whatever happened.
    public static var wantsJSON: Bool {
        CommandLine.arguments.dropFirst().prefix { $0 != "--" }.contains("--json")
    }

    /// The exit code for `error`, after printing `PROGRAM: error: MESSAGE` on
    /// standard error (and, when the run asked for JSON, `{"error": NAME,
    /// "exit": CODE, "message": TEXT}` on standard output).
    /// - Parameters:
    ///   - root: the command whose usage errors and help are being reported;
    ///     its name is the program's.
    ///   - describe: the message and code of the program's own error types
    ///     (nil for any other); a ``CLIFailure`` and `ExitCode` need none.
    public static func report(
        _ error: any Error, root: any ParsableCommand.Type, describe: (any Error) -> CLIFailure? = { _ in nil }
    ) -> Int32 {
        let failure: CLIFailure
        switch error {
        case let exit as ExitCode:
            // The command said what it had to (resolve's "a picker would ask").
            return exit.rawValue
        case let known as CLIFailure:
            failure = known
        default:
            if let described = describe(error) {
                failure = described
            } else {
                let text = root.fullMessage(for: error)
                if root.exitCode(for: error) == .success {
                    // --help and --version.
                    print(text)
                    return 0
                }
                failure = CLIFailure(
                    message: text.hasPrefix("Error: ") ? String(text.dropFirst("Error: ".count)) : text)
            }
        }
        let program = root.configuration.commandName ?? "brsync"
        writeToStandardError(
            "\(program): \(failure.isOutcome ? "" : "error: ")\(DisplayText.printableLines(failure.message))\n")
        if wantsJSON {
            print(
                JSONValue.object([
                    "error": .string(name(of: failure.code)), "exit": .int(Int64(failure.code)),
                    "message": .string(failure.message),
                ]).jsonText)
        }
        return failure.code
    }

}
