import ArgumentParser

/// `brsync doctor`, run by `brsync-sync` (it asks the server); `brsync`
/// declares it too, for its help, manual and completions.
public enum DoctorConfiguration {
    public static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract:
            "Check what clicks and syncs need, and say the command that fixes what is wrong. Exit 0 when all is well, 1 when not.",
        discussion: """
            Checks the replica; every browser's launch command (found, executable, not a directory); that brsync is the \
            default browser for http, https and HTML, and that its desktop entry runs a brsync that starts, with this \
            replica; that a picker can ask on this session's display; the sync server (reached, its certificate and this \
            machine's token accepted, the last sync's stop, the account key of an encrypted account); and a watch that \
            stopped answering. It changes nothing; the server is asked for one page of one record.
            """)
    public static let jsonHelp: ArgumentHelp =
        "Print the checks as JSON: [{check, state (ok, note, problem), detail, fix}]."
}
