import Foundation
import Glibc
import TestSupport
import Testing

@testable import Desktop

/// Finding the app a link came from, with real processes: an app (a
/// script) that opens a link directly, through an `xdg-open` of its own,
/// launched from its desktop file, as a Flatpak, and one that exits before
/// brsync looks; and a fake `/proc` for what a test cannot start (a
/// Flatpak's `/.flatpak-info`, a Snap's cgroup, the portal).
@Suite(.serialized) struct SourceAppTests {
    /// Starts `script` (saved as `name` in a folder of its own); the script
    /// starts a shell that writes its pid to `$OUT/pid` and sleeps. Returns
    /// that shell's pid: where brsync's walk would begin.
    static func start(
        _ name: String, _ body: String, environment: [String: String] = [:], in directory: TemporaryDirectory
    )
        throws -> (Process, Int32)
    {
        let script = directory.file(name)
        try writeScript(script, "#!/bin/sh\n\(body)\n")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: script)
        var merged = ProcessInfo.processInfo.environment
        merged["OUT"] = directory.path
        merged["PATH"] = directory.path + ":" + (merged["PATH"] ?? "/usr/bin:/bin")
        for (key, value) in environment { merged[key] = value }
        merged.removeValue(forKey: "GIO_LAUNCHED_DESKTOP_FILE")
        for (key, value) in environment { merged[key] = value }
        process.environment = merged
        try? FileManager.default.removeItem(atPath: directory.file("pid"))
        try process.run()
        for _ in 0..<300 {
            if let text = try? String(contentsOfFile: directory.file("pid"), encoding: .utf8),
                let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                usleep(20_000)
                return (process, pid)
            }
            usleep(10_000)
        }
        throw CocoaError(.fileReadNoSuchFile)
    }

    static let opener = "sh -c 'echo $$ > \"$OUT/pid\"; sleep 5; true'"

    @Test func anAppIsNamedByItsDesktopFileFlatpakIdOrProgram() throws {
        let directory = try TemporaryDirectory(prefix: "brsync-source")
        defer { directory.remove() }
        func found(
            _ name: String, _ body: String, _ environment: [String: String] = [:]
        ) throws -> Result<SourceApp, SourceApp.Unknown> {
            let (process, pid) = try Self.start(name, body, environment: environment, in: directory)
            defer { kill(pid, SIGTERM); process.terminate() }
            return SourceApp.find(from: pid)
        }
        // The app runs the opener itself: named by its program (a script: its own name).
        #expect(try found("mailapp", Self.opener).map(\.id) == .success("mailapp"))
        // Through an xdg-open of its own: passed over.
        try writeScript(directory.file("xdg-open"), "#!/bin/sh\n\(Self.opener)\n")
        let viaOpener = try found("chatapp", "xdg-open https://example.com")
        #expect(viaOpener.map(\.id) == .success("chatapp"))
        #expect(viaOpener.map(\.kind) == .success(.executable))
        // Launched from its menu entry: its desktop file names it.
        let launched = try found(
            "slack-bin", "xdg-open https://example.com",
            ["GIO_LAUNCHED_DESKTOP_FILE": "/usr/share/applications/com.slack.Slack.desktop"])
        #expect(launched.map(\.id) == .success("com.slack.Slack"))
        #expect(launched.map(\.kind) == .success(.desktopFile))
        // A Flatpak's app id.
        let flatpak = try found("electron", Self.opener, ["FLATPAK_ID": "org.example.Chat"])
        #expect(flatpak.map(\.id) == .success("org.example.Chat") && flatpak.map(\.kind) == .success(.flatpak))
        // An app that starts the opener and exits at once: gone when brsync looks.
        let gone = try found("quitter", "( \(Self.opener) & ) ; exit 0")
        #expect(gone == .failure(.gone), "\(gone)")
    }

    /// A fake `/proc`: pids 300 (the portal) → 200 (xdg-open) → 100 (brsync's parent chain).
    static func fakeProc(
        _ directory: TemporaryDirectory,
        _ processes: [(pid: Int32, comm: String, parent: Int32, files: [String: String])]
    ) throws -> String {
        let proc = directory.file("proc")
        for process in processes {
            let folder = "\(proc)/\(process.pid)"
            try FileManager.default.createDirectory(atPath: folder + "/root", withIntermediateDirectories: true)
            try "\(process.pid) (\(process.comm)) S \(process.parent) 1 1 0".write(
                toFile: folder + "/stat", atomically: true, encoding: .utf8)
            for (name, text) in process.files {
                try text.write(toFile: "\(folder)/\(name)", atomically: true, encoding: .utf8)
            }
        }
        return proc
    }

    @Test func flatpakInfoSnapCgroupsAndThePortal() throws {
        let directory = try TemporaryDirectory(prefix: "brsync-proc")
        defer { directory.remove() }
        let proc = try Self.fakeProc(
            directory,
            [
                (10, "xdg-open", 11, [:]),
                (
                    11, "chrome", 1,
                    [
                        "root/.flatpak-info":
                            "[Application]\nname=com.google.Chrome\nruntime=runtime/org.freedesktop.Platform\n"
                    ]
                ),
                (20, "sh", 21, [:]),
                (
                    21, "slack", 1,
                    [
                        "cgroup":
                            "0::/user.slice/user-1000.slice/user@1000.service/app.slice/snap.slack.slack-1234.scope\n"
                    ]
                ),
                (30, "xdg-open", 31, [:]),
                (31, "xdg-desktop-portal", 1, [:]),
                (40, "sh", 41, [:]),
                (41, "weird (name) x", 1, [:]),
                // The portal's name, cut to 15 characters by the kernel.
                (50, "xdg-open", 51, [:]),
                (51, "xdg-desktop-po", 1, [:]),
                // A program started from a terminal launched from its menu: the terminal's desktop file is inherited.
                (60, "xdg-open", 61, [:]),
                (
                    61, "telegram", 62,
                    [
                        "environ":
                            "GIO_LAUNCHED_DESKTOP_FILE=/usr/share/applications/org.gnome.Terminal.desktop\0GIO_LAUNCHED_DESKTOP_FILE_PID=62\0"
                    ]
                ),
                (62, "gnome-terminal-", 1, [:]),
                // The launched process itself.
                (70, "sh", 71, [:]),
                (
                    71, "evolution", 1,
                    [
                        "environ":
                            "GIO_LAUNCHED_DESKTOP_FILE=/usr/share/applications/org.gnome.Evolution.desktop\0GIO_LAUNCHED_DESKTOP_FILE_PID=71\0"
                    ]
                ),
                // A script whose name is longer than 15 characters: named whole from its command line.
                (80, "sh", 81, [:]),
                (81, "averyveryverylo", 1, ["cmdline": "/bin/sh\0/opt/apps/averyveryverylongappname\0--flag\0"]),
            ])
        #expect(
            SourceApp.find(from: 10, proc: proc)
                == .success(SourceApp(id: "com.google.Chrome", kind: .flatpak, pid: 11)))
        #expect(SourceApp.find(from: 20, proc: proc) == .success(SourceApp(id: "slack", kind: .snap, pid: 21)))
        #expect(SourceApp.find(from: 30, proc: proc) == .failure(.portal))
        #expect(SourceApp.find(from: 99, proc: proc) == .failure(.gone), "a process that is not there")
        #expect(SourceApp.find(from: 50, proc: proc) == .failure(.portal))
        #expect(
            SourceApp.find(from: 60, proc: proc).map(\.id) == .success("telegram"),
            "not the terminal it was started from")
        #expect(
            SourceApp.find(from: 70, proc: proc)
                == .success(SourceApp(id: "org.gnome.Evolution", kind: .desktopFile, pid: 71)))
        #expect(SourceApp.scriptName(proc: proc, pid: 81, comm: "averyveryverylo") == "averyveryverylongappname")
        // A name that cannot be an id (spaces, parentheses) names nothing.
        #expect(SourceApp.find(from: 40, proc: proc) == .failure(.gone))
        #expect(SourceApp.parseStat("41 (weird (name) x) S 7 1") ?? ("", 0) == ("weird (name) x", 7))
        #expect(SourceApp.desktopID("/usr/share/applications/org.gnome.Evolution.desktop") == "org.gnome.Evolution")
        #expect(SourceApp.desktopID("/tmp/not-a-desktop-file") == nil)
        #expect(SourceApp.Unknown.portal.description.contains("portal"))
    }
}
