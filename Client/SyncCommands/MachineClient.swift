import BrsyncCommands
import Replica
import SyncClient
import SystemServices

/// The client of this machine's sync (every command's: the one factory):
/// its server, token, pinned CA and account key (``ClientKey``).
public func machineClient(
    _ replica: Replica, key choice: ClientKey = .keyFile, options: SyncClient.Options = SyncClient.Options(),
    progress: SyncClient.Progress? = nil
) throws -> (client: SyncClient, key: AccountKey?) {
    let state = try replica.syncState()
    guard let url = state.remoteURL else { throw CLIFailure(message: RemoteCommand.noRemote) }
    let remote = try RemoteURL(parsing: url)
    let token = try TokenFile.read(home: replica.home)
    let key: AccountKey?
    switch choice {
    case .keyFile:
        if AccountKeyFile.unsettled(home: replica.home) {
            try AccountKeyFile.settle(home: replica.home) {
                try machineClient(replica, key: .given(nil)).client.accountKeyID()
            }
        }
        key = try AccountKeyFile.read(home: replica.home)
    case .given(let given):
        key = given
    }
    let client = try SyncClient(
        replica: replica, remote: remote, token: token, caFile: state.caFile, accountKey: key,
        olderKeys: try AccountKeyFile.readOlder(home: replica.home), options: options, progress: progress)
    return (client, key)
}

/// The account key a machine's client seals with (``machineClient(_:key:options:progress:)``).
public enum ClientKey: Sendable {
    /// The key file's, after settling a key change left half done.
    case keyFile
    /// This one, or none: the key file is not read (a key being checked,
    /// asking the server which key it uses).
    case given(AccountKey?)
}
