import Foundation
import Testing
import TestSupport

/// The picker window (`brsync-picker`, GTK 4) on a real X server (Xvfb),
/// started by `brsync pick`/`open` with no terminal and driven with xdotool
/// as a person would: by number, by arrows, Esc, remember, an invalid pattern.
@Suite(.serialized) struct PickerWindowTests {
    static let tools = ["/usr/bin/Xvfb", "/usr/bin/xdotool", "/usr/bin/xwininfo", "/usr/bin/xwd"]

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
        func ask(_ arguments: [String]) throws -> (process: BackgroundProcess, window: String) {
            let process = try BackgroundProcess(world.brsync, arguments, environment: world.environment)
            let found = try ProcessRunner.run("/usr/bin/timeout", ["20", "/usr/bin/xdotool", "search", "--sync", "--onlyvisible", "--name", "^Open link — brsync$"],
                                              environment: ["DISPLAY": server.display])
            let window = try #require(found.stdout.split(separator: "\n").first.map(String.init), "no picker window: \(found) \(process.text)")
            return (process, window)
        }

        /// Focuses `window` and presses `keys` (xdotool key names) in turn.
        func press(_ window: String, _ keys: String...) throws {
            _ = try xdotool(["windowfocus", "--sync", window])
            for key in keys { _ = try xdotool(["key", "--window", window, key]) }
        }

        func type(_ window: String, _ text: String) throws {
            _ = try xdotool(["type", "--window", window, "--delay", "20", text])
        }

        @discardableResult
        func xdotool(_ arguments: [String]) throws -> ProcessResult {
            try ProcessRunner.run("/usr/bin/xdotool", arguments, environment: ["DISPLAY": server.display])
        }

        /// The rules as `brsync rules list` prints them.
        func rules() throws -> String { try world.run("rules", "list").stdout }
    }

    static func ready() -> Bool {
        guard tools.allSatisfy({ FileManager.default.isExecutableFile(atPath: $0) }) else {
            Issue.record("Xvfb, xdotool, xwininfo and xwd are needed (scripts/setup installs xvfb, xdotool, x11-utils and x11-apps)")
            return false
        }
        return true
    }

    @Test func aNumberChoosesAndTheWindowIsCentredWithItsTitle() throws {
        guard Self.ready() else { return }
        let session = try Session()
        let (process, window) = try session.ask(["pick", "https://example.org/page?id=1"])
        let info = try ProcessRunner.run("/usr/bin/xwininfo", ["-id", window], environment: ["DISPLAY": session.server.display]).stdout
        func number(_ label: String) -> Int { Int(info.split(separator: "\n").first { $0.contains(label) }?.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") ?? -1 }
        let (width, height, x, y) = (number("Width"), number("Height"), number("Absolute upper-left X"), number("Absolute upper-left Y"))
        #expect(info.contains("\"Open link — brsync\""), "\(info)")
        #expect(width >= 400 && width <= 1024 && height >= 250 && height <= 768, "\(info)")
        #expect(abs(x - (1024 - width) / 2) <= 2 && abs(y - (768 - height) / 2) <= 2, "centred on the 1024x768 screen: \(info)")
        // A screenshot of the window as it is shown (an X window dump).
        let shot = session.world.directory.file("picker.xwd")
        #expect(try ProcessRunner.run("/usr/bin/xwd", ["-id", window, "-silent", "-out", shot], environment: ["DISPLAY": session.server.display]).status == 0)
        let size = (try? FileManager.default.attributesOfItem(atPath: shot)[.size] as? Int) ?? 0
        #expect(size > width * height * 3, "a whole window's pixels: \(size) bytes")

        try session.press(window, "2")
        #expect(process.wait(timeout: 20) == 0, "\(process.text)")
        // The browsers are listed by id: chrome, then firefox.
        #expect(session.world.waitForLaunch(count: 1).last?.hasSuffix("fakefox https://example.org/page?id=1") == true, "\(session.world.launched())")
    }

    @Test func arrowsAndEnterChoose() throws {
        guard Self.ready() else { return }
        let session = try Session()
        let (process, window) = try session.ask(["pick", "https://example.org/arrows"])
        try session.press(window, "Down", "Down", "Up", "Return")
        #expect(process.wait(timeout: 20) == 0, "\(process.text)")
        #expect(session.world.waitForLaunch(count: 1).last?.hasSuffix("fakechrome --profile-directory=Default https://example.org/arrows") == true,
                "\(session.world.launched())")
    }

    @Test func escapeOpensNothingAndChangesNothing() throws {
        guard Self.ready() else { return }
        let session = try Session()
        let before = try session.rules()
        let (process, window) = try session.ask(["pick", "https://example.org/no"])
        try session.press(window, "ctrl+r", "Escape")
        #expect(process.wait(timeout: 20) == 3, "\(process.text)")
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
        #expect(session.world.waitForLaunch(count: 1).last?.hasSuffix("fakechrome --profile-directory=Default https://docs.example.org/a") == true)
        // Firefox is the default; the remembered rule decides, with no window.
        let next = try session.world.run("open", "https://www.example.org/b")
        #expect(next.status == 0, "\(next)")
        #expect(session.world.waitForLaunch(count: 2).last?.hasSuffix("fakechrome --profile-directory=Default https://www.example.org/b") == true,
                "\(session.world.launched())")
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

    /// A click no rule decides, with no default browser: the window asks.
    @Test func aClickNoRuleDecidesAsksInTheWindow() throws {
        guard Self.ready() else { return }
        let session = try Session(defaultBrowser: false)
        let (process, window) = try session.ask(["open", "https://example.net/clicked"])
        try session.press(window, "1")
        #expect(process.wait(timeout: 20) == 0, "\(process.text)")
        #expect(session.world.waitForLaunch(count: 1).last?.hasSuffix("fakechrome --profile-directory=Default https://example.net/clicked") == true,
                "\(session.world.launched())")
    }
}
