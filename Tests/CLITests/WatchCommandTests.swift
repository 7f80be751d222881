import Foundation
import Glibc
import TestSupport
import Testing

/// `brsync watch`: an edit on one machine reaches another that watches in
/// about the time of two requests; the watch pushes its own machine's
/// edits at once, comes back after the server restarts, stands the sync
/// timer down, and is one per replica.
@Suite(.serialized) struct WatchCommandTests {
    /// Waits (bounded) until `home` resolves `url` by a rule for `pattern`.
    static func resolves(
        _ world: CLIWorld, _ home: String, _ url: String, by pattern: String, seconds: Double = 10
    ) throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let result = try world.run(home, ["resolve", "--json", url])
            if result.stdout.contains(#""rule":"\#(pattern)""#) { return true }
            usleep(50_000)
        }
        return false
    }

    @Test(arguments: StoreKind.allCases) func aWatchingMachineTakesEditsAsTheyHappen(_ store: StoreKind) throws {
        let world = try CLIWorld(store)
        let laptop = try world.replica("laptop")
        let desktop = try world.replica("desktop")
        try world.mustRun(laptop, ["browsers", "add", "firefox", "--exec", "firefox %u"])
        try world.mustRun(laptop, ["sync"])
        try world.mustRun(desktop, ["sync"])
        // Launch commands are each machine's own.
        try world.mustRun(desktop, ["browsers", "add", "firefox", "--exec", "firefox %u"])

        let notRunning = try world.run(desktop, ["watch", "--status"])
        #expect(notRunning.status == 1 && notRunning.stdout.contains("no watch runs"), "\(notRunning)")
        let watch = try BackgroundProcess(
            world.brsync, ["watch", "--server-wait", "5"], environment: ["BRSYNC_HOME": desktop])
        defer { watch.signal(SIGTERM) }
        _ = try watch.waitFor("watching")
        for _ in 0..<100 where try world.run(desktop, ["watch", "--status"]).status != 0 { usleep(50_000) }
        #expect(try world.run(desktop, ["watch", "--status"]).status == 0)
        let second = try world.run(desktop, ["watch"])
        #expect(second.status == 2 && second.stderr.contains("a watch runs already"), "\(second)")
        let timer = try world.run(desktop, ["sync", "--unless-watching"])
        #expect(timer.status == 0 && timer.stdout.contains("nothing to do"), "\(timer)")
        let status = try world.run(desktop, ["status"])
        #expect(status.stdout.contains("watch:     running"), "\(status)")
        // Started by hand, not as the systemd service: no journal to point at.
        #expect(status.stdout.contains("where it was started") && !status.stdout.contains("journalctl"), "\(status)")

        // The laptop's edit, pushed by a plain sync, reaches the watching desktop.
        try world.mustRun(laptop, ["rules", "add", "zoom.us", "firefox"])
        try world.mustRun(laptop, ["sync"])
        #expect(try Self.resolves(world, desktop, "https://zoom.us/j/1", by: "zoom.us"), "\(watch.text)")

        // The desktop's own edit is pushed by its watch, with no sync run.
        try world.mustRun(desktop, ["rules", "add", "github.com", "firefox"])
        var pushed = false
        for _ in 0..<100 where !pushed {
            pushed = try world.run(desktop, ["status", "--json"]).stdout.contains(#""unpushed":0"#)
            if !pushed { usleep(50_000) }
        }
        #expect(pushed, "\(watch.text)")
        try world.mustRun(laptop, ["sync"])
        #expect(try Self.resolves(world, laptop, "https://github.com/x", by: "github.com", seconds: 1))

        // The server restarts on its port: the watch comes back by itself.
        let port = world.port
        world.stop()
        try world.start(port: port)
        try world.mustRun(laptop, ["rules", "add", "meet.google.com", "firefox"])
        try world.mustRun(laptop, ["sync"])
        #expect(
            try Self.resolves(world, desktop, "https://meet.google.com/abc", by: "meet.google.com", seconds: 20),
            "\(watch.text)")

        // Nothing syncs in a loop: with no edit, the watch only waits. (The
        // line of the sync that brought the rule is written after its
        // commit, which `resolve` may see first: wait for it, bounded.)
        var lines = watch.text.split(separator: "\n").count
        var quiet = 0
        for _ in 0..<50 where quiet < 5 {
            usleep(100_000)
            let now = watch.text.split(separator: "\n").count
            quiet = now == lines ? quiet + 1 : 0
            lines = now
        }
        usleep(1_500_000)
        #expect(watch.text.split(separator: "\n").count == lines, "\(watch.text)")
        // Each sync that moved something is logged as `brsync sync` says it.
        #expect(watch.text.contains("brsync watch: sync: pushed 0 change(s), pulled 1 record(s), 1 changed here"))

        watch.signal(SIGTERM)
        for _ in 0..<100 where watch.isRunning { usleep(20_000) }
        #expect(try world.run(desktop, ["watch", "--status"]).status == 1)
    }

    /// A watch whose syncs are refused (its device revoked) logs the
    /// reason whole once; the tries that each edit here makes say in a
    /// short line that it is the same, not the whole refusal again.
    @Test func aRefusedWatchLogsTheReasonOnce() throws {
        let world = try CLIWorld()
        let laptop = try world.replica("laptop")
        try world.mustRun(laptop, ["browsers", "add", "firefox", "--exec", "firefox %u"])
        try world.mustRun(laptop, ["sync"])
        let watch = try BackgroundProcess(
            world.brsync, ["watch", "--server-wait", "5"], environment: ["BRSYNC_HOME": laptop])
        defer { watch.signal(SIGTERM) }
        _ = try watch.waitFor("watching")
        #expect(
            try ProcessRunner.run(
                world.brsyncd, ["device", "revoke", "alice", "laptop"] + world.storeArguments,
                environment: world.storeEnvironment
            ).status == 0)
        for (index, pattern) in ["a.example", "b.example", "c.example"].enumerated() {
            try world.mustRun(laptop, ["rules", "add", pattern, "firefox"])
            let tries = { watch.text.components(separatedBy: "trying again in 5 minutes").count - 1 }
            for _ in 0..<200 where tries() <= index { usleep(50_000) }
            #expect(tries() == index + 1, "\(watch.text)")
        }
        #expect(watch.text.components(separatedBy: "token was revoked").count - 1 == 1, "\(watch.text)")
        #expect(watch.text.components(separatedBy: "sync stopped again, for the reason logged").count - 1 == 2)
    }

    /// A watch started before the machine has a server waits for one
    /// (no error, no restart loop under systemd) and starts as `remote set`
    /// names it; a bad option is refused before anything starts.
    @Test func aWatchWaitsForItsServer() throws {
        let world = try CLIWorld()
        let home = world.directory.file("fresh")
        try world.mustRun(home, ["init", "--device-name", "fresh"])
        let bad = try world.run(home, ["watch", "--server-wait", "0"])
        #expect(bad.status == 2 && bad.stderr.contains("--server-wait is 1 to 55"), "\(bad)")
        let watch = try BackgroundProcess(
            world.brsync, ["watch", "--server-wait", "5"], environment: ["BRSYNC_HOME": home])
        defer { watch.signal(SIGTERM) }
        _ = try watch.waitFor("has no server yet")
        let laptop = try world.replica("laptop")
        try world.firefoxRule(laptop, "zoom.us", exec: "firefox %u")
        try world.mustRun(laptop, ["sync"])
        try world.mustRun(
            home,
            ["remote", "set", world.url, "--token", try world.token("fresh"), "--ca", world.directory.file("ca.pem")])
        _ = try watch.waitFor("watching https://")
        try world.mustRun(home, ["browsers", "add", "firefox", "--exec", "firefox %u"])
        #expect(try Self.resolves(world, home, "https://zoom.us/j/1", by: "zoom.us"), "\(watch.text)")
        #expect(watch.isRunning)
    }

    /// The watch's lock and wake-up socket are this user's alone (mode
    /// 0600, in the replica's folder); a watch that holds the lock but gave
    /// no sign of life for 3 minutes (stopped, hung) is said so, and the
    /// sync timer's `sync --unless-watching` syncs meanwhile.
    @Test func aWatchIsPrivateAndAFrozenOneDoesNotStopTheTimer() throws {
        let world = try CLIWorld()
        let home = try world.replica("laptop")
        let watch = try BackgroundProcess(
            world.brsync, ["watch", "--server-wait", "5"], environment: ["BRSYNC_HOME": home])
        _ = try watch.waitFor("watching https://")
        for file in ["watch.lock", "watch.sock"] {
            var status = stat()
            #expect(
                lstat(home + "/" + file, &status) == 0 && status.st_mode & 0o777 == 0o600,
                "\(file): \(String(status.st_mode, radix: 8))")
        }
        watch.signal(SIGTERM)
        for _ in 0..<100 where watch.isRunning { usleep(20_000) }

        // A lock held, with a heartbeat from 10 minutes ago: a frozen watch.
        let lock = open(home + "/watch.lock", O_RDWR)
        var request = flock()
        request.l_type = Int16(F_WRLCK)
        request.l_whence = Int16(SEEK_SET)
        #expect(fcntl(lock, F_SETLK, &request) == 0)
        var boot = timespec()
        clock_gettime(CLOCK_BOOTTIME, &boot)
        let old = Array(String(Int64(boot.tv_sec) * 1000 + Int64(boot.tv_nsec) / 1_000_000 - 600_000).utf8)
        _ = ftruncate(lock, 0)
        _ = pwrite(lock, old, old.count, 0)
        let status = try world.run(home, ["watch", "--status"])
        #expect(status.status == 1 && status.stdout.contains("no sign of life"), "\(status)")
        #expect(try world.run(home, ["status"]).stdout.contains("watch:     stopped answering"))
        let timer = try world.run(home, ["sync", "--unless-watching"])
        #expect(timer.status == 0 && timer.stdout.hasPrefix("sync: pushed"), "the timer syncs: \(timer)")
        let second = try world.run(home, ["watch"])
        #expect(
            second.status == 2 && second.stderr.contains("gave no sign of life"), "the lock is still held: \(second)")

        // A lock file someone else planted (the folder was open to others once) says nothing, and a watch replaces it.
        close(lock)
        guard getuid() == 0 else { return } // only root can give a file away
        #expect(unlink(home + "/watch.lock") == 0)
        let planted = open(home + "/watch.lock", O_RDWR | O_CREAT, 0o644)
        #expect(fchown(planted, 65534, 65534) == 0)
        #expect(fcntl(planted, F_SETLK, &request) == 0)
        _ = pwrite(planted, old, old.count, 0)
        #expect(try world.run(home, ["watch", "--status"]).stdout.contains("no watch runs"))
        let another = try BackgroundProcess(
            world.brsync, ["watch", "--server-wait", "5"], environment: ["BRSYNC_HOME": home])
        defer { another.signal(SIGTERM) }
        _ = try another.waitFor("watching https://")
        var status2 = stat()
        #expect(lstat(home + "/watch.lock", &status2) == 0 && status2.st_uid == 0 && status2.st_mode & 0o777 == 0o600)
        close(planted)
    }
}
