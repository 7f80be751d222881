import Foundation
import SystemServices

/// Runs a shell command, its output in a file: for programs that leave
/// daemons behind (a tmux server), which would keep a pipe open.
public enum Shell {
    /// Runs `command` with `/bin/sh -c`; returns its exit status and output.
    public static func run(
        _ command: String, environment: [String: String] = [:], timeout: TimeInterval = 30
    ) -> (status: Int32, output: String) {
        let outputFile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "brsync-shell-\(UUID().uuidString)"
        ).path
        defer { try? FileManager.default.removeItem(atPath: outputFile) }
        let child: ChildProcess
        do {
            child = try ChildProcess(
                ["/bin/sh", "-c", command],
                environment: ProcessRunner.environment(environment, unsetting: ["BRSYNC*", "TMUX"]),
                output: .file(outputFile), errors: .sameAsOutput)
        } catch {
            return (-1, "\(error)")
        }
        guard let ended = child.wait(timeoutMilliseconds: Int64(timeout * 1000)) else {
            child.stop(signal: SIGKILL)
            return (-1, "timed out: \(command)")
        }
        let output = (try? String(contentsOfFile: outputFile, encoding: .utf8)) ?? ""
        return (ended.code, output)
    }
}
