import ArgumentParser
import BrsyncServer
import Glibc
import Net

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
        writeError("brsyncd: error: \(message)\n")
        return 2
    }

    static func describe(_ error: NetError) -> String {
        if error.errnoCode == EADDRINUSE { return "\(error): the port is in use (is another brsyncd running?)" }
        if error.errnoCode == EACCES { return "\(error): permission denied (ports below 1024 need privileges)" }
        return error.description
    }

    static func writeError(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
            if written <= 0 { return }
            bytes = bytes.dropFirst(written)
        }
    }
}

struct CommandFailure: Error {
    let message: String
}
