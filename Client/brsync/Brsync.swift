import ArgumentParser

struct Brsync: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "brsync",
        abstract: "Keep browser-selection rules in sync and resolve every link offline.",
        discussion: """
            The replica lives in --home, $BRSYNC_HOME, or $XDG_DATA_HOME/brsync.
            Exit codes: 0 done; 1 'rules test' found no match; 2 error (nothing changed);
            3 'resolve' decided nothing (a picker would have to ask); 4 the server could not
            be reached (the replica is unchanged and usable offline); 5 the server refused.
            """,
        version: "0.1.0",
        subcommands: [
            Init.self, BrowsersCommand.self, RulesCommand.self, Resolve.self, Explain.self, Suggest.self,
            Log.self, Export.self, Import.self, RemoteCommand.self, Push.self, Pull.self, SyncCommand.self, Status.self,
            Restore.self,
        ]
    )
}
