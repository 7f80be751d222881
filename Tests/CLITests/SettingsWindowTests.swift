import Foundation
import JSON
import TestSupport
import Testing

/// The settings window (`brsync-settings`, GTK 4) on a real X server (Xvfb),
/// driven through AT-SPI as a screen reader user drives it
/// (Tests/Scripts/settings-accessibility.py), with the real binaries and a
/// real replica; what it did is then checked with the commands.
@Suite(.serialized) struct SettingsWindowTests {
    /// What the script printed, by kind.
    struct Run {
        let result: ProcessResult
        var lines: [String] { result.stdout.split(separator: "\n").map(String.init) }
        func values(_ kind: String) -> [String] {
            lines.filter { $0.hasPrefix(kind + " ") }.map { String($0.dropFirst(kind.count + 1)) }
        }
        var nodes: [[String: JSONValue]] {
            values("NODE").compactMap {
                guard case .object(let object)? = try? JSONValue.parse($0) else { return nil }
                return object
            }
        }
        var exitStatus: String? { values("EXIT").first }
    }

    /// A ready world (``DesktopClickTests/readyWorld()``), or nil (recorded
    /// as an issue) when this machine cannot drive the window.
    static func readyWorld() throws -> DesktopWorld? {
        guard ready() else { return nil }
        return try DesktopClickTests.readyWorld()
    }

    static func ready() -> Bool {
        let needed = PickerWindowTests.tools + ["/usr/bin/dbus-daemon"]
        let atspi = try? ProcessRunner.run(
            "/usr/bin/python3",
            ["-c", "import gi; gi.require_version('Atspi', '2.0'); from gi.repository import Atspi"])
        guard needed.allSatisfy(FileManager.default.isExecutableFile(atPath:)), atspi?.status == 0 else {
            Issue.record(
                "Xvfb, xdotool, dbus-daemon and Python's AT-SPI bindings are needed (scripts/setup installs them)")
            return false
        }
        return true
    }

    /// Opens the window on the replica in `home` and runs `steps` (see the script).
    /// Drives the window on `world`'s replica, with its programs on PATH.
    static func drive(
        in world: DesktopWorld, environment extra: [String: String] = [:], _ steps: [String]
    ) throws
        -> Run
    {
        try drive(home: world.directory.file("brsync"), path: world.environment["PATH"], environment: extra, steps)
    }

    static func drive(
        home: String, path: String? = nil, environment extra: [String: String] = [:], _ steps: [String]
    ) throws -> Run {
        let server = try XvfbDesktopTests.XServer()
        defer { server.stop() }
        let runtime = try TemporaryDirectory(prefix: "brsync-a11y")
        defer { runtime.remove() }
        chmod(runtime.path, 0o700)
        let result = try ProcessRunner.run(
            "/usr/bin/timeout",
            [
                "-k", "5", "100", "/usr/bin/python3", "-W", "ignore",
                Repository.file("Tests/Scripts/settings-accessibility.py"), ProcessRunner.binary("brsync-settings"),
            ] + steps,
            environment: [
                "DISPLAY": server.display, "WAYLAND_DISPLAY": "", "GTK_A11Y": "atspi", "XDG_RUNTIME_DIR": runtime.path,
                "NO_AT_BRIDGE": "0", "BRSYNC_HOME": home, "PATH": path ?? "/usr/bin:/bin",
                // (XDG_DATA_DIRS stays the system's: the accessibility bus reads its settings schemas there.)
                "HOME": runtime.path, "XDG_DATA_HOME": runtime.file("data"), "XDG_CONFIG_HOME": runtime.file("config"),
            ].merging(extra) { _, given in given }, timeout: 110)
        return Run(result: result)
    }

    /// A rule added in the window decides links at once: `resolve` (another
    /// process) says so. A pattern that is none, and a priority that is no
    /// number, are said in the window and change nothing; what was typed stays.
    @Test func aRuleAddedInTheWindowDecidesLinks() throws {
        guard let world = try Self.readyWorld() else { return }
        #expect(try world.run("browsers", "default", "--clear").status == 0)
        let before = try world.run("resolve", "https://news.example/story")
        #expect(before.status != 0, "\(before)")
        let rulesBefore = try world.run("rules", "list", "--json").stdout
        let run = try Self.drive(
            in: world,
            [
                "text:Pattern=bad pattern", "press:Save", "find:label:it contains whitespace",
                "text:Pattern=news.example", "text:Priority=high", "press:Save", "find:label:Status: Priority:",
                "run:\(world.brsync) rules list --json > \(world.directory.file("unchanged"))",
                "text:Priority=", "press:Save", "find:label:Status: Added rule news.example",
                "find:panel:news.example, opens in",
            ])
        #expect(run.exitStatus == "0", "\(run.result)")
        let added = try #require(run.values("FOUND").first { $0.hasPrefix("Status: Added rule") }, "\(run.result)")
        let unchanged = try String(contentsOfFile: world.directory.file("unchanged"), encoding: .utf8)
        #expect(unchanged == rulesBefore, "bad input changed the rules")
        let after = try world.run("resolve", "https://news.example/story")
        #expect(after.status == 0, "\(after)")
        // The browser the window said is the one resolve now names.
        let browser = try #require(added.split(separator: "→").last?.split(separator: " ").first.map(String.init))
        #expect(after.stdout.contains(browser) && after.stdout.contains("news.example"), "\(after) \(added)")
    }

    /// The rule in the editor changes elsewhere (a sync, a terminal): the
    /// fields follow it while nothing was typed; once something was typed,
    /// the untouched fields follow and the typed ones stay, the person is
    /// told, and Save writes only what was typed (the other change is kept).
    @Test func aRuleChangedElsewhereWhileShownIsNeverPutBack() throws {
        guard let world = try Self.readyWorld() else { return }
        let home = world.directory.file("brsync")
        let brsync = "BRSYNC_HOME='\(home)' \(world.brsync)"
        let run = try Self.drive(
            in: world,
            [
                "text:Pattern=news.example", "text:Priority=5", "press:Save",
                "find:label:Status: Added rule news.example",
                "run:\(brsync) rules add news.example chrome --priority 50",
                "find:label:Status: This rule changed elsewhere: it is shown as it is now (chrome, priority 50)",
                "text:Priority=7", "run:\(brsync) rules add news.example firefox --priority 60",
                "find:label:Status: This rule changed elsewhere while you edited it (now: firefox, priority 60)",
                "press:Save", "find:label:Status: Saved rule news.example → firefox (priority 7)",
            ])
        #expect(run.exitStatus == "0", "\(run.result)")
        let rules = try world.run("rules", "list", "--json").stdout
        #expect(
            rules.contains(#""pattern":"news.example""#) && rules.contains(#""browser":"firefox""#)
                && rules.contains(#""priority":7"#), "\(rules)")
    }

    /// "Test a link" says which browser opens a link and why, for a link
    /// clicked anywhere and in one app; a link that is none is said so.
    @Test func testingALinkSaysWhatOpensItAndWhy() throws {
        guard let world = try Self.readyWorld() else { return }
        #expect(try world.run("rules", "add", "github.com", "chrome").status == 0)
        #expect(try world.run("rules", "add", "--from-app", "thunderbird", "github.com", "firefox").status == 0)
        let run = try Self.drive(
            in: world,
            [
                "text:Link to test=https://www.github.com/me/x?utm_source=mail",
                "find:label:Result: Opens in Chrome (chrome): the rule github.com decides.",
                "find:label:url: https://www.github.com/me/x?utm_source=mail",
                "text:Clicked in app=thunderbird",
                "find:label:Result: Opens in Firefox (firefox): the rule from:thunderbird github.com decides.",
                "text:Link to test=https://news.example/", "find:label:Result: Opens in Firefox (firefox), the default",
                "text:Link to test=javascript:alert(1)", "find:label:Result: not a web URL",
            ])
        #expect(run.exitStatus == "0", "\(run.result)")
        #expect(run.values("FOUND").count == 5, "\(run.result)")
    }

    /// Removing a browser in the window marks the rules that name it, as
    /// `rules list` does.
    @Test func removingABrowserMarksItsRules() throws {
        guard let world = try Self.readyWorld() else { return }
        #expect(try world.run("rules", "add", "github.com", "chrome").status == 0)
        let run = try Self.drive(
            in: world,
            [
                "key:ctrl+2", "press:Remove Chrome (chrome)", "find:frame:Remove Chrome (chrome)?",
                "press:Remove Chrome (chrome) from every machine", "find:label:Status: Removed Chrome (chrome)",
                "key:ctrl+1",
                "find:panel:github.com, opens in chrome, priority 0. Decides nothing here: browser 'chrome'",
            ])
        #expect(run.exitStatus == "0", "\(run.result)")
        let list = try world.run("rules", "list").stdout
        #expect(list.contains("decides nothing"), "\(list)")
    }

    /// Edits made elsewhere (here a command in a terminal) show without
    /// reopening the window.
    @Test func editsMadeElsewhereShowInTheWindow() throws {
        guard let world = try Self.readyWorld() else { return }
        let home = world.directory.file("brsync")
        let run = try Self.drive(
            home: home, path: world.environment["PATH"],
            [
                "find:label:0 rules",
                "run:BRSYNC_HOME='\(home)' \(world.brsync) rules add elsewhere.example chrome",
                "find:panel:elsewhere.example, opens in chrome", "find:label:1 rule",
            ])
        #expect(run.exitStatus == "0", "\(run.result)")
    }

    /// What a screen reader finds: every control that takes the focus is
    /// named, with no GTK class names and no mnemonic underscores; the rows
    /// say their rule or browser; buttons can be pressed by their action.
    @Test func everyControlIsNamedForScreenReaders() throws {
        guard let world = try Self.readyWorld() else { return }
        #expect(try world.run("rules", "add", "github.com", "chrome").status == 0)
        let run = try Self.drive(
            in: world,
            ["dump", "key:ctrl+2", "dump", "key:ctrl+3", "dump", "key:ctrl+4", "dump"])
        #expect(run.exitStatus == "0", "\(run.result)")
        let nodes = run.nodes
        #expect(nodes.count > 40, "\(run.result)")
        // (What is on the page shown: GTK's own pop-ups, not shown, keep their class names.)
        for node in nodes where node["focusable"] == .bool(true) && node["showing"] == .bool(true) {
            let name = node["name"]?.stringValue ?? ""
            #expect(!name.isEmpty && !name.hasPrefix("Gtk") && !name.contains("_"), "unnamed: \(node)")
        }
        func named(_ role: String) -> Set<String> {
            Set(nodes.filter { $0["role"]?.stringValue == role }.compactMap { $0["name"]?.stringValue })
        }
        #expect(named("frame") == ["brsync Settings"])
        #expect(named("text").isSuperset(of: ["Pattern", "Priority", "Only links from app", "Link to test"]))
        #expect(named("entry").contains("Search rules"))
        #expect(named("list").isSuperset(of: ["Rules", "Browsers"]))
        #expect(named("panel").contains("github.com, opens in chrome, priority 0"), "\(named("panel"))")
        #expect(named("check box").contains("Chrome (chrome) enabled"))
        let descriptions = Set(nodes.compactMap { $0["description"]?.stringValue })
        #expect(descriptions.isSuperset(of: ["Remove Chrome (chrome)", "Remove Firefox (firefox)"]), "\(descriptions)")
        for node in nodes
        where node["role"]?.stringValue == "push button" && node["showing"] == .bool(true) {
            #expect(node["actions"] == .array([.string("click")]), "\(node)")
        }
    }

    /// A profile another machine made, with arguments synced data alone may
    /// not choose, waits in the window too; approving it shows exactly what
    /// would run first, and only the second press approves it.
    @Test func approvingAProfileMadeOnAnotherMachine() throws {
        guard Self.ready() else { return }
        let world = try CLIWorld(.sqlite)
        let (laptop, desktop) = (try world.replica("laptop"), try world.replica("desktop"))
        // An encrypted account: its server cannot look at profiles, so the machines check them.
        try world.encryptAccount(on: laptop, sharingWith: [desktop])
        for home in [laptop, desktop] {
            try world.mustRun(home, ["browsers", "add", "chromium", "--exec", "/bin/true %u"])
        }
        try world.mustRun(
            laptop,
            ["browsers", "add", "work", "--from", "chromium", "--args", "--renderer-cmd-prefix=touch /tmp/pwned"])
        try world.mustRun(laptop, ["sync"])
        try world.mustRun(desktop, ["sync"])
        #expect(try world.run(desktop, ["browsers", "list"]).stdout.contains("waits for approval"))
        // Named after its base and arguments, as the laptop made it.
        let shown = "Approve Chromium (--renderer-cmd-prefix=touch /tmp/pwned) (work)"
        let run = try Self.drive(
            home: desktop,
            [
                "key:ctrl+2", "find:label:Waits for your approval", "press:\(shown)…",
                "find:label:work is a synced profile of chromium",
                "run:BRSYNC_HOME='\(desktop)' \(world.brsync) browsers list > '\(world.directory.file("asked"))'",
                "press:Approve work", "find:label:Status: Approved work",
            ])
        #expect(run.exitStatus == "0", "\(run.result)")
        #expect(
            run.values("FOUND").contains { $0.contains("/bin/true --renderer-cmd-prefix=touch /tmp/pwned") },
            "\(run.result)")
        let asked = try String(contentsOfFile: world.directory.file("asked"), encoding: .utf8)
        #expect(asked.contains("waits for approval"), "approved before the second press: \(asked)")
        let list = try world.run(desktop, ["browsers", "list"]).stdout
        #expect(!list.contains("waits for approval"), "\(list)")
    }

    /// `brsync settings` starts the window beside it, for its --home; with no
    /// display it says so and that every setting is a command.
    @Test func theSettingsCommandNeedsADisplay() throws {
        let world = try DesktopClickTests.readyWorld()
        let refused = try world.run("settings")
        #expect(refused.status == 2 && refused.stderr.contains("no display"), "\(refused)")
    }

    /// The application menu's entry (Deploy/brsync-settings.desktop, as
    /// scripts/install writes it) passes desktop-file-validate and starts
    /// `brsync settings` from where brsync is installed.
    @Test func theMenuEntryIsValid() throws {
        let validate = "/usr/bin/desktop-file-validate"
        guard FileManager.default.isExecutableFile(atPath: validate) else {
            Issue.record("desktop-file-validate is missing (scripts/setup installs desktop-file-utils)")
            return
        }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let template = try String(contentsOfFile: Repository.file("Deploy/brsync-settings.desktop"), encoding: .utf8)
        let entry = template.replacingOccurrences(of: "@BINDIR@", with: "/home/someone/.local/bin")
        #expect(entry.contains("Exec=/home/someone/.local/bin/brsync settings\n"), "\(entry)")
        try entry.write(toFile: directory.file("brsync-settings.desktop"), atomically: true, encoding: .utf8)
        let result = try ProcessRunner.run(validate, [directory.file("brsync-settings.desktop")])
        #expect(result.status == 0 && result.stdout.isEmpty && result.stderr.isEmpty, "\(result)")
    }

    /// The tracking parameters: one added, one removed, a name that is none
    /// said as it is typed; `cleanup show` (another process) sees the list.
    @Test func theTrackingParametersChangeInTheWindow() throws {
        guard let world = try Self.readyWorld() else { return }
        let run = try Self.drive(
            in: world,
            [
                "key:ctrl+3", "text:Parameter to take off links=bad name",
                "find:label:a parameter name holds only A-Z",
                "text:Parameter to take off links=tracker_id", "press:Add", "find:label:Status: Added tracker_id",
                "find:push button:utm_*", "press:Remove utm_*", "find:label:Status: Removed utm_*",
            ])
        #expect(run.exitStatus == "0", "\(run.result)")
        let shown = try world.run("cleanup", "show").stdout
        #expect(shown.contains("tracker_id") && !shown.contains("utm_*") && shown.contains("synced list"), "\(shown)")
    }

    /// "Make brsync the default browser" does what `brsync install` does: the
    /// MIME defaults point at brsync.desktop, which opens links with this
    /// replica; "Put the previous default back" restores the one there was.
    @Test func theDefaultBrowserIsFixedFromTheWindow() throws {
        guard let world = try Self.readyWorld() else { return }
        let config = world.directory.file("config")
        try FileManager.default.createDirectory(atPath: config, withIntermediateDirectories: true)
        try "[Default Applications]\nx-scheme-handler/http=firefox.desktop\nx-scheme-handler/https=firefox.desktop\n"
            .write(toFile: config + "/mimeapps.list", atomically: true, encoding: .utf8)
        let run = try Self.drive(
            in: world,
            environment: ["XDG_CONFIG_HOME": config, "XDG_DATA_HOME": world.directory.file("data")],
            [
                "key:ctrl+4", "find:label:web links (http): firefox",
                "press:Make brsync the default browser", "find:label:Status: brsync is the default browser",
                "find:label:brsync opens web links and HTML files here",
                "run:cat '\(config)/mimeapps.list' '\(world.directory.file("data/applications/brsync.desktop"))' > '\(world.directory.file("installed"))'",
                "press:Put the previous default back", "find:label:Status: The default browser is firefox again",
            ])
        #expect(run.exitStatus == "0", "\(run.result)")
        let installed = try String(contentsOfFile: world.directory.file("installed"), encoding: .utf8)
        #expect(installed.contains("x-scheme-handler/https=brsync.desktop"), "\(installed)")
        #expect(installed.contains("open --home \(world.directory.file("brsync")) %u"), "\(installed)")
        let after = try String(contentsOfFile: config + "/mimeapps.list", encoding: .utf8)
        #expect(after.contains("x-scheme-handler/https=firefox.desktop"), "\(after)")
    }

    /// Export to a file and import it into another replica, from the
    /// window; a file that is no export is said so and changes nothing.
    @Test func exportAndImportFromTheWindow() throws {
        guard let world = try Self.readyWorld() else { return }
        #expect(try world.run("rules", "add", "github.com", "chrome").status == 0)
        let exported = world.directory.file("exported.json")
        let bad = world.directory.file("bad.json")
        try "{\"rules\": 5}".write(toFile: bad, atomically: true, encoding: .utf8)
        let run = try Self.drive(
            in: world,
            [
                "key:ctrl+5", "text:File=\(exported)", "press:Export to this file",
                "find:label:Status: Exported 2 browser(s) and 1 rule(s)",
                "text:File=\(bad)", "press:Import from this file", "find:label:is not a valid brsync export",
            ])
        #expect(run.exitStatus == "0", "\(run.result)")
        let text = try String(contentsOfFile: exported, encoding: .utf8)
        #expect(text.contains("\"github.com\"") && text.contains("brsync-export"), "\(text)")
        // The file reads back with the command, into a fresh replica.
        let other = world.directory.file("other")
        #expect(try ProcessRunner.run(world.brsync, ["--home", other, "init"]).status == 0)
        let imported = try ProcessRunner.run(world.brsync, ["--home", other, "import", exported])
        #expect(imported.status == 0 && imported.stdout.contains("1 rule(s)"), "\(imported)")
        // And the window imports what the command exported.
        let again = try Self.drive(
            home: other, path: world.environment["PATH"],
            ["key:ctrl+5", "text:File=\(exported)", "press:Import from this file", "find:label:Status: Imported"])
        #expect(again.exitStatus == "0", "\(again.result)")
    }

    /// "Check this machine" lists doctor's findings, each problem with its
    /// fix: here brsync is not the default browser, and the finding's button
    /// makes it so (doctor, run after, finds nothing wrong there).
    @Test func doctorsFindingsComeWithTheirFix() throws {
        guard let world = try Self.readyWorld() else { return }
        let run = try Self.drive(
            in: world,
            environment: [
                "XDG_CONFIG_HOME": world.directory.file("config"), "XDG_DATA_HOME": world.directory.file("data"),
            ],
            [
                "key:ctrl+4", "press:Check this machine", "find:label:Problem — default browser",
                "press:Make brsync the default browser: default browser",
                "find:label:Status: brsync is the default browser",
            ])
        #expect(run.exitStatus == "0", "\(run.result)")
        let doctor = try world.run("doctor")
        #expect(
            !doctor.stdout.contains("PROBLEM default browser") && doctor.stdout.contains("ok      default browser"),
            "\(doctor)")
    }

    /// Light and dark follow the desktop: a settings portal that says dark
    /// at start makes the window dark; switching it to light, while the
    /// window is open, makes it light (its background, read from the screen).
    @Test func lightAndDarkFollowTheDesktop() throws {
        guard let world = try Self.readyWorld() else { return }
        let run = try Self.drive(
            in: world,
            ["portal:1", "find:label:Status", "sleep:1", "pixel:300,600", "portal-switch", "sleep:1", "pixel:300,600"])
        #expect(run.exitStatus == "0", "\(run.result)")
        let pixels = run.values("PIXEL").map { $0.split(separator: " ").compactMap { Int($0) } }
        try #require(pixels.count == 2 && pixels.allSatisfy { $0.count == 3 }, "\(run.result)")
        let (dark, light) = (pixels[0].reduce(0, +) / 3, pixels[1].reduce(0, +) / 3)
        #expect(dark < 100 && light > 180, "dark \(pixels[0]), light \(pixels[1])")
    }

    /// This machine's launch command is changed, and a profile made, from the
    /// Browsers page, with the command's checks: a profile with no id is said
    /// in its form, which stays open with what was typed.
    @Test func aLaunchCommandAndAProfileAreMadeInTheWindow() throws {
        guard let world = try Self.readyWorld() else { return }
        let run = try Self.drive(
            in: world,
            [
                "key:ctrl+2", "text:Launch command for Chrome (chrome) here=fakechrome --incognito %u",
                "press:Save the launch command for Chrome (chrome)", "find:label:Status: browser chrome",
                // (the page is rebuilt after a save: its buttons are new ones)
                "sleep:0.5", "press:Make a profile of Firefox (firefox)…", "find:frame:New profile of Firefox",
                "text:Arguments=-P work",
                "press:Make profile", "find:label:Problem: Give the profile an id",
                "text:Profile id=work", "press:Make profile", "find:label:Status: browser work: a profile of firefox",
            ])
        #expect(run.exitStatus == "0", "\(run.result)")
        let list = try world.run("browsers", "list").stdout
        #expect(list.contains("fakechrome --incognito %u"), "\(list)")
        #expect(list.contains("work") && list.contains("profile of firefox"), "\(list)")
    }

    /// Escape with a rule typed and not saved asks before closing (Keep
    /// editing keeps it); Escape in a search that holds text clears it.
    @Test func escapeAsksBeforeLosingARuleBeingTyped() throws {
        guard let world = try Self.readyWorld() else { return }
        let run = try Self.drive(
            in: world,
            [
                "key:ctrl+f", "key:x", "find:label:none of 0 rules", "key:Escape", "find:label:0 rules",
                "text:Pattern=important.example", "key:Escape", "find:frame:Close without saving?",
                "press:Keep editing", "press:Save", "find:label:Status: Added rule important.example",
            ])
        #expect(run.exitStatus == "0", "\(run.result)")
        #expect(try world.run("resolve", "https://important.example/").status == 0)
    }
}
