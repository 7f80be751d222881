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
        abstract: "Encrypt the account end to end: make its key here, show the recovery code once, and sync sealed.",
        discussion: """
            On a machine that has a key already, after the server's operator reset the account's encryption: encrypt the \
            account again with this machine's key and send its records, sealed (other machines with the key then go on).
            """)
    public static let add = CommandConfiguration(
        commandName: "add",
        abstract: "Add the account's recovery code to this machine (from standard input or --file), then sync.")
    public static let rotate = CommandConfiguration(
        commandName: "rotate",
        abstract:
            "Give the account a new key: everything is sealed again with it; other machines need the new recovery code."
    )
    public static let forget = CommandConfiguration(
        commandName: "forget",
        abstract:
            "Stop syncing with this machine's account key, or let a machine without one sync readable again (after the operator reset the account's encryption).",
        discussion: """
            The key file is set aside (account-key.forgotten, mode 600), not deleted; this machine then syncs readable and sends \
            every record it holds. Refused while the server keeps the account encrypted, unless --force. On a machine without a \
            key that saw its account encrypted (it then sends nothing readable, whatever the server says), it clears that mark once \
            the server says the account is readable again.
            """)
    public static let forceHelp: ArgumentHelp =
        "Forget the key even though the server keeps the account encrypted (this machine then cannot sync it)."
    public static let yesHelp: ArgumentHelp =
        "Change the key even while this machine's checks of other devices' ledgers fail (the change ends them; 'brsync status' keeps them)."
    public static let show = CommandConfiguration(
        commandName: "show",
        abstract: "Print the recovery code of this machine's account key (for another machine to join).")
    public static let fileHelp: ArgumentHelp = "Read the recovery code from this file."
}

/// `brsync join` as help shows it (run by `brsync-sync`, declared by `brsync`).
public enum JoinConfiguration {
    public static let configuration = CommandConfiguration(
        commandName: "join",
        abstract:
            "Join an account in one step: the server from a join code ('brsyncd device add --url … --ca …'), its CA pinned by fingerprint, the recovery code when the account is encrypted, then a sync.",
        discussion: """
            The join code holds a device token: give it on standard input (or type it when asked) rather than as an argument, \
            which other users could see in 'ps' for a moment and the shell's history keeps (an argument is used, with a warning). When the account is end-to-end encrypted, the recovery code is read \
            from --recovery-file, the next line of standard input, or asked for. Nothing is saved unless the server's CA matches \
            the code's fingerprint, the token is accepted and the recovery code opens the account's records. With \
            --recovery-file, a server that says the account is not encrypted is refused (exit 5): nothing made here goes up readable.
            """)
    public static let codeHelp: ArgumentHelp = "The join code ('-' or nothing: read it from standard input)."
    public static let recoveryFileHelp: ArgumentHelp =
        "Read the recovery code from this file (the account must be encrypted)."
    /// How `brsync` hands a code given as an argument to `brsync-sync`
    /// without putting it on the helper's command line.
    public static let environmentVariable = "BRSYNC_JOIN_CODE"
}
