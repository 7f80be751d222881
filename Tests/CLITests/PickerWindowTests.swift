import Desktop
import Foundation
import JSON
import Model
import TestSupport
import Testing

/// The picker window (`brsync-picker`, GTK 4) on a real X server (Xvfb),
/// started by `brsync pick`/`open` with no terminal and driven with xdotool
/// as a person would: by number, by arrows, Esc, remember, an invalid pattern.
@Suite(.serialized) struct PickerWindowTests {
    static let tools = ["/usr/bin/Xvfb", "/usr/bin/xdotool", "/usr/bin/xwininfo", "/usr/bin/xwd", "/usr/bin/xrdb"]

    /// An X server and a desktop world whose session uses it.
    final class Session: @unchecked Sendable {
        // Built in init; the server is stopped in deinit.
        let server: XvfbDesktopTests.XServer
        let world: DesktopWorld

        init(defaultBrowser: Bool = true) throws {
            server = try XvfbDesktopTests.XServer()
            world = defaultBrowser ? try DesktopClickTests.readyWorld() : try DesktopWorld()
            if !defaultBrowser {
                #expect(try world.run("init").status == 0)
                #expect(try world.run("browsers", "detect").status == 0)
            }
            world.environment["DISPLAY"] = server.display
        }

        deinit { server.stop() }

        /// `brsync ARGUMENTS` in the background (no terminal), and its window.
        /// - Parameter program: another program that runs brsync (an app a link comes from).
        func ask(_ arguments: [String], program: String? = nil) throws -> (process: BackgroundProcess, window: String) {
            let process = try BackgroundProcess(program ?? world.brsync, arguments, environment: world.environment)
            let found = try ProcessRunner.run(
                "/usr/bin/timeout",
                ["20", "/usr/bin/xdotool", "search", "--sync", "--onlyvisible", "--name", "^Open link — brsync$"],
                environment: ["DISPLAY": server.display])
            let window = try #require(
                found.stdout.split(separator: "\n").first.map(String.init), "no picker window: \(found) \(process.text)"
            )
            return (process, window)
        }

        /// Focuses `window` and presses `keys` (xdotool key names) in turn,
        /// as the keyboard does (XTEST, to the focused window): with
        /// `--window`, a key that closes the window would leave its release
        /// and its modifiers unsent, held down for the next window.
        func press(_ window: String, _ keys: String...) throws {
            _ = try xdotool(["windowfocus", "--sync", window])
            for key in keys { _ = try xdotool(["key", "--clearmodifiers", key]) }
        }

        func type(_ window: String, _ text: String) throws {
            _ = try xdotool(["windowfocus", "--sync", window])
            _ = try xdotool(["type", "--delay", "20", text])
        }

        @discardableResult
        func xdotool(_ arguments: [String]) throws -> ProcessResult {
            try ProcessRunner.run("/usr/bin/xdotool", arguments, environment: ["DISPLAY": server.display])
        }

        /// `window`'s size and place, as `xwininfo` reports them, with its report.
        func geometry(_ window: String) throws -> (width: Int, height: Int, x: Int, y: Int, info: String) {
            let info = try ProcessRunner.run(
                "/usr/bin/xwininfo", ["-id", window], environment: ["DISPLAY": server.display]
            ).stdout
            func number(_ label: String) -> Int {
                Int(
                    info.split(separator: "\n").first { $0.contains(label) }?.split(separator: ":").last?
                        .trimmingCharacters(in: .whitespaces) ?? "") ?? -1
            }
            return (
                number("Width"), number("Height"), number("Absolute upper-left X"), number("Absolute upper-left Y"),
                info
            )
        }

        /// The rules as `brsync rules list` prints them.
        func rules() throws -> String { try world.run("rules", "list").stdout }
    }

    static func ready() -> Bool {
        guard tools.allSatisfy({ FileManager.default.isExecutableFile(atPath: $0) }) else {
            Issue.record(
                "Xvfb, xdotool, xwininfo, xwd and xrdb are needed (scripts/setup installs xvfb, xdotool, x11-utils, x11-apps and x11-xserver-utils)"
            )
            return false
        }
        return true
    }

    @Test func aNumberChoosesAndTheWindowIsCentredWithItsTitle() throws {
        guard Self.ready() else { return }
        let session = try Session()
        let (process, window) = try session.ask(["pick", "https://example.org/page?id=1"])
        let (width, height, x, y, info) = try session.geometry(window)
        #expect(info.contains("\"Open link — brsync\""), "\(info)")
        #expect(width >= 400 && width <= 1024 && height >= 250 && height <= 768, "\(info)")
        #expect(
            abs(x - (1024 - width) / 2) <= 2 && abs(y - (768 - height) / 2) <= 2,
            "centred on the 1024x768 screen: \(info)")
        // A screenshot of the window as it is shown (an X window dump).
        let shot = session.world.directory.file("picker.xwd")
        #expect(
            try ProcessRunner.run(
                "/usr/bin/xwd", ["-id", window, "-silent", "-out", shot],
                environment: ["DISPLAY": session.server.display]
            ).status == 0)
        let size = (try? FileManager.default.attributesOfItem(atPath: shot)[.size] as? Int) ?? 0
        #expect(size > width * height * 3, "a whole window's pixels: \(size) bytes")

        try session.press(window, "2")
        #expect(process.wait(timeout: 20) == 0, "\(process.text)")
        // The browsers are listed by id: chrome, then firefox.
        #expect(
            session.world.waitForLaunch(count: 1).last?.hasSuffix("fakefox https://example.org/page?id=1") == true,
            "\(session.world.launched())")
    }

    @Test func arrowsAndEnterChoose() throws {
        guard Self.ready() else { return }
        let session = try Session()
        let (process, window) = try session.ask(["pick", "https://example.org/arrows"])
        try session.press(window, "Down", "Down", "Up", "Return")
        #expect(process.wait(timeout: 20) == 0, "\(process.text)")
        #expect(
            session.world.waitForLaunch(count: 1).last?.hasSuffix(
                "fakechrome --profile-directory=Default https://example.org/arrows") == true,
            "\(session.world.launched())")
    }

    /// The keys as a person uses them after Ctrl+E: Down and Up move
    /// through the browsers (not to the buttons); Enter on a focused button
    /// does what it says: Cancel cancels, and nothing is remembered.
    @Test func arrowsMoveThroughTheBrowsersAndEnterOnAButtonDoesWhatItSays() throws {
        guard Self.ready() else { return }
        let session = try Session()
        let before = try session.rules()
        let (cancelled, window) = try session.ask(["pick", "https://example.org/keys"])
        try session.press(window, "ctrl+e", "Tab", "Return") // the pattern field, then Cancel
        #expect(cancelled.wait(timeout: 20) == 1, "\(cancelled.text)")
        #expect(cancelled.text.contains("cancelled; nothing opened"), "\(cancelled.text)")
        usleep(200_000)
        #expect(try session.world.launched().isEmpty && session.rules() == before)
        // From the pattern field, Up moves the selection at once: from the default, Firefox, to the one above it.
        let (chosen, second) = try session.ask(["pick", "https://example.org/keys"])
        try session.press(second, "ctrl+e", "Up", "Return")
        #expect(chosen.wait(timeout: 20) == 0, "\(chosen.text)")
        #expect(
            session.world.waitForLaunch(count: 1).last?.hasSuffix(
                "fakechrome --profile-directory=Default https://example.org/keys") == true,
            "\(session.world.launched())")
        #expect(chosen.text.contains("remembered: example.org -> chrome"), "Ctrl+E asked to remember: \(chosen.text)")
        // Tab leaves the list for the Remember box and Shift+Tab comes back: the selection never moved.
        let (tabbed, third) = try session.ask(["pick", "https://example.org/tab"])
        try session.press(third, "Up", "Tab", "shift+Tab", "Return")
        #expect(tabbed.wait(timeout: 20) == 0, "\(tabbed.text)")
        #expect(
            session.world.waitForLaunch(count: 2).last?.hasSuffix(
                "fakechrome --profile-directory=Default https://example.org/tab") == true,
            "\(session.world.launched())")
        #expect(!tabbed.text.contains("remembered"), "nothing asked to remember: \(tabbed.text)")
    }

    /// Asked to choose although a rule decides (ask-next): the rule's
    /// browser is selected, not the default, so Enter opens what the rule says.
    @Test func askingAnywaySelectsTheRulesBrowser() throws {
        guard Self.ready() else { return }
        let session = try Session()
        #expect(try session.world.run("rules", "add", "decided.example", "chrome").status == 0)
        #expect(try session.world.run("ask-next").status == 0)
        let (process, window) = try session.ask(["open", "https://decided.example/a"])
        try session.press(window, "Return")
        #expect(process.wait(timeout: 20) == 0, "\(process.text)")
        #expect(
            session.world.waitForLaunch(count: 1).last?.hasSuffix(
                "fakechrome --profile-directory=Default https://decided.example/a") == true,
            "\(session.world.launched())")
    }

    @Test func escapeOpensNothingAndChangesNothing() throws {
        guard Self.ready() else { return }
        let session = try Session()
        let before = try session.rules()
        let (process, window) = try session.ask(["pick", "https://example.org/no"])
        try session.press(window, "ctrl+r", "Escape")
        #expect(process.wait(timeout: 20) == 1, "\(process.text)")
        #expect(process.text.contains("cancelled; nothing opened"), "\(process.text)")
        usleep(200_000)
        let after = try session.rules()
        #expect(session.world.launched().isEmpty && after == before)
    }

    /// Remembering saves the suggested pattern at the highest priority; the
    /// next link it matches opens without asking.
    @Test func rememberingSavesTheSuggestedPattern() throws {
        guard Self.ready() else { return }
        let session = try Session()
        let (process, window) = try session.ask(["pick", "https://docs.example.org/a"])
        try session.press(window, "ctrl+r", "1")
        #expect(process.wait(timeout: 20) == 0, "\(process.text)")
        #expect(process.text.contains("remembered: example.org -> chrome"), "\(process.text)")
        #expect(
            session.world.waitForLaunch(count: 1).last?.hasSuffix(
                "fakechrome --profile-directory=Default https://docs.example.org/a") == true)
        // Firefox is the default; the remembered rule decides, with no window.
        let next = try session.world.run("open", "https://www.example.org/b")
        #expect(next.status == 0, "\(next)")
        #expect(
            session.world.waitForLaunch(count: 2).last?.hasSuffix(
                "fakechrome --profile-directory=Default https://www.example.org/b") == true,
            "\(session.world.launched())")
    }

    /// A link clicked in an app: the window offers to remember for that
    /// app's links only (Ctrl+F), and the rule made decides only them.
    @Test func rememberingCanBeForTheAppTheLinkCameFrom() throws {
        guard Self.ready() else { return }
        let session = try Session()
        let app = session.world.directory.file("bin/mailapp")
        try writeScript(app, "#!/bin/sh\n'\(session.world.brsync)' \"$@\"\n")
        #expect(try session.world.run("ask-next").status == 0) // Firefox, the default, would decide
        let (process, window) = try session.ask(["open", "https://docs.example.org/a"], program: app)
        try session.press(window, "ctrl+r", "ctrl+f", "1")
        #expect(process.wait(timeout: 20) == 0, "\(process.text)")
        #expect(process.text.contains("remembered: from:mailapp example.org -> chrome"), "\(process.text)")
        #expect(try session.rules().contains("from:mailapp example.org"))
        #expect(try session.world.run("resolve", "https://www.example.org/b").stdout.hasPrefix("firefox\t"))
        #expect(
            try session.world.run("resolve", "--from-app", "mailapp", "https://www.example.org/b").stdout.hasPrefix(
                "chrome\t"))
        // Asked again while that rule decides: it is offered as the plain
        // pattern with the app's box ticked, so Ctrl+F makes it for every app.
        #expect(try session.world.run("ask-next").status == 0)
        let (again, secondWindow) = try session.ask(["open", "https://docs.example.org/c"], program: app)
        try session.press(secondWindow, "ctrl+r", "ctrl+f", "1")
        #expect(again.wait(timeout: 20) == 0, "\(again.text)")
        #expect(again.text.contains("remembered: example.org -> chrome"), "\(again.text)")
        #expect(try session.world.run("resolve", "https://www.example.org/d").stdout.hasPrefix("chrome\t"))
    }

    /// An invalid pattern is reported under the field as it is typed; Open
    /// still opens the link, and nothing is remembered.
    @Test func anInvalidPatternStillOpensTheLink() throws {
        guard Self.ready() else { return }
        let session = try Session()
        let before = try session.rules()
        let (process, window) = try session.ask(["pick", "https://example.org/typed"])
        try session.press(window, "ctrl+e", "ctrl+a")
        try session.type(window, "bad pattern")
        try session.press(window, "Return")
        #expect(process.wait(timeout: 20) == 0, "\(process.text)")
        #expect(process.text.contains("not remembered: it contains whitespace"), "\(process.text)")
        #expect(session.world.waitForLaunch(count: 1).last?.hasSuffix("https://example.org/typed") == true)
        #expect(try session.rules() == before)
    }

    /// What a screen reader finds, read over AT-SPI (D-Bus, as Orca reads
    /// it) by Tests/Scripts/picker-accessibility.py: the window, the link, the
    /// list and each browser named with its number, profile and the default;
    /// every control that takes the focus named (no mnemonic underscores, no
    /// doubled names), icons left out; the pattern typed through AT-SPI's
    /// editable text and Open pressed by its accessible action.
    @Test func screenReadersFindEveryControlNamed() throws {
        guard Self.ready() else { return }
        let script = Repository.file("Tests/Scripts/picker-accessibility.py")
        let atspi = try ProcessRunner.run(
            "/usr/bin/python3",
            ["-c", "import gi; gi.require_version('Atspi', '2.0'); from gi.repository import Atspi"])
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-daemon"), atspi.status == 0 else {
            Issue.record(
                "dbus-daemon and Python's AT-SPI bindings are needed (scripts/setup installs dbus-bin, dbus-daemon, at-spi2-core, python3-gi, gir1.2-atspi-2.0)"
            )
            return
        }
        let server = try XvfbDesktopTests.XServer()
        defer { server.stop() }
        let request = WindowPicker.Request(
            url: "https://example.org/a",
            choices: [
                .init(id: "firefox", name: "Firefox", isDefault: true, hasPrivateWindow: true),
                .init(id: "work", name: "Work", profile: "-P work"),
            ], suggestedPattern: "example.org")
        // The accessibility bus's socket goes in a runtime folder of this test's own.
        let runtime = try TemporaryDirectory(prefix: "brsync-a11y")
        defer { runtime.remove() }
        chmod(runtime.path, 0o700)
        let run = try ProcessRunner.run(
            "/usr/bin/timeout",
            [
                "-k", "5", "80", "/usr/bin/python3", "-W", "ignore", script,
                ProcessRunner.binary("brsync-picker"), request.json.jsonText,
            ],
            environment: [
                "DISPLAY": server.display, "WAYLAND_DISPLAY": "", "GTK_A11Y": "atspi",
                "XDG_RUNTIME_DIR": runtime.path, "NO_AT_BRIDGE": "0",
            ], timeout: 90)
        #expect(run.status == 0, "\(run)")
        let nodes = run.stdout.split(separator: "\n").filter { $0.hasPrefix("NODE ") }.compactMap {
            line -> [String: JSONValue]? in
            guard case .object(let object)? = try? JSONValue.parse(String(line.dropFirst(5))) else { return nil }
            return object
        }
        func named(_ role: String) -> [String] {
            nodes.filter { $0["role"]?.stringValue == role }.compactMap { $0["name"]?.stringValue }
        }
        #expect(named("frame") == ["Open link — brsync"], "\(run.stdout)")
        #expect(named("label").contains("Link: https://example.org/a"))
        #expect(named("list") == ["Browsers"])
        #expect(
            named("list item") == ["1: Firefox, the default browser, has a private window", "2: Work, profile -P work"])
        #expect(named("check box") == ["Remember for this domain"])
        #expect(named("text") == ["Pattern to remember"])
        #expect(named("push button") == ["Cancel", "Private window", "Open"])
        for node in nodes where node["role"]?.stringValue == "push button" {
            #expect(node["actions"] == .array([.string("click")]), "\(node)")
        }
        for node in nodes where node["focusable"]?.boolValue == true {
            let name = node["name"]?.stringValue ?? ""
            let words = name.split(separator: " ")
            #expect(
                !name.isEmpty && !name.contains("_") && !(words.count == 2 && words[0] == words[1]),
                "a control a screen reader cannot name: \(node)")
        }
        #expect(!nodes.contains { $0["role"]?.stringValue == "image" }, "icons are decorative")
        #expect(
            run.stdout.contains(#""notRemembered":"it contains whitespace"#) && run.stdout.contains("EXIT 0"),
            "\(run.stdout)")
        #expect(run.stdout.contains("RENAMED Remember"), "\(run.stdout)")
    }

    /// At 1.5× text (Xft.dpi 144, as a desktop's large-text setting sets it)
    /// the window grows with its text, still fits the screen, is centred and
    /// works.
    @Test func largerTextStillFitsAndWorks() throws {
        guard Self.ready() else { return }
        let session = try Session()
        let (normal, first) = try session.ask([
            "pick", "https://example.org/normal/text?with=a&long=query&that=goes&on=and&on=again",
        ])
        let small = try session.geometry(first)
        try session.press(first, "Escape")
        #expect(normal.wait(timeout: 20) == 1, "\(normal.text)")

        let resources = Shell.run(
            "echo 'Xft.dpi: 144' | /usr/bin/xrdb -merge", environment: ["DISPLAY": session.server.display])
        #expect(resources.status == 0, "\(resources)")
        let (large, second) = try session.ask([
            "pick", "https://example.org/large/text?with=a&long=query&that=goes&on=and&on=again",
        ])
        let big = try session.geometry(second)
        #expect(
            big.height >= small.height + 24,
            "taller with larger text: \(small.width)x\(small.height) → \(big.width)x\(big.height)")
        #expect(big.width <= 1024 && big.height <= 768 && big.x >= 0 && big.y >= 0, "on the screen: \(big.info)")
        #expect(
            abs(big.x - (1024 - big.width) / 2) <= 2 && abs(big.y - (768 - big.height) / 2) <= 2, "centred: \(big.info)"
        )
        try session.press(second, "2")
        #expect(large.wait(timeout: 20) == 0, "\(large.text)")
        #expect(
            session.world.waitForLaunch(count: 1).last?.hasSuffix(
                "fakefox https://example.org/large/text?with=a&long=query&that=goes&on=and&on=again") == true,
            "\(session.world.launched())")
    }

    /// Shift+Enter opens a private window: with the desktop entry's action
    /// (firefox), the flag of a known browser whose entry has none (chrome),
    /// for a profile its base browser's with the profile's arguments; a
    /// browser with neither says so and the window stays.
    @Test func shiftEnterOpensAPrivateWindow() throws {
        guard Self.ready() else { return }
        let session = try Session()
        #expect(try session.world.run("browsers", "add", "work", "--from", "firefox", "--args=-P work").status == 0)
        #expect(try session.world.run("browsers", "add", "plain", "--exec", "fakechrome --plain %u").status == 0)
        // Listed: chrome, firefox, plain, work; firefox, the default, selected first.
        let (process, window) = try session.ask(["pick", "https://example.org/private"])
        try session.press(window, "Down", "shift+Return")
        usleep(500_000)
        #expect(process.isRunning && session.world.launched().isEmpty, "\(process.text)")
        try session.press(window, "Up", "shift+Return")
        #expect(process.wait(timeout: 20) == 0, "\(process.text)")
        #expect(
            session.world.waitForLaunch(count: 1).last?.hasSuffix(
                "fakefox --private-window https://example.org/private") == true,
            "\(session.world.launched())")

        let (chrome, second) = try session.ask(["pick", "https://example.org/chrome"])
        try session.press(second, "Up", "shift+Return")
        #expect(chrome.wait(timeout: 20) == 0, "\(chrome.text)")
        #expect(
            session.world.waitForLaunch(count: 2).last?.hasSuffix(
                "fakechrome --profile-directory=Default --incognito https://example.org/chrome") == true,
            "\(session.world.launched())")

        let (profile, third) = try session.ask(["pick", "https://example.org/work"])
        try session.press(third, "Down", "Down", "shift+Return")
        #expect(profile.wait(timeout: 20) == 0, "\(profile.text)")
        #expect(
            session.world.waitForLaunch(count: 3).last?.hasSuffix(
                "fakefox -P work --private-window https://example.org/work") == true,
            "\(session.world.launched())")
    }

    /// The default browser is selected when the window opens: a quick
    /// Enter opens what a click with no rule would, not the first row.
    @Test func aQuickEnterOpensTheDefaultBrowser() throws {
        guard Self.ready() else { return }
        let session = try Session()
        let (process, window) = try session.ask(["pick", "https://example.org/quick"])
        try session.press(window, "Return")
        #expect(process.wait(timeout: 20) == 0, "\(process.text)")
        #expect(
            session.world.waitForLaunch(count: 1).last?.hasSuffix("fakefox https://example.org/quick") == true,
            "\(session.world.launched())")
    }

    /// No tooltip covers the browsers: not when the window opens under a
    /// still pointer, nor when the pointer moves over the rows or the link
    /// (the keys are in the line under the pattern; the link is shown whole).
    @Test func noTooltipCoversTheBrowsers() throws {
        guard Self.ready() else { return }
        let session = try Session()
        // The window is centred: the pointer rests over its first row.
        try session.xdotool(["mousemove", "512", "300"])
        let (process, window) = try session.ask([
            "pick", "https://example.org/" + String(repeating: "long/path/", count: 30),
        ])
        func shown() throws -> [String] {
            try session.xdotool(["search", "--onlyvisible", "--class", "brsync-picker"]).stdout.split(separator: "\n")
                .map(String.init)
        }
        usleep(1_500_000) // three times GTK's tooltip delay
        #expect(try shown() == [window], "a tooltip showed under the still pointer")
        // Over the rows, then over the link, as a hand moves: several small steps.
        let (_, _, x, y, _) = try session.geometry(window)
        for (targetX, targetY) in [(512, 300), (x + 60, y + 50)] {
            for step in 1...5 {
                try session.xdotool(["mousemove", String(targetX + 3 * step), String(targetY + 2 * step)])
                usleep(80_000)
            }
            usleep(1_500_000)
            #expect(try shown() == [window], "a tooltip over (\(targetX), \(targetY))")
        }
        try session.press(window, "Escape")
        #expect(process.wait(timeout: 20) == 1, "\(process.text)")
    }

    /// Alt+Down moves a browser, Ctrl+H hides one; both are saved (synced
    /// browser fields) when a browser is opened, and the next window follows.
    @Test func browsersMoveAndHideInTheWindow() throws {
        guard Self.ready() else { return }
        let session = try Session()
        let (process, window) = try session.ask(["pick", "https://example.org/move"])
        try session.press(window, "alt+Up", "1")
        #expect(process.wait(timeout: 20) == 0, "\(process.text)")
        #expect(process.text.contains("picker order: firefox, chrome"), "\(process.text)")
        #expect(
            session.world.waitForLaunch(count: 1).last?.hasSuffix("fakefox https://example.org/move") == true,
            "\(session.world.launched())")
        #expect(try session.world.run("browsers", "order").stdout == "1. firefox\n2. chrome\n")

        // Esc after moving: nothing is saved.
        let (cancelled, shown) = try session.ask(["pick", "https://example.org/none"])
        try session.press(shown, "alt+Down", "ctrl+h", "Escape")
        #expect(cancelled.wait(timeout: 20) == 1, "\(cancelled.text)")
        #expect(try session.world.run("browsers", "order").stdout == "1. firefox\n2. chrome\n")

        let (hiding, next) = try session.ask(["pick", "https://example.org/hide"])
        try session.press(next, "ctrl+h", "1")
        #expect(hiding.wait(timeout: 20) == 0, "\(hiding.text)")
        #expect(hiding.text.contains("hidden from the picker: firefox"), "\(hiding.text)")
        #expect(
            session.world.waitForLaunch(count: 2).last?.hasSuffix(
                "fakechrome --profile-directory=Default https://example.org/hide") == true,
            "\(session.world.launched())")
        #expect(try session.world.run("browsers", "order").stdout == "1. firefox (hidden)\n2. chrome\n")
    }

    /// A click no rule decides, with no default browser: the window asks.
    @Test func aClickNoRuleDecidesAsksInTheWindow() throws {
        guard Self.ready() else { return }
        let session = try Session(defaultBrowser: false)
        let (process, window) = try session.ask(["open", "https://example.net/clicked"])
        try session.press(window, "1")
        #expect(process.wait(timeout: 20) == 0, "\(process.text)")
        #expect(
            session.world.waitForLaunch(count: 1).last?.hasSuffix(
                "fakechrome --profile-directory=Default https://example.net/clicked") == true,
            "\(session.world.launched())")
    }
}
