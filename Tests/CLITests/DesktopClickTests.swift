import Foundation
import TestSupport
import Testing

/// "A click never vanishes": local files, failures shown without a terminal,
/// the previous default browser as the last resort, relaunch loops, pickers
/// that cannot start, and what install writes. Each runs the real `brsync`
/// in a temporary HOME with stand-in browsers and a stand-in `notify-send`.
@Suite struct DesktopClickTests {
    /// A world with a replica, the fixture browsers detected, Firefox the default.
    static func readyWorld() throws -> DesktopWorld {
        let world = try DesktopWorld()
        #expect(try world.run("init").status == 0)
        #expect(try world.run("browsers", "detect").status == 0)
        #expect(try world.run("browsers", "default", "firefox").status == 0)
        return world
    }

    /// A BRSYNC_PICKER menu that chooses Chrome with "remember" and keeps
    /// what it was offered in the file whose path it returns.
    static func menuChoosingChromeAndRemembering(_ world: DesktopWorld) throws -> String {
        let menu = world.directory.file("bin/pick-chrome")
        let offered = world.directory.file("offered")
        try writeScript(menu, "#!/bin/sh\ntee '\(offered)' | grep '^Chrome (chrome) · remember'\n")
        world.environment["BRSYNC_PICKER"] = menu
        return offered
    }

    @Test func localFilesOpenAsFiles() throws {
        let world = try Self.readyWorld()
        let page = world.directory.file("my page#1.html")
        try "<h1>hi</h1>".write(toFile: page, atomically: true, encoding: .utf8)
        // By the default browser, as a file: URL (never https://).
        let opened = try world.run("open", page)
        #expect(opened.status == 0, "\(opened)")
        let encoded = "file://" + world.directory.path + "/my%20page%231.html"
        #expect(world.waitForLaunch(count: 1).last?.hasSuffix("fakefox \(encoded)") == true, "\(world.launched())")
        // A file: URL, and localhost, are the same file.
        #expect(try world.run("open", "file://localhost" + world.directory.path + "/my%20page%231.html").status == 0)
        #expect(world.waitForLaunch(count: 2).last?.hasSuffix("fakefox \(encoded)") == true)
        // A rule naming the folder decides; a browser whose command takes %f gets the path.
        #expect(try world.run("browsers", "add", "viewer", "--exec", "fakechrome --file %f").status == 0)
        #expect(try world.run("rules", "add", "file://\(world.directory.path)/**", "viewer").status == 0)
        #expect(try world.run("open", page).status == 0)
        #expect(
            world.waitForLaunch(count: 3).last?.hasSuffix("fakechrome --file \(page)") == true, "\(world.launched())")
        // A host pattern never matches a file.
        let explained = try world.run("explain", "/etc/hostname")
        #expect(explained.stdout.contains("url: file:///etc/hostname"), "\(explained)")
        // A missing file is an error that opens nothing.
        let missing = try world.run("open", world.directory.file("gone.html"))
        #expect(missing.status == 2 && missing.stderr.contains("no such file"), "\(missing)")
        let relative = try world.run("open", "gone.html")
        #expect(relative.status == 2 && relative.stderr.contains("no such file"), "\(relative)")
        usleep(100_000)
        #expect(world.launched().count == 3)
    }

    @Test func aFailureWithoutATerminalIsANotification() throws {
        let world = try DesktopWorld() // no replica
        let result = try world.run("open", "https://example.com/")
        #expect(result.status == 2, "\(result)")
        let shown = world.notified().joined(separator: "\n")
        #expect(
            shown.contains("brsync could not open https://example.com/") && shown.contains("brsync init"), "\(shown)")
        // Bad input is shown too.
        #expect(try world.run("open", "mailto:someone@example.com").status == 2)
        #expect(world.notified().last?.contains("brsync cannot open this link") == true, "\(world.notified())")
    }

    @Test func whenNothingCanOpenItThePreviousDefaultBrowserDoes() throws {
        let world = try Self.readyWorld()
        try FileManager.default.createDirectory(
            atPath: world.directory.file("config"), withIntermediateDirectories: true)
        try "[Default Applications]\nx-scheme-handler/https=firefox.desktop;\nx-scheme-handler/http=firefox.desktop;\n"
            .write(toFile: world.directory.file("config/mimeapps.list"), atomically: true, encoding: .utf8)
        #expect(try world.run("install").status == 0)
        // Every browser gone from the replica: no rule, no default, no picker.
        for id in ["firefox", "chrome"] { #expect(try world.run("browsers", "rm", id).status == 0) }
        let result = try world.run("open", "https://example.com/page")
        #expect(result.status == 0 && result.stderr.contains("opened https://example.com/page in Firefox"), "\(result)")
        #expect(world.waitForLaunch(count: 1).last?.hasSuffix("fakefox https://example.com/page") == true)
        #expect(world.notified().last?.contains("brsync opened the link in Firefox") == true, "\(world.notified())")
        // Even with the replica gone.
        try FileManager.default.removeItem(atPath: world.directory.file("brsync"))
        #expect(try world.run("open", "https://example.com/again").status == 0)
        #expect(world.waitForLaunch(count: 2).last?.hasSuffix("fakefox https://example.com/again") == true)
        // Cancelling the picker is a choice: nothing opens.
        #expect(try world.run("init").status == 0)
        #expect(try world.run("browsers", "detect").status == 0)
        let menu = world.directory.file("bin/cancel-menu")
        try writeScript(menu, "#!/bin/sh\ncat >/dev/null\nexit 1\n")
        world.environment["BRSYNC_PICKER"] = menu
        let cancelled = try world.run("open", "https://undecided.example/")
        #expect(cancelled.status == 1 && cancelled.stderr.contains("cancelled"), "\(cancelled)")
        usleep(100_000)
        #expect(world.launched().count == 2)
    }

    /// A rule whose browser does not start: the picker asks, saying why; with
    /// no picker, the message says the rule decided (not "no rule decides").
    @Test func aRuleWhoseBrowserDoesNotStartIsNamed() throws {
        let world = try Self.readyWorld()
        #expect(try world.run("rules", "add", "decided.example", "chrome").status == 0)
        unlink(world.directory.file("bin/fakechrome"))
        let noPicker = try world.run("open", "https://decided.example/")
        #expect(
            noPicker.status != 0
                && noPicker.stderr.contains(
                    "the rule 'decided.example' chose 'chrome', which did not start (cannot start fakechrome")
                && noPicker.stderr.contains("and no picker could ask"),
            "\(noPicker)")
        #expect(!noPicker.stderr.contains("no rule decides"), "\(noPicker)")
        // With a picker, it asks (the window and the terminal picker show why; a menu shows the list).
        let menu = world.directory.file("bin/pick-firefox")
        try writeScript(menu, "#!/bin/sh\ngrep '^Firefox'\n")
        world.environment["BRSYNC_PICKER"] = menu
        let picked = try world.run("open", "https://decided.example/")
        #expect(picked.status == 0, "\(picked)")
        #expect(
            world.waitForLaunch(count: 1).last?.hasSuffix("fakefox https://decided.example/") == true,
            "\(world.launched())")
    }

    /// The picker says which app a link came from (`$BRSYNC_NOTE` for a
    /// menu, the note under the link in the window): an app that runs
    /// `brsync open` itself, or through an `xdg-open` of its own.
    @Test func thePickerSaysWhichAppTheLinkCameFrom() throws {
        let world = try Self.readyWorld()
        let noted = world.directory.file("noted")
        let menu = world.directory.file("bin/pick-noting")
        try writeScript(menu, "#!/bin/sh\nprintf '%s\\n' \"$BRSYNC_NOTE\" >> '\(noted)'\ngrep -m1 '^Firefox'\n")
        world.environment["BRSYNC_PICKER"] = menu
        let app = world.directory.file("bin/mailapp")
        try writeScript(app, "#!/bin/sh\n'\(world.brsync)' open \"$1\"\n")
        let opener = world.directory.file("bin/xdg-open")
        try writeScript(opener, "#!/bin/sh\n'\(world.brsync)' open \"$1\"\n")
        let viaOpener = world.directory.file("bin/chatapp")
        try writeScript(viaOpener, "#!/bin/sh\n'\(opener)' \"$1\"\n")
        // (The default browser decides these links: ask-next makes each ask.)
        #expect(try world.run("ask-next").status == 0)
        #expect(try ProcessRunner.run(app, ["https://undecided.example/1"], environment: world.environment).status == 0)
        #expect(try world.run("ask-next").status == 0)
        #expect(
            try ProcessRunner.run(viaOpener, ["https://undecided.example/2"], environment: world.environment).status
                == 0)
        let notes = try String(contentsOfFile: noted, encoding: .utf8).split(separator: "\n")
        #expect(
            notes.count == 2 && notes[0].hasPrefix("from mailapp: you asked to choose")
                && notes[1].hasPrefix("from chatapp: "), "\(notes)")
        #expect(world.waitForLaunch(count: 2).count == 2)
    }

    /// A rule made with `--from-app` decides only links clicked in that app,
    /// before any other rule; `resolve --from-app` shows it.
    @Test func aRuleCanNameTheAppALinkComesFrom() throws {
        let world = try Self.readyWorld()
        let added = try world.run("rules", "add", "--from-app", "slack", "decided.example", "chrome")
        #expect(
            added.status == 0 && added.stdout.contains("added rule from:slack decided.example -> chrome"), "\(added)")
        #expect(try world.run("rules", "add", "decided.example", "firefox", "--priority", "50").status == 0)
        #expect(try world.run("rules", "list").stdout.contains("from:slack decided.example"))
        #expect(try world.run("resolve", "https://decided.example/a").stdout.hasPrefix("firefox\t"))
        #expect(
            try world.run("resolve", "--from-app", "slack", "https://decided.example/a").stdout.hasPrefix("chrome\t"))
        #expect(
            try world.run("resolve", "--from-app", "teams", "https://decided.example/a").stdout.hasPrefix("firefox\t"))
        let explained = try world.run("explain", "--from-app", "teams", "https://decided.example/a")
        #expect(explained.stdout.contains("the link came from another app"), "\(explained)")
        let withSuffix = try world.run("resolve", "--from-app", "slack.desktop", "https://decided.example/a")
        #expect(
            withSuffix.stdout.hasPrefix("chrome\t") && withSuffix.stderr.contains("taken as 'slack'"), "\(withSuffix)")
        let bad = try world.run("rules", "add", "--from-app", "sl/ack", "decided.example", "chrome")
        #expect(bad.status == 2 && bad.stderr.contains("an app's id"), "\(bad)")
        // Clicks as they come: from an app named slack, and from another.
        for (name, url) in [
            ("slack", "https://decided.example/from-slack"), ("mailapp", "https://decided.example/from-mail"),
        ] {
            let app = world.directory.file("bin/\(name)")
            try writeScript(app, "#!/bin/sh\n'\(world.brsync)' open \"$1\"\n")
            #expect(try ProcessRunner.run(app, [url], environment: world.environment).status == 0)
        }
        let launched = world.waitForLaunch(count: 2)
        #expect(
            launched.contains { $0.contains("fakechrome") && $0.hasSuffix("https://decided.example/from-slack") },
            "\(launched)")
        #expect(
            launched.contains { $0.contains("fakefox") && $0.hasSuffix("https://decided.example/from-mail") },
            "\(launched)")
        // Removing: the plain pattern names the plain rule; the app's rule
        // is removed with --from-app, and a miss points at it.
        #expect(try world.run("rules", "rm", "decided.example").status == 0)
        let missed = try world.run("rules", "rm", "decided.example")
        #expect(missed.status != 0 && missed.stderr.contains("'--from-app slack'"), "\(missed)")
        let removed = try world.run("rules", "rm", "--from-app", "Slack", "decided.example")
        #expect(
            removed.status == 0 && removed.stdout.contains("removed rule from:slack decided.example -> chrome"),
            "\(removed)")
        #expect(!(try world.run("rules", "list").stdout.contains("decided.example")))
        let badRemove = try world.run("rules", "rm", "--from-app", "sl/ack", "decided.example")
        #expect(badRemove.status == 2 && badRemove.stderr.contains("an app's id"), "\(badRemove)")
    }

    /// `brsync ask-next`: the next link asks even though a rule decides;
    /// choosing another browser with "remember" replaces the rule (the
    /// rule's own pattern is offered); the link after it opens by the rule
    /// again; a request older than a minute, or taken back, asks nothing.
    @Test func askNextMakesTheNextLinkAsk() throws {
        let world = try Self.readyWorld()
        #expect(try world.run("rules", "add", "decided.example", "firefox").status == 0)
        let offered = try Self.menuChoosingChromeAndRemembering(world)
        let asked = try world.run("ask-next")
        #expect(asked.status == 0 && asked.stdout.contains("the next link opened within a minute asks"), "\(asked)")
        let picked = try world.run("open", "https://decided.example/a")
        #expect(picked.status == 0, "\(picked)")
        #expect(
            world.waitForLaunch(count: 1).last?.hasSuffix(
                "fakechrome --profile-directory=Default https://decided.example/a") == true, "\(world.launched())")
        #expect(try String(contentsOfFile: offered, encoding: .utf8).contains("remember decided.example"))
        #expect(picked.stdout.contains("remembered: decided.example -> chrome"), "\(picked)")
        #expect(
            try world.run("rules", "list").stdout.split(separator: "\n").filter { $0.contains("decided.example") }.count
                == 1, "the rule was replaced")
        // Taken by that link: the next one opens by the (new) rule, without asking.
        unlink(offered)
        #expect(try world.run("open", "https://decided.example/b").status == 0)
        #expect(world.waitForLaunch(count: 2).last?.hasSuffix("https://decided.example/b") == true)
        #expect(!FileManager.default.fileExists(atPath: offered), "no picker the second time")
        // Taken back, or too old: the rule decides.
        #expect(try world.run("ask-next").status == 0)
        #expect(try world.run("ask-next", "--cancel").stdout.contains("taken back"))
        try "1000".write(toFile: world.directory.file("brsync/ask-next"), atomically: true, encoding: .utf8)
        chmod(world.directory.file("brsync/ask-next"), 0o600)
        #expect(try world.run("open", "https://decided.example/c").status == 0)
        #expect(world.waitForLaunch(count: 3).last?.hasSuffix("https://decided.example/c") == true)
        #expect(
            !FileManager.default.fileExists(atPath: offered)
                && !FileManager.default.fileExists(atPath: world.directory.file("brsync/ask-next")))
        // One written by hand that others can read: said, removed, and the rule decides.
        var now = timespec()
        clock_gettime(CLOCK_BOOTTIME, &now)
        try String(Int64(now.tv_sec) * 1_000 + Int64(now.tv_nsec) / 1_000_000).write(
            toFile: world.directory.file("brsync/ask-next"), atomically: true, encoding: .utf8)
        chmod(world.directory.file("brsync/ask-next"), 0o666)
        let loose = try world.run("open", "https://decided.example/d")
        #expect(
            loose.status == 0 && loose.stderr.contains("can be changed by others")
                && loose.stderr.contains("ignored and removed"), "\(loose)")
        #expect(world.waitForLaunch(count: 4).last?.hasSuffix("https://decided.example/d") == true)
        #expect(
            !FileManager.default.fileExists(atPath: offered)
                && !FileManager.default.fileExists(atPath: world.directory.file("brsync/ask-next")))
        // A folder in its place: removed when empty (said), named when not; the link opens either way.
        try FileManager.default.createDirectory(
            atPath: world.directory.file("brsync/ask-next"), withIntermediateDirectories: false)
        let folder = try world.run("open", "https://decided.example/e")
        #expect(folder.status == 0 && folder.stderr.contains("not a regular file: ignored and removed"), "\(folder)")
        #expect(!FileManager.default.fileExists(atPath: world.directory.file("brsync/ask-next")))
        try FileManager.default.createDirectory(
            atPath: world.directory.file("brsync/ask-next/inside"), withIntermediateDirectories: true)
        let full = try world.run("ask-next", "--cancel")
        #expect(full.status == 2 && full.stderr.contains("remove it by hand"), "\(full)")
        #expect(world.waitForLaunch(count: 5).last?.hasSuffix("https://decided.example/e") == true)
    }

    @Test func aBrowserThatLeadsBackToBrsyncIsALoopThatStops() throws {
        let world = try Self.readyWorld()
        // A command that hands the link to "the default browser", which is brsync.
        let relay = world.directory.file("bin/relay")
        try writeScript(
            relay, "#!/bin/sh\nexec env BRSYNC_HOME='\(world.directory.file("brsync"))' \(world.brsync) open \"$1\"\n")
        #expect(try world.run("browsers", "add", "loop", "--exec", "relay %u").status == 0)
        #expect(try world.run("rules", "add", "loop.example", "loop").status == 0)
        #expect(try world.run("open", "https://loop.example/").status == 0) // started relay, which went back to brsync
        let shown = world.waitForNotification()
        #expect(shown.count == 1 && shown[0].contains("'loop' handed https://loop.example/ back to brsync"), "\(shown)")
        sleep(1)
        #expect(world.notified().count == 1, "the loop stopped")
        #expect(world.launched().isEmpty)
        // A command that runs brsync itself, or hands the link to the default
        // browser (brsync), is refused when it is given, with the reason.
        for command in [
            "\(world.brsync) open %u", "xdg-open %u", "/usr/bin/xdg-open %u", "gio open %u", "sensible-browser %u",
        ] {
            let refused = try world.run("browsers", "add", "self", "--exec", command)
            #expect(
                refused.status == 2
                    && (refused.stderr.contains("runs brsync itself")
                        || refused.stderr.contains("the link would come back here")),
                "\(command): \(refused)")
        }
        #expect(!(try world.run("browsers", "list").stdout.contains("self")))
    }

    @Test func aPickerThatCannotStartIsNotACancel() throws {
        let world = try Self.readyWorld()
        // A rofi that records being run: without a display it is never tried.
        let rofi = world.directory.file("bin/rofi")
        try writeScript(
            rofi, "#!/bin/sh\necho ran >> \(world.directory.file("rofi-ran"))\ncat >/dev/null\necho 'Chrome (chrome)'\n"
        )
        let noDisplay = try world.run("pick", "https://example.org/")
        #expect(
            noDisplay.status == 3 && noDisplay.stderr.contains("no picker could ask")
                && !noDisplay.stderr.contains("cancelled"), "\(noDisplay)")
        #expect(!FileManager.default.fileExists(atPath: world.directory.file("rofi-ran")))
        // BRSYNC_PICKER that fails is named, and the next menu (rofi, on a
        // display that answers) asks: brsync run as a copy with no window beside it.
        let server = try XvfbDesktopTests.XServer()
        defer { server.stop() }
        world.environment["DISPLAY"] = server.display
        let alone = world.directory.file("alone")
        try FileManager.default.createDirectory(atPath: alone, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: world.brsync, toPath: alone + "/brsync")
        world.brsync = alone + "/brsync"
        unlink(rofi)
        try world.hideSystemMenus()
        let noWindow = try world.run("pick", "https://example.org/")
        #expect(noWindow.status == 3 && noWindow.stderr.contains("brsync-picker is not beside"), "\(noWindow)")
        try writeScript(
            rofi, "#!/bin/sh\necho ran >> \(world.directory.file("rofi-ran"))\ncat >/dev/null\necho 'Chrome (chrome)'\n"
        )
        world.environment["BRSYNC_PICKER"] = "echo 'cannot open display' >&2; exit 1"
        let fellThrough = try world.run("pick", "https://example.org/")
        #expect(
            fellThrough.status == 0 && fellThrough.stderr.contains("exited with status 1: cannot open display"),
            "\(fellThrough)")
        #expect(world.waitForLaunch(count: 1).last?.contains("fakechrome") == true)
        // BRSYNC_PICKER is a shell command line: pipes work, the link is in $BRSYNC_URL.
        world.environment["BRSYNC_PICKER"] =
            "test \"$BRSYNC_URL\" = https://example.org/x && grep 'Firefox (firefox) · remember' | head -n 1"
        #expect(try world.run("rules", "add", "example.org", "chrome", "--priority", "0").status == 0)
        #expect(try world.run("rules", "add", "other.example", "chrome", "--priority", "7").status == 0)
        let remembered = try world.run("pick", "https://example.org/x")
        #expect(
            remembered.status == 0 && remembered.stdout.contains("remembered: example.org -> firefox (priority 8)"),
            "\(remembered)")
        #expect(world.waitForLaunch(count: 2).last?.hasSuffix("fakefox https://example.org/x") == true)
    }

    /// hold-to-ask on a display that closes the connection: the click opens
    /// the link as the rules say, and says why it did not ask, on stderr and
    /// (nobody at a terminal) as a notification.
    @Test func aKeyThatCannotBeReadIsSaidOnTheDesktop() throws {
        let world = try Self.readyWorld()
        let closing = try SilentDisplay(hangUp: true)
        defer { closing.stop() }
        world.environment["DISPLAY"] = closing.display
        world.environment["WAYLAND_DISPLAY"] = nil
        world.environment["XDG_SESSION_TYPE"] = nil
        #expect(try world.run("hold-to-ask", "shift").status == 0)
        #expect(try world.run("rules", "add", "decided.example", "chrome").status == 0)
        let opened = try world.run("open", "https://decided.example/a")
        #expect(
            opened.status == 0 && opened.stderr.contains("hold-to-ask: cannot read the keys held (")
                && opened.stderr.contains("so the link opens as the rules say"), "\(opened)")
        #expect(
            world.waitForLaunch(count: 1).last?.hasSuffix(
                "fakechrome --profile-directory=Default https://decided.example/a") == true, "\(world.launched())")
        #expect(
            world.notified().contains {
                $0.contains("brsync could not tell whether a key was held") && $0.contains("cannot read the keys held")
            },
            "\(world.notified())")
    }

    /// A display that takes the connection and never answers (a frozen X
    /// server): no window or menu is shown there, so the click is not held;
    /// a link a rule decides still opens after `ask-next`; `doctor` says so;
    /// and the picker window itself gives up on such a display after 15 s.
    @Test func aDisplayThatDoesNotAnswerHoldsNoClick() throws {
        let world = try Self.readyWorld()
        let silent = try SilentDisplay()
        defer { silent.stop() }
        world.environment["DISPLAY"] = silent.display
        let rofi = world.directory.file("bin/rofi")
        try writeScript(rofi, "#!/bin/sh\necho ran >> \(world.directory.file("rofi-ran"))\nsleep 600\n")
        // The window on its own, with the display's connection checked by brsync first.
        let request =
            #"{"url":"https://example.org/","suggestedPattern":"example.org","choices":[{"id":"a","name":"A"}]}"#
        let window = try BackgroundProcess(
            "/bin/sh", ["-c", "echo '\(request)' | '\(ProcessRunner.binary("brsync-picker"))'"],
            environment: ["DISPLAY": silent.display, "HOME": world.directory.path])
        let started = Date()
        let undecided = try world.run("pick", "https://example.org/y")
        #expect(Date().timeIntervalSince(started) < 5, "the click waited")
        #expect(
            undecided.status == 3
                && undecided.stderr.contains(
                    "the picker window cannot show: the X display \(silent.display): the X server did not answer within"
                ),
            "\(undecided)")
        #expect(
            undecided.stderr.contains("rofi cannot show")
                && !FileManager.default.fileExists(atPath: world.directory.file("rofi-ran")), "\(undecided)")
        let doctor = try world.run("doctor")
        #expect(
            doctor.stdout.contains("PROBLEM picker: no picker can show: the X display \(silent.display)"), "\(doctor)")
        // Asked to choose, and no picker can: the rule's browser opens it.
        #expect(try world.run("rules", "add", "decided.example", "chrome").status == 0)
        #expect(try world.run("ask-next").status == 0)
        let decided = try world.run("open", "https://decided.example/a")
        #expect(
            decided.status == 0 && decided.stderr.contains("opening it as the rule 'decided.example' decides"),
            "\(decided)")
        let picked = try world.run("pick", "https://decided.example/b")
        #expect(
            picked.status == 3
                && picked.stderr.contains(
                    "the rule 'decided.example' would open it in 'chrome', and no picker could ask"),
            "\(picked)")
        #expect(
            world.waitForLaunch(count: 1).last?.hasSuffix(
                "fakechrome --profile-directory=Default https://decided.example/a") == true, "\(world.launched())")
        // brsync-picker started on that display anyway: it ends as "no display" (4), not never.
        #expect(window.wait(timeout: 30) == 4, "\(window.text)")
        #expect(window.text.contains("did not answer within 15 s"), "\(window.text)")
    }

    @Test func installCarriesTheHomeAndRefusesWhenClicksCouldNotBeServed() throws {
        let world = try DesktopWorld()
        let noReplica = try world.run("install")
        #expect(noReplica.status == 2 && noReplica.stderr.contains("brsync init"), "\(noReplica)")
        #expect(try world.run("init").status == 0)
        let noBrowser = try world.run("install")
        #expect(noBrowser.status == 2 && noBrowser.stderr.contains("no browser is usable"), "\(noBrowser)")
        #expect(!FileManager.default.fileExists(atPath: world.directory.file("data/applications/brsync.desktop")))
        #expect(try world.run("browsers", "detect").status == 0)
        #expect(try world.run("install").status == 0)
        let entry = try String(
            contentsOfFile: world.directory.file("data/applications/brsync.desktop"), encoding: .utf8)
        let executable = URL(fileURLWithPath: world.brsync).resolvingSymlinksInPath().path
        #expect(entry.contains("Exec=\(executable) open --home \(world.directory.file("brsync")) %u"), "\(entry)")
        #expect(entry.contains("text/html;application/xhtml+xml;"))
    }
}
