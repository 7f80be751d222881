import ArgumentParser
import BrsyncCommands
import SystemServices

struct Brsync: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "brsync",
        abstract: "Keep browser-selection rules in sync and resolve every link offline.",
        discussion: "The replica lives in --home, $BRSYNC_HOME, or $XDG_DATA_HOME/brsync.\n" + ExitStatus.help,
        version: BrsyncVersion.current,
        subcommands: [
            Init.self, BrowsersCommand.self, RulesCommand.self, Resolve.self, Explain.self, Suggest.self,
            CleanupCommand.self,
            Log.self, Export.self, Import.self, RemoteCommand.self, SyncHelper.Push.self, SyncHelper.Pull.self,
            SyncHelper.Sync.self, SyncHelper.Watch.self, SyncHelper.Key.self, SyncHelper.Join.self,
            SyncHelper.Doctor.self, Status.self, DeviceCommand.self, Restore.self, Open.self, Pick.self, AskNext.self,
            HoldToAsk.self, Settings.self, Install.self, Uninstall.self,
        ]
    )
}

/// `push`, `pull` and `sync` run in the helper `brsync-sync` beside this
/// binary (as git runs git-remote-https): only the helper links OpenSSL, so
/// resolving a link never pays for loading it. These entries exist for
/// `brsync --help`, the manual and completions; main.swift hands the
/// arguments over before parsing.
enum SyncHelper {
    // an Array: a Set costs more to build than it saves here
    static let commands = ["push", "pull", "sync", "watch", "key", "join", "doctor"]

    struct Push: ParsableCommand {
        static let configuration = TransferConfigurations.push
        @OptionGroup var global: GlobalOptions
        @OptionGroup var options: TransferOptions
    }

    struct Pull: ParsableCommand {
        static let configuration = TransferConfigurations.pull
        @OptionGroup var global: GlobalOptions
        @OptionGroup var options: TransferOptions
    }

    struct Sync: ParsableCommand {
        static let configuration = TransferConfigurations.sync
        @OptionGroup var global: GlobalOptions
        @OptionGroup var options: TransferOptions
        @Flag(help: WatchConfiguration.unlessWatchingHelp) var unlessWatching = false
    }

    struct Doctor: ParsableCommand {
        static let configuration = DoctorConfiguration.configuration
        @OptionGroup var global: GlobalOptions
        @Flag(help: DoctorConfiguration.jsonHelp) var json = false
    }

    struct Watch: ParsableCommand {
        static let configuration = WatchConfiguration.configuration
        @OptionGroup var global: GlobalOptions
        @Flag(help: WatchConfiguration.statusHelp) var status = false
    }

    struct Join: ParsableCommand {
        static let configuration = JoinConfiguration.configuration
        @OptionGroup var global: GlobalOptions
        @OptionGroup var options: TransferOptions
        @Option(help: JoinConfiguration.recoveryFileHelp) var recoveryFile: String?
        @Argument(help: JoinConfiguration.codeHelp) var code: String?
    }

    /// `brsync key init|add|show` (end-to-end encryption needs OpenSSL, so the helper runs it).
    struct Key: ParsableCommand {
        static let configuration = KeyConfigurations.group([
            KeyInit.self, KeyAdd.self, KeyShow.self, KeyRotate.self, KeyForget.self,
        ])
    }

    struct KeyInit: ParsableCommand {
        static let configuration = KeyConfigurations.initialise
        @OptionGroup var global: GlobalOptions
        @OptionGroup var options: TransferOptions
        @Flag(help: KeyConfigurations.yesHelp) var yes = false
    }

    struct KeyAdd: ParsableCommand {
        static let configuration = KeyConfigurations.add
        @OptionGroup var global: GlobalOptions
        @OptionGroup var options: TransferOptions
        @Option(help: KeyConfigurations.fileHelp) var file: String?
    }

    struct KeyRotate: ParsableCommand {
        static let configuration = KeyConfigurations.rotate
        @OptionGroup var global: GlobalOptions
        @OptionGroup var options: TransferOptions
        @Flag(help: KeyConfigurations.yesHelp) var yes = false
    }

    struct KeyShow: ParsableCommand {
        static let configuration = KeyConfigurations.show
        @OptionGroup var global: GlobalOptions
    }

    struct KeyForget: ParsableCommand {
        static let configuration = KeyConfigurations.forget
        @OptionGroup var global: GlobalOptions
        @OptionGroup var options: TransferOptions
        @Flag(help: KeyConfigurations.forceHelp) var force = false
    }
}
