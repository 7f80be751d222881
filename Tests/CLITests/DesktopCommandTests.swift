import Foundation
import TestSupport
import Testing

/// `brsync browsers detect`, profiles, `open`, `install` and `uninstall` in a
/// temporary HOME with fixture desktop entries and a launch command that
/// records its arguments.
final class DesktopWorld: @unchecked Sendable {
    // Built in init, then only read.
    let directory: TemporaryDirectory
    /// The brsync run (a test may run a copy with no picker window beside it).
    var brsync = ProcessRunner.binary("brsync")
    var environment: [String: String]

    init() throws {
        directory = try TemporaryDirectory(prefix: "brsync-desktop-cli")
        let bin = directory.file("bin")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            atPath: directory.file("data/applications"), withIntermediateDirectories: true)
        let recorder = "#!/bin/sh\nprintf '%s\\n' \"$0 $*\" >> \(directory.file("launched"))\n"
        for program in ["fakefox", "fakechrome"] {
            try writeScript("\(bin)/\(program)", recorder)
        }
        // A notification server stand-in: each notification is one line.
        let notifier = "#!/bin/sh\nprintf '%s\\n' \"$*\" >> \(directory.file("notified"))\n"
        try writeScript("\(bin)/notify-send", notifier)
        // Firefox has a private-window action (Chrome's fixture has none).
        try
            ("[Desktop Entry]\nType=Application\nName=Firefox\nExec=fakefox %u\nTryExec=fakefox\nMimeType=text/html;x-scheme-handler/http;x-scheme-handler/https;\n"
            + "Actions=new-window;new-private-window;\n[Desktop Action new-window]\nName=New Window\nExec=fakefox --new-window %u\n"
            + "[Desktop Action new-private-window]\nName=New Private Window\nExec=fakefox --private-window %u\n")
            .write(toFile: directory.file("data/applications/firefox.desktop"), atomically: true, encoding: .utf8)
        try
            "[Desktop Entry]\nType=Application\nName=Chrome\nExec=fakechrome --profile-directory=Default %U\nCategories=Network;WebBrowser;\n"
            .write(toFile: directory.file("data/applications/google-chrome.desktop"), atomically: true, encoding: .utf8)
        environment = [
            "HOME": directory.path, "XDG_DATA_HOME": directory.file("data"), "XDG_DATA_DIRS": directory.file("none"),
            "XDG_CONFIG_HOME": directory.file("config"), "BRSYNC_HOME": directory.file("brsync"),
            "PATH": "\(bin):/usr/bin:/bin",
            // No display unless a test starts one (the host's never leaks in).
            "DISPLAY": "", "WAYLAND_DISPLAY": "", "XDG_CURRENT_DESKTOP": "", "DBUS_SESSION_BUS_ADDRESS": "",
        ]
    }

    deinit { directory.remove() }

    @discardableResult
    func run(_ arguments: String...) throws -> ProcessResult {
        try ProcessRunner.run(brsync, arguments, environment: environment)
    }

    /// The system's programs on PATH, less the menus brsync would ask in
    /// (rofi, wofi, fuzzel, bemenu, dmenu, zenity): for a test of what happens
    /// when no menu is installed, on a machine that has one.
    func hideSystemMenus() throws {
        let system = directory.file("system-bin")
        try FileManager.default.createDirectory(atPath: system, withIntermediateDirectories: true)
        let menus: Set = ["rofi", "wofi", "fuzzel", "bemenu", "dmenu", "zenity"]
        for folder in ["/usr/bin", "/bin"] {
            for name in try FileManager.default.contentsOfDirectory(atPath: folder) where !menus.contains(name) {
                _ = symlink("\(folder)/\(name)", "\(system)/\(name)") // the first of the two folders wins
            }
        }
        environment["PATH"] = "\(directory.file("bin")):\(system)"
    }

    func launched() -> [String] {
        (try? String(contentsOfFile: directory.file("launched"), encoding: .utf8))?.split(separator: "\n").map(
            String.init) ?? []
    }

    /// The notifications shown so far, one per line.
    func notified() -> [String] {
        (try? String(contentsOfFile: directory.file("notified"), encoding: .utf8))?.split(separator: "\n").map(
            String.init) ?? []
    }

    /// The notifications once there are `count` (bounded wait: a detached
    /// process shows them).
    func waitForNotification(count: Int = 1) -> [String] {
        for _ in 0..<300 where notified().count < count { usleep(10_000) }
        return notified()
    }

    /// Waits for the launched program to write its line (it runs detached).
    func waitForLaunch(count: Int) -> [String] {
        for _ in 0..<200 where launched().count < count { usleep(10_000) }
        return launched()
    }
}

@Suite struct DesktopCommandTests {
    @Test func detectThenOpenLaunchesTheDecidedBrowser() throws {
        let world = try DesktopWorld()
        #expect(try world.run("init").status == 0)
        let detected = try world.run("browsers", "detect", "--json")
        #expect(detected.status == 0, "\(detected)")
        #expect(detected.stdout.contains(#""id":"chrome""#) && detected.stdout.contains(#""id":"firefox""#))
        #expect(try world.run("rules", "add", "github.com", "chrome").status == 0)
        #expect(try world.run("browsers", "add", "private", "--from", "firefox", "--args=--private-window").status == 0)
        #expect(try world.run("rules", "add", "bank.example", "private").status == 0)

        let github = try world.run("open", "https://github.com/a?b=1&c")
        #expect(github.status == 0, "\(github)")
        #expect(
            world.waitForLaunch(count: 1).last?.hasSuffix(
                "fakechrome --profile-directory=Default https://github.com/a?b=1&c") == true, "\(world.launched())")
        let bank = try world.run("open", "https://www.bank.example/login")
        #expect(bank.status == 0, "\(bank)")
        #expect(
            world.waitForLaunch(count: 2).last?.hasSuffix("fakefox --private-window https://www.bank.example/login")
                == true, "\(world.launched())")

        // Nothing decides: exit 3, nothing launched.
        let undecided = try world.run("open", "https://unknown.example/")
        #expect(undecided.status == 3 && undecided.stderr.contains("no picker could ask"), "\(undecided)")
        // A launch command that cannot run says so.
        #expect(try world.run("browsers", "add", "broken", "--exec", "/nonexistent/browser %u").status == 0)
        #expect(try world.run("rules", "add", "broken.example", "broken").status == 0)
        let failed = try world.run("open", "https://broken.example/")
        #expect(
            failed.status == 3 && failed.stderr.contains("cannot start /nonexistent/browser")
                && failed.stderr.contains("no picker"), "\(failed)")
        usleep(100_000)
        #expect(world.launched().count == 2)
    }

    /// Hidden browsers and the picker's order: every picker follows them
    /// (here a BRSYNC_PICKER that takes the first line it is offered).
    @Test func browsersCanBeHiddenFromAndOrderedInThePicker() throws {
        let world = try DesktopWorld()
        #expect(try world.run("init").status == 0)
        #expect(try world.run("browsers", "detect").status == 0)
        world.environment["BRSYNC_PICKER"] = "head -n 1"
        #expect(try world.run("pick", "https://example.org/1").status == 0)
        #expect(
            world.waitForLaunch(count: 1).last?.hasSuffix(
                "fakechrome --profile-directory=Default https://example.org/1") == true)

        let ordered = try world.run("browsers", "order", "firefox")
        #expect(ordered.status == 0 && ordered.stdout == "1. firefox\n2. chrome\n", "\(ordered)")
        #expect(try world.run("pick", "https://example.org/2").status == 0)
        #expect(world.waitForLaunch(count: 2).last?.hasSuffix("fakefox https://example.org/2") == true)

        #expect(try world.run("browsers", "hide", "firefox").stdout == "hidden from the picker: firefox\n")
        #expect(try world.run("pick", "https://example.org/3").status == 0)
        #expect(
            world.waitForLaunch(count: 3).last?.hasSuffix(
                "fakechrome --profile-directory=Default https://example.org/3") == true)
        #expect(try world.run("browsers", "list").stdout.contains("usable, hidden in picker"))
        let json = try world.run("browsers", "list", "--json").stdout
        #expect(json.contains(#""hiddenInPicker":true"#) && json.contains(#""pickerOrder":1"#), "\(json)")
        // A rule naming a hidden browser still opens it.
        #expect(try world.run("rules", "add", "hidden.example", "firefox").status == 0)
        #expect(try world.run("open", "https://hidden.example/").status == 0)
        #expect(world.waitForLaunch(count: 4).last?.hasSuffix("fakefox https://hidden.example/") == true)
        // Every browser hidden: the picker offers them all (the link is never lost).
        #expect(try world.run("browsers", "hide", "chrome").status == 0)
        #expect(try world.run("pick", "https://example.org/5").status == 0)
        #expect(world.waitForLaunch(count: 5).last?.hasSuffix("fakefox https://example.org/5") == true)
        #expect(try world.run("browsers", "unhide", "chrome").stdout == "shown in the picker: chrome\n")
        #expect(try world.run("browsers", "unhide", "firefox").status == 0)
        #expect(try world.run("browsers", "order").stdout == "1. firefox\n2. chrome\n")

        // Bad input: exit 2, the reason, nothing changed.
        let before = try world.run("browsers", "list", "--json").stdout
        for (arguments, reason) in [
            (["browsers", "order", "chrome", "nosuch"], "unknown browser 'nosuch'"),
            (["browsers", "order", "chrome", "chrome"], "'chrome' is named twice"),
            (["browsers", "hide", "nosuch"], "unknown browser 'nosuch'"),
            (["browsers", "unhide"], "Missing expected argument"),
        ] {
            let refused = try ProcessRunner.run(world.brsync, arguments, environment: world.environment)
            #expect(refused.status == 2 && refused.stderr.contains(reason), "\(arguments): \(refused)")
        }
        #expect(try world.run("browsers", "list", "--json").stdout == before)
    }

    @Test func installMakesBrsyncTheDefaultAndUninstallPutsThePreviousBack() throws {
        let world = try DesktopWorld()
        #expect(try world.run("init").status == 0)
        #expect(try world.run("browsers", "detect").status == 0)
        let xdgMime = "/usr/bin/xdg-mime"
        let validate = "/usr/bin/desktop-file-validate"
        guard FileManager.default.isExecutableFile(atPath: xdgMime),
            FileManager.default.isExecutableFile(atPath: validate)
        else {
            Issue.record(
                "xdg-mime and desktop-file-validate are needed (scripts/setup installs xdg-utils and desktop-file-utils)"
            )
            return
        }
        #expect(
            try ProcessRunner.run(
                xdgMime, ["default", "firefox.desktop", "x-scheme-handler/https"], environment: world.environment
            ).status == 0)
        let installed = try world.run("install")
        #expect(installed.status == 0 && installed.stdout.contains("previous default: firefox.desktop"), "\(installed)")
        let desktopFile = world.directory.file("data/applications/brsync.desktop")
        let validation = try ProcessRunner.run(validate, [desktopFile])
        #expect(validation.status == 0 && validation.stdout.isEmpty && validation.stderr.isEmpty, "\(validation)")
        for type in ["x-scheme-handler/https", "x-scheme-handler/http", "text/html"] {
            let query = try ProcessRunner.run(xdgMime, ["query", "default", type], environment: world.environment)
            #expect(
                query.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "brsync.desktop", "\(type): \(query)")
        }
        // Installing again keeps the remembered previous default.
        #expect(try world.run("install").status == 0)
        let uninstalled = try world.run("uninstall")
        #expect(uninstalled.status == 0 && uninstalled.stdout.contains("back to firefox.desktop"), "\(uninstalled)")
        let query = try ProcessRunner.run(
            xdgMime, ["query", "default", "x-scheme-handler/https"], environment: world.environment)
        #expect(query.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "firefox.desktop")
        #expect(!FileManager.default.fileExists(atPath: desktopFile))
        // Uninstalling again changes nothing: the user's own default stays.
        let again = try world.run("uninstall")
        #expect(again.status == 0 && again.stdout.contains("brsync was not the default browser"), "\(again)")
        let still = try ProcessRunner.run(
            xdgMime, ["query", "default", "x-scheme-handler/https"], environment: world.environment)
        #expect(still.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "firefox.desktop", "\(still)")
        // brsync's own entry is never detected as a browser.
        #expect(try world.run("install").status == 0)
        #expect(!(try world.run("browsers", "detect").stdout.contains("brsync")))
        // The state lost while brsync is the default: installing again never
        // remembers brsync itself, nor nothing, as the previous default.
        unlink(world.directory.file("state/brsync/previous-defaults"))
        #expect(try world.run("install").status == 0)
        let remembered =
            (try? String(contentsOfFile: world.directory.file("state/brsync/previous-defaults"), encoding: .utf8)) ?? ""
        #expect(!remembered.contains("brsync.desktop"), "\(remembered)")
        let last = try world.run("uninstall")
        #expect(last.status == 0, "\(last)")
    }

    @Test func detectKeepsALaunchCommandSetByHand() throws {
        let world = try DesktopWorld()
        #expect(try world.run("init").status == 0)
        #expect(try world.run("browsers", "add", "firefox", "--exec", "fakefox --new-window %u").status == 0)
        let detected = try world.run("browsers", "detect")
        #expect(
            detected.status == 0 && detected.stderr.contains("kept the launch command set by hand for 'firefox'"),
            "\(detected)")
        #expect(try world.run("browsers", "list").stdout.contains("fakefox --new-window %u"))
        #expect(try world.run("browsers", "detect", "--replace").status == 0)
        let listed = try world.run("browsers", "list").stdout
        #expect(listed.contains("fakefox %u") && !listed.contains("--new-window"), "\(listed)")
        // Detected again: nothing set by hand any more, nothing kept.
        #expect(!(try world.run("browsers", "detect").stderr.contains("kept")))
    }

    @Test func profileAndDetectBadInput() throws {
        let world = try DesktopWorld()
        #expect(try world.run("init").status == 0)
        let noBase = try world.run("browsers", "add", "work", "--from", "firefox", "--args=-P work")
        #expect(noBase.status == 2 && noBase.stderr.contains("not added yet"), "\(noBase)")
        let alone = try world.run("browsers", "add", "work", "--from", "firefox")
        #expect(alone.status == 2 && alone.stderr.contains("--from and --args go together"))
        try "[Desktop Entry\nbroken".write(
            toFile: world.directory.file("data/applications/broken.desktop"), atomically: true, encoding: .utf8)
        let detected = try world.run("browsers", "detect")
        #expect(
            detected.status == 0 && detected.stderr.contains("warning: skipped")
                && detected.stderr.contains("broken.desktop"))
    }
}

/// The picker, driven as a person would: through tmux on a real terminal, and
/// through a dmenu-style menu command.
@Suite(.serialized) struct PickerTests {
    /// A tmux server with one session running `command`, in the world's folder.
    struct Terminal {
        let socket: String
        let session = "picker"
        /// Kept alive with the terminal: its folder holds the tmux socket.
        let world: DesktopWorld

        init(_ world: DesktopWorld, command: String) {
            self.world = world
            // A socket of its own: a server being stopped may still hold,
            // or remove, an earlier terminal's socket in the same folder.
            socket = world.directory.file("tmux-\(UUID().uuidString.prefix(8)).sock")
            let environment = world.environment.map { "\($0.key)='\($0.value)'" }.joined(separator: " ")
            // $? for the inner shell; the pane stays readable
            let script = "env \(environment) \(world.brsync) \(command); echo EXIT=\\$?; sleep 10"
            _ = Shell.run(
                "tmux -S '\(socket)' new-session -d -s \(session) -x 100 -y 20 \"\(script)\"",
                environment: ["TERM": "xterm-256color"])
            serverPID =
                Int32(
                    Shell.run("tmux -S '\(socket)' display-message -p '#{pid}'").output.trimmingCharacters(
                        in: .whitespacesAndNewlines)) ?? 0
        }

        /// The tmux server, ended for sure in ``stop()``.
        let serverPID: Int32

        func keys(_ keys: String...) {
            for key in keys { _ = Shell.run("tmux -S '\(socket)' send-keys -t \(session) \(key)") }
        }

        var screen: String { Shell.run("tmux -S '\(socket)' capture-pane -p -t \(session)").output }

        /// The screen once it shows `text` (bounded wait).
        func waitFor(_ text: String) -> String {
            for _ in 0..<300 {
                let current = screen
                if current.contains(text) { return current }
                usleep(20_000)
            }
            return screen
        }

        func stop() {
            _ = Shell.run("tmux -S '\(socket)' kill-server")
            if serverPID > 0 { kill(serverPID, SIGKILL) }
        }
    }

    static var hasTmux: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux") }

    @Test func terminalPickerRemembersAndTheNextOpenDoesNotAsk() throws {
        guard Self.hasTmux else {
            Issue.record("tmux is needed (scripts/setup installs it)")
            return
        }
        let world = try DesktopWorld()
        #expect(try world.run("init").status == 0)
        #expect(try world.run("browsers", "detect").status == 0)
        let terminal = Terminal(world, command: "open https://www.github.com/x")
        defer { terminal.stop() }
        let shown = terminal.waitFor("remember for: github.com")
        #expect(
            shown.contains("Open https://www.github.com/x") && shown.contains("Chrome (chrome)")
                && shown.contains("Firefox (firefox)"), "\(shown)")
        // The second browser with the arrow key, remember, open.
        terminal.keys("Down", "r")
        _ = terminal.waitFor("[x] remember")
        terminal.keys("Enter")
        let done = terminal.waitFor("EXIT=")
        #expect(done.contains("EXIT=0") && done.contains("remembered: github.com -> firefox"), "\(done)")
        // The menu gave way to one line saying what opened.
        #expect(
            done.contains("opening https://www.github.com/x in Firefox (firefox), and remembering github.com")
                && !done.contains("remember for:") && !done.contains("Chrome (chrome)"), "\(done)")
        #expect(world.waitForLaunch(count: 1).last?.hasSuffix("fakefox https://www.github.com/x") == true)
        // The next open of a matching URL launches without asking.
        let again = try world.run("open", "https://gist.github.com/y")
        #expect(again.status == 0, "\(again)")
        #expect(world.waitForLaunch(count: 2).last?.hasSuffix("fakefox https://gist.github.com/y") == true)
    }

    /// Keys a terminal sends as signals or as sequences reach the picker as
    /// keys: Ctrl-C cancels like Esc (the terminal put back, the menu gone,
    /// said once), Ctrl-Z does not suspend it, and Delete, Home and End type
    /// nothing into the pattern.
    @Test func terminalPickerTakesSignalKeysAndSequencesAsKeys() throws {
        guard Self.hasTmux else { return }
        let world = try DesktopWorld()
        #expect(try world.run("init").status == 0)
        #expect(try world.run("browsers", "detect").status == 0)
        // A rule decides the link: `pick` selects its browser first, as the note says.
        #expect(try world.run("rules", "add", "github.com", "firefox").status == 0)
        let editing = Terminal(world, command: "pick https://github.com/")
        let asked = editing.waitFor("remember for: github.com")
        let firefoxLine = asked.split(separator: "\n").first { $0.contains("Firefox (firefox)") } ?? ""
        #expect(firefoxLine.hasPrefix(">") && asked.contains("would open it in 'firefox'"), "\(asked)")
        editing.keys("e", "C-z", "DC", "Home", "End", "PPage")
        let edited = editing.waitFor("remember for: github.com_")
        #expect(edited.contains("remember for: github.com_") && !edited.contains("~"), "\(edited)")
        editing.keys("Enter", "Enter")
        let opened = editing.waitFor("EXIT=")
        editing.stop()
        #expect(opened.contains("EXIT=0") && opened.contains("remembering github.com"), "\(opened)")
        let cancelling = Terminal(world, command: "pick https://example.org/")
        defer { cancelling.stop() }
        _ = cancelling.waitFor("remember for")
        cancelling.keys("C-c")
        let text = cancelling.waitFor("EXIT=")
        #expect(
            text.contains("EXIT=1") && text.components(separatedBy: "nothing opened").count == 2
                && !text.contains("remember for"), "Ctrl-C cancels, said once: \(text)")
    }

    @Test func terminalPickerCancelOpensNothing() throws {
        guard Self.hasTmux else { return }
        let world = try DesktopWorld()
        #expect(try world.run("init").status == 0)
        #expect(try world.run("browsers", "detect").status == 0)
        let terminal = Terminal(world, command: "pick https://github.com/")
        defer { terminal.stop() }
        _ = terminal.waitFor("remember for")
        terminal.keys("r", "Escape")
        let text = terminal.waitFor("EXIT=")
        #expect(
            text.contains("EXIT=1") && text.components(separatedBy: "nothing opened").count == 2
                && text.contains("cancelled; nothing opened") && !text.contains("remember for"),
            "said once: \(text)")
        #expect(try world.run("rules", "list").stdout.contains("no rules yet"))
        #expect(world.launched().isEmpty)
    }

    @Test func menuPickerWithoutATerminal() throws {
        let world = try DesktopWorld()
        #expect(try world.run("init").status == 0)
        #expect(try world.run("browsers", "detect").status == 0)
        // A dmenu stand-in that picks the "remember" line for Chrome.
        let menu = world.directory.file("bin/fake-dmenu")
        try writeScript(
            menu,
            "#!/bin/sh\ncat > \(world.directory.file("offered"))\ngrep 'Chrome (chrome) · remember' \(world.directory.file("offered"))\n"
        )
        world.environment["BRSYNC_PICKER"] = menu
        let opened = try world.run("open", "https://news.bbc.co.uk/story")
        #expect(opened.status == 0 && opened.stdout.contains("remembered: bbc.co.uk -> chrome"), "\(opened)")
        #expect(
            world.waitForLaunch(count: 1).last?.contains(
                "fakechrome --profile-directory=Default https://news.bbc.co.uk/story") == true)
        let offered = try String(contentsOfFile: world.directory.file("offered"), encoding: .utf8)
        #expect(offered.contains("Firefox (firefox)\n") && offered.contains("Chrome (chrome) · remember bbc.co.uk"))
        // A menu closed without a choice cancels.
        try writeScript(menu, "#!/bin/sh\ncat >/dev/null\nexit 1\n")
        let cancelled = try world.run("pick", "https://example.org/")
        #expect(cancelled.status == 1 && cancelled.stderr.contains("cancelled"), "\(cancelled)")
        #expect(world.launched().count == 1)
    }

    /// A browser chosen to be remembered whose command cannot start is not
    /// remembered (the rule would lose every later link to it too), and the
    /// link is not lost: the person is asked again without it, and what
    /// they choose then opens. A browser whose program is not installed is
    /// not offered at all.
    @Test func aChoiceIsRememberedOnlyOnceItOpened() throws {
        let world = try DesktopWorld()
        #expect(try world.run("init").status == 0)
        #expect(try world.run("browsers", "detect").status == 0)
        let menu = world.directory.file("bin/fake-dmenu")
        let offered = world.directory.file("offered")
        try writeScript(
            menu,
            """
            #!/bin/sh
            choices=$(cat)
            printf '%s\\n--\\n' "$choices" >> '\(offered)'
            printf '%s\\n' "$choices" | grep 'Chrome (chrome) · remember' || printf '%s\\n' "$choices" | grep -m1 '^Firefox (firefox)'
            """)
        world.environment["BRSYNC_PICKER"] = menu
        // Found on PATH and executable, but it cannot be started (its interpreter is missing).
        try writeScript(world.directory.file("bin/fakechrome"), "#!/nonexistent/interpreter\n")
        let picked = try world.run("pick", "https://news.bbc.co.uk/story")
        #expect(picked.status == 0, "\(picked)")
        #expect(
            picked.stderr.contains("not remembered: bbc.co.uk -> chrome (it did not start)")
                && picked.stderr.contains("chrome: cannot start"), "\(picked)")
        #expect(
            world.waitForLaunch(count: 1).last?.hasSuffix("fakefox https://news.bbc.co.uk/story") == true,
            "\(world.launched())")
        let rounds = try String(contentsOfFile: offered, encoding: .utf8).components(separatedBy: "\n--\n").filter {
            !$0.isEmpty
        }
        #expect(
            rounds.count == 2 && rounds[0].contains("Chrome (chrome)") && !rounds[1].contains("Chrome (chrome)"),
            "\(rounds)")
        #expect(try world.run("rules", "list").stdout.contains("no rules yet"))
        // Not installed at all: not offered.
        unlink(world.directory.file("bin/fakechrome"))
        unlink(offered)
        #expect(try world.run("pick", "https://example.org/").status == 0)
        let offeredThen = try String(contentsOfFile: offered, encoding: .utf8)
        #expect(!offeredThen.contains("Chrome (chrome)") && offeredThen.contains("Firefox (firefox)"), "\(offeredThen)")
    }
}
