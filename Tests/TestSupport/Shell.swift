import Foundation

/// Runs a shell command with posix_spawn, its output in a file: for programs
/// that leave daemons behind (a tmux server), which would keep a pipe open.
public enum Shell {
    /// Runs `command` with `/bin/sh -c`; returns its exit status and output.
    public static func run(_ command: String, environment: [String: String] = [:], timeout: TimeInterval = 30) -> (status: Int32, output: String) {
        let outputFile = FileManager.default.temporaryDirectory.appendingPathComponent("brsync-shell-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: outputFile) }
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BRSYNC") && $0.key != "TMUX" }
        env.merge(environment) { $1 }
        let arguments = ["/bin/sh", "-c", "(\(command)) >'\(outputFile)' 2>&1 </dev/null"]
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, "/bin/sh", nil, nil, argv, envp) == 0 else { return (-1, "cannot start /bin/sh") }
        var status: Int32 = 0
        let deadline = Date().addingTimeInterval(timeout)
        while waitpid(pid, &status, WNOHANG) == 0 {
            if Date() > deadline {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                return (-1, "timed out: \(command)")
            }
            usleep(5_000)
        }
        let output = (try? String(contentsOfFile: outputFile, encoding: .utf8)) ?? ""
        return ((status >> 8) & 0xFF, output)
    }
}
