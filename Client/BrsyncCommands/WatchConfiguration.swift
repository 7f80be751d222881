import ArgumentParser

/// `brsync watch`, run by `brsync-sync`; `brsync` declares it too, for its
/// help, manual and completions.
public enum WatchConfiguration {
    public static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract:
            "Sync live: pull as soon as another machine's edit reaches the server, push this machine's edits at once.",
        discussion: """
            Runs until stopped (scripts/install makes it a systemd user service, brsync-watch.service, which logs to the \
            journal: 'journalctl --user -u brsync-watch'). It syncs, then holds a watch open on the server \
            (GET /v1/watch, about a minute at a time) and syncs whenever the account changes; every edit made on this \
            machine wakes it to push at once, without polling. Offline, it retries with a growing pause (1 s to 1 min) and \
            at once when the network changes or the machine wakes from suspend. While it runs, 'brsync sync \
            --unless-watching' (the sync timer's service) does nothing, and 'brsync status' says it runs. One watch per \
            replica: a second one is refused.
            """)
    public static let statusHelp: ArgumentHelp =
        "Only say whether a watch runs for this replica: exit 0 when one does, 1 when none does (or it stopped answering)."
    public static let unlessWatchingHelp: ArgumentHelp =
        "Do nothing when 'brsync watch' runs for this replica (the sync timer's service uses it: the watch syncs already)."
}
