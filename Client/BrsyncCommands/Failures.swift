import ArgumentParser
import Model
import Plumbing
import Replica

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

/// A hint after ArgumentParser's own message for a mistyped command line:
/// the command meant (`brsync rule list` → `rules`), or how to give a
/// negative number (`--priority=-5`).
public enum UsageHints {
    public static func failure(for error: any Error, root: any ParsableCommand.Type, arguments: [String]) -> CLIFailure? {
        guard root.exitCode(for: error) != .success else { return nil }
        let text = root.fullMessage(for: error)
        guard let hint = hint(text, root: root, arguments: arguments) else { return nil }
        let message = text.hasPrefix("Error: ") ? String(text.dropFirst("Error: ".count)) : text
        return CLIFailure(message: message + "\n" + hint)
    }

    static func hint(_ text: String, root: any ParsableCommand.Type, arguments: [String]) -> String? {
        if text.contains("nexpected argument") {
            // Down the command groups named, to the first word that is none of the current group's.
            var group = root
            var path: [String] = []
            for word in arguments where !word.hasPrefix("-") {
                let subcommands = group.configuration.subcommands
                guard !subcommands.isEmpty else { return nil }
                if let next = subcommands.first(where: { $0.configuration.commandName == word }) {
                    group = next
                    path.append(word)
                    continue
                }
                let names = subcommands.compactMap { $0.configuration.commandName }
                let close = Suggestions.closeMatches(to: word, in: names, limit: 1)
                guard !close.isEmpty else { return nil }
                let program = root.configuration.commandName ?? "brsync"
                return "did you mean " + close.map { "'\(([program] + path + [$0]).joined(separator: " "))'" }.joined(separator: " or ") + "?"
            }
        }
        if text.contains("Missing value for '--") {
            for (index, argument) in arguments.enumerated().dropLast() where argument.hasPrefix("--") && text.contains("'\(argument) ") {
                let value = arguments[index + 1]
                if value.hasPrefix("-"), Double(value) != nil { return "a negative number is given as \(argument)=\(value)" }
            }
        }
        return nil
    }
}
