import ArgumentParser
import BrsyncServer
import Glibc
import Net
import ServerStore
import SystemServices

/// What `brsyncd` reports of its own errors; ``ExitStatus/report(_:root:describe:)``
/// is the funnel (brsyncd exits 0 done, 2 any error).
enum Failure {
    static func describe(_ error: any Error) -> CLIFailure? {
        switch error {
        case ServerError.database(let database) where database.isBusy:
            // Another process held the store's write lock past the wait (a
            // long `sqlite3` transaction, a backup): nothing was done.
            return CLIFailure(
                message:
                    "the store is locked by another process (a long transaction in sqlite3 or psql?) and stayed so for "
                    + "longer than brsyncd waits: nothing was changed; run the command again once it is done (\(database))"
            )
        case let server as ServerError: return CLIFailure(message: server.description)
        case let net as NetError: return CLIFailure(message: describe(net))
        default: return nil
        }
    }

    static func describe(_ error: NetError) -> String {
        if error.errnoCode == EADDRINUSE { return "\(error): the port is in use (is another brsyncd running?)" }
        if error.errnoCode == EACCES { return "\(error): permission denied (ports below 1024 need privileges)" }
        return error.description
    }
}
