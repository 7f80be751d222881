import ArgumentParser
import BrsyncCommands
import Glibc
import SyncCommands
import SystemServices

/// `brsync watch`: see ``WatchConfiguration``.
struct WatchCommand: ParsableCommand {
    static let configuration = WatchConfiguration.configuration
    @OptionGroup var global: GlobalOptions
    @Flag(help: WatchConfiguration.statusHelp) var status = false
    /// The server's wait in seconds (1 to 55; tests shorten it).
    @Option(help: .hidden) var serverWait: Int?

    func run() throws {
        let home = global.resolvedHome
        if let serverWait, !(1...55).contains(serverWait) {
            throw CLIFailure(message: "--server-wait is 1 to 55 seconds (got \(serverWait))")
        }
        if status {
            let text = Watcher.statusText(home: home)
            print(text.line)
            if !text.alive { throw ExitCode(1) }
            return
        }
        let replica = try global.openReplica()
        let claim = try Watcher.claim(replica)
        try Watcher(replica: replica, claim: claim, serverWait: serverWait).run()
    }
}
