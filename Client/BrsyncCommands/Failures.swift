import ArgumentParser
import Model
import Replica
import SystemServices

/// What `brsync` and `brsync-sync` report of the errors of Model and the
/// replica; ``ExitStatus/report(_:root:describe:)`` is the funnel.
public enum Failures {
    /// The message and code of an error of Model or the replica, or nil.
    public static func describe(_ error: any Error) -> CLIFailure? {
        switch error {
        case let replica as ReplicaError: return CLIFailure(message: replica.description)
        case let pattern as PatternProblem: return CLIFailure(message: pattern.description)
        case let url as URLProblem: return CLIFailure(message: url.description)
        case let psl as PublicSuffixListProblem: return CLIFailure(message: psl.description)
        default: return nil
        }
    }

    /// The message ``ExitStatus/report(_:root:describe:)`` would print for
    /// `error` (for a notification).
    public static func message(of error: any Error) -> String {
        if let failure = error as? CLIFailure { return failure.message }
        return describe(error)?.message ?? "\(error)"
    }
}

/// A mistyped command line: the command meant, with that command's usage
/// (`brsync rule add …` → `brsync rules add`), or a hint after
/// ArgumentParser's own message (`--priority=-5` for a negative number).
public enum UsageHints {
    public static func failure(for error: any Error, root: any ParsableCommand.Type, arguments: [String]) -> CLIFailure?
    {
        guard root.exitCode(for: error) != .success else { return nil }
        let text = root.fullMessage(for: error)
        if text.contains("nexpected argument"), let meant = meantCommand(root: root, arguments: arguments) {
            // The usage shown is the meant command's, not that of the group's default (`rules ad` is not `rules list`).
            let program = root.configuration.commandName ?? "brsync"
            let name = ([program] + meant.path).joined(separator: " ")
            let usage = String(
                String(root.usageString(for: meant.command).drop { $0.isWhitespace }.reversed()).drop {
                    $0.isWhitespace
                }.reversed())
            return CLIFailure(
                message:
                    "'\(meant.typed)' is not a command of '\(([program] + meant.group).joined(separator: " "))': did you mean '\(name)'?\n"
                    + "Usage: \(usage.hasPrefix("Usage: ") ? String(usage.dropFirst("Usage: ".count)) : usage)\n"
                    + "  See '\(name) --help' for more information.")
        }
        guard let hint = hint(text, arguments: arguments) else { return nil }
        let message = text.hasPrefix("Error: ") ? String(text.dropFirst("Error: ".count)) : text
        return CLIFailure(message: message + "\n" + hint)
    }

    /// The command meant by a line with one mistyped command word: down the
    /// command groups named, a word that is none of the current group's is
    /// taken as its closest subcommand (once), and the words after it go on
    /// down from there. Nil when no word was mistyped, or none is close.
    static func meantCommand(
        root: any ParsableCommand.Type, arguments: [String]
    )
        -> (command: any ParsableCommand.Type, path: [String], group: [String], typed: String)?
    {
        var command = root
        var path: [String] = []
        var corrected: (group: [String], typed: String)?
        for word in arguments where !word.hasPrefix("-") {
            let subcommands = command.configuration.subcommands
            guard !subcommands.isEmpty else { break }
            if let next = subcommands.first(where: { $0.configuration.commandName == word }) {
                command = next
                path.append(word)
                continue
            }
            guard corrected == nil else { break }
            let names = subcommands.compactMap { $0.configuration.commandName }
            guard let close = Suggestions.closeMatches(to: word, in: names, limit: 1).first,
                let next = subcommands.first(where: { $0.configuration.commandName == close })
            else { break }
            corrected = (path, word)
            command = next
            path.append(close)
        }
        guard let corrected else { return nil }
        return (command, path, corrected.group, corrected.typed)
    }

    static func hint(_ text: String, arguments: [String]) -> String? {
        if text.contains("Missing value for '--") {
            for (index, argument) in arguments.enumerated().dropLast()
            where argument.hasPrefix("--") && text.contains("'\(argument) ") {
                let value = arguments[index + 1]
                if value.hasPrefix("-"), Double(value) != nil {
                    return "a negative number is given as \(argument)=\(value)"
                }
            }
        }
        return nil
    }
}
