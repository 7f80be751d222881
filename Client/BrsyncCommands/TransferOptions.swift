import ArgumentParser

/// Options of push, pull and sync (run by `brsync-sync`; `brsync` declares
/// them too, for its help and manual).
public struct TransferOptions: ParsableArguments {
    public init() {}
    @Flag(help: "No progress output.") public var quiet = false
    @Flag(help: "Print a JSON summary.") public var json = false
    @Flag(
        help:
            "When syncing stops until you act (exit 5: a key to add, a reset, an alarm), also say so in a desktop notification, once per stop (the sync timer's service uses it)."
    )
    public var notify = false
}

/// `push`, `pull` and `sync` as `brsync --help` and the helper that runs them describe them.
public enum TransferConfigurations {
    public static let push = CommandConfiguration(
        commandName: "push", abstract: "Send this machine's unpushed changes to the server.")
    public static let pull = CommandConfiguration(
        commandName: "pull", abstract: "Fetch and apply every change from the server.")
    public static let sync = CommandConfiguration(
        commandName: "sync", abstract: "Push, then pull until nothing is left.")
}
