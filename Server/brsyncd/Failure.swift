import ArgumentParser
import BrsyncServer
import Glibc
import Net
import Plumbing

/// The one place errors become exit codes and messages: 0 done, 2 any error
/// (one line on stderr).
enum Failure {
    static func report(_ error: any Error) -> Int32 {
        let message: String
        switch error {
        case let exit as ExitCode:
            return exit.rawValue
        case let server as ServerError:
            message = server.description
        case let net as NetError:
            message = describe(net)
        case let failure as CommandFailure:
            message = failure.message
        default:
            let code = Brsyncd.exitCode(for: error)
            var text = Brsyncd.fullMessage(for: error)
            if code == .success {
                print(text)
                return 0
            }
            if text.hasPrefix("Error: ") { text.removeFirst("Error: ".count) }
            message = text
        }
        writeToStandardError("brsyncd: error: \(message)\n")
        return 2
    }

    static func describe(_ error: NetError) -> String {
        if error.errnoCode == EADDRINUSE { return "\(error): the port is in use (is another brsyncd running?)" }
        if error.errnoCode == EACCES { return "\(error): permission denied (ports below 1024 need privileges)" }
        return error.description
    }

}

struct CommandFailure: Error {
    let message: String
}
