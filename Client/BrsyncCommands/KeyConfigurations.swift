import ArgumentParser

/// The `brsync key` commands as help shows them: run by `brsync-sync`
/// (they need OpenSSL), declared by `brsync` too for its help, manual and
/// completions. One definition for both.
public enum KeyConfigurations {
    public static func group(_ subcommands: [any ParsableCommand.Type]) -> CommandConfiguration {
        CommandConfiguration(
            commandName: "key",
            abstract: "End-to-end encryption: make the account key, add it to this machine, show its recovery code.",
            subcommands: subcommands)
    }

    public static let initialise = CommandConfiguration(
        commandName: "init",
        abstract: "Encrypt the account end to end: make its key here, show the recovery code once, and sync sealed.")
    public static let add = CommandConfiguration(
        commandName: "add",
        abstract: "Add the account's recovery code to this machine (from standard input or --file), then sync.")
    public static let show = CommandConfiguration(
        commandName: "show",
        abstract: "Print the recovery code of this machine's account key (for another machine to join).")
    public static let fileHelp: ArgumentHelp = "Read the recovery code from this file."
}
