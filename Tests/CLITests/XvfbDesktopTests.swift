import Foundation
import TestSupport
import Testing

/// brsync installed as the default browser in a temporary HOME, on a real X
/// server (Xvfb), driven through `xdg-open` as a desktop app or file manager
/// would: links and local files reach the stand-in browsers, a failure with no
/// terminal is a notification, and a loop through `xdg-open` stops.
@Suite(.serialized) struct XvfbDesktopTests {
    /// Xvfb on a free display number (it picks one and prints it), stopped by `stop()`.
    final class XServer: @unchecked Sendable {
        // Built in init; stopped once by the test.
        let process: BackgroundProcess
        let display: String

        init() throws {
            process = try BackgroundProcess(
                "/usr/bin/Xvfb", ["-displayfd", "1", "-nolisten", "tcp", "-noreset", "-screen", "0", "1024x768x24"])
            let number = try process.waitFor(#"(?m)^(\d+)$"#)
            display = ":\(number)"
        }

        func stop() {
            // Xvfb may finish serving its clients before it honours SIGTERM;
            // a few seconds, then SIGKILL and its lock and socket removed.
            if process.stop(timeout: 3) == nil {
                let number = display.dropFirst()
                unlink("/tmp/.X\(number)-lock")
                unlink("/tmp/.X11-unix/X\(number)")
            }
        }
    }

    static var hasTools: Bool {
        ["/usr/bin/Xvfb", "/usr/bin/xdg-open", "/usr/bin/xdg-mime"].allSatisfy {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    /// An X server of its own, and a ready world (``DesktopClickTests/readyWorld()``) that uses it.
    static func worldOnADisplay() throws -> (XServer, DesktopWorld) {
        let server = try XServer()
        do {
            let world = try DesktopClickTests.readyWorld()
            world.environment["DISPLAY"] = server.display
            return (server, world)
        } catch {
            server.stop()
            throw error
        }
    }

    @Test func linksAndFilesClickedOnTheDesktopOpen() throws {
        guard Self.hasTools else {
            Issue.record("Xvfb and xdg-utils are needed (scripts/setup installs xvfb and xdg-utils)")
            return
        }
        let (server, world) = try Self.worldOnADisplay()
        defer { server.stop() }
        try FileManager.default.createDirectory(
            atPath: world.directory.file("config"), withIntermediateDirectories: true)
        try
            "[Default Applications]\nx-scheme-handler/https=firefox.desktop;\nx-scheme-handler/http=firefox.desktop;\ntext/html=firefox.desktop;\n"
            .write(toFile: world.directory.file("config/mimeapps.list"), atomically: true, encoding: .utf8)
        #expect(try world.run("rules", "add", "github.com", "chrome").status == 0)
        #expect(try world.run("install").status == 0)
        func xdgOpen(_ target: String) throws -> ProcessResult {
            try ProcessRunner.run("/usr/bin/xdg-open", [target], environment: world.environment)
        }
        // A link: the rule decides.
        let link = try xdgOpen("https://github.com/brsync?tab=1")
        #expect(link.status == 0, "\(link)")
        #expect(
            world.waitForLaunch(count: 1).last?.hasSuffix(
                "fakechrome --profile-directory=Default https://github.com/brsync?tab=1") == true,
            "\(world.launched())")
        // A local HTML file, as a file manager opens it: the default browser, as a file.
        let page = world.directory.file("page.html")
        try "<!DOCTYPE html>\n<html><head><title>A page</title></head><body><h1>hi</h1></body></html>\n"
            .write(toFile: page, atomically: true, encoding: .utf8)
        #expect(try xdgOpen(page).status == 0)
        #expect(world.waitForLaunch(count: 2).last?.hasSuffix("fakefox file://\(page)") == true, "\(world.launched())")
        // A browser whose command ends in xdg-open (a wrapper: xdg-open itself
        // is refused when given): the loop is caught and shown once.
        #expect(try world.run("browsers", "add", "loop", "--exec", "xdg-open %u").status == 2)
        let wrapper = world.directory.file("bin/open-wrapper")
        try writeScript(wrapper, "#!/bin/sh\nexec xdg-open \"$@\"\n")
        #expect(try world.run("browsers", "add", "loop", "--exec", "open-wrapper %u").status == 0)
        #expect(try world.run("rules", "add", "loop.example", "loop").status == 0)
        _ = try xdgOpen("https://loop.example/")
        let shown = world.waitForNotification()
        #expect(shown.count == 1 && shown[0].contains("'loop' handed https://loop.example/ back to brsync"), "\(shown)")
        sleep(1)
        #expect(world.notified().count == 1 && world.launched().count == 2, "the loop stopped")
        // The replica gone: the click still opens, in the previous default, and says so.
        try FileManager.default.removeItem(atPath: world.directory.file("brsync"))
        #expect(try xdgOpen("https://example.com/after").status == 0)
        #expect(world.waitForLaunch(count: 3).last?.hasSuffix("fakefox https://example.com/after") == true)
        #expect(world.notified().last?.contains("brsync opened the link in Firefox") == true, "\(world.notified())")
    }

    /// `brsync hold-to-ask shift`: a link clicked (here, opened by a script
    /// started as an app would) while Shift is held on the X server asks,
    /// although a rule decides; without Shift, or with the setting off, the
    /// rule decides. The keys are read over the X protocol (no X library).
    /// Xvfb keeps a key xdotool pressed down after xdotool leaves, so each
    /// press is let go of with `xdotool keyup`.
    @Test func holdingTheChosenKeyMakesALinkAsk() throws {
        guard Self.hasTools, FileManager.default.isExecutableFile(atPath: "/usr/bin/xdotool") else {
            Issue.record("Xvfb and xdotool are needed (scripts/setup installs xvfb and xdotool)")
            return
        }
        let (server, world) = try Self.worldOnADisplay()
        defer { server.stop() }
        world.environment["WAYLAND_DISPLAY"] = nil
        world.environment["XDG_SESSION_TYPE"] = nil
        func release(_ keys: [String]) throws {
            let up = try BackgroundProcess(
                "/usr/bin/xdotool", ["keyup"] + keys, environment: ["DISPLAY": server.display])
            #expect(up.wait(timeout: 10) == 0, "xdotool keyup \(keys)")
        }
        #expect(try world.run("rules", "add", "decided.example", "firefox").status == 0)
        let offered = try DesktopClickTests.menuChoosingChromeAndRemembering(world)

        let set = try world.run("hold-to-ask", "Shift")
        #expect(
            set.status == 0 && set.stdout.contains("holding Shift ask") && set.stdout.contains("keys can be read"),
            "\(set)")
        #expect(try world.run("hold-to-ask").stdout.contains("holding Shift"))
        let doctor = try world.run("doctor").stdout
        #expect(doctor.contains("ok      hold-to-ask: links clicked while holding Shift ask"), "\(doctor)")
        // Nothing held: the rule decides, and no picker is asked.
        #expect(try world.run("open", "https://decided.example/a").status == 0)
        #expect(
            world.waitForLaunch(count: 1).last?.hasSuffix("fakefox https://decided.example/a") == true,
            "\(world.launched())")
        #expect(!FileManager.default.fileExists(atPath: offered))
        // Shift held (Ctrl is not the key chosen): asked, and the rule's pattern offered.
        for (count, keys, url, asks) in [
            (2, ["ctrl"], "https://decided.example/b", false), (3, ["shift"], "https://decided.example/c", true),
        ] {
            let holder = try BackgroundProcess(
                "/usr/bin/xdotool", ["keydown"] + keys + ["exec", "--sync", "/bin/echo", "held", "sleep", "10"],
                environment: ["DISPLAY": server.display])
            _ = try holder.waitFor("held")
            let opened = try world.run("open", url)
            holder.stop(timeout: 1)
            try release(keys)
            #expect(opened.status == 0, "\(opened)")
            #expect(
                world.waitForLaunch(count: count).last?.hasSuffix(
                    asks ? "fakechrome --profile-directory=Default \(url)" : "fakefox \(url)") == true,
                "\(world.launched())")
            #expect(FileManager.default.fileExists(atPath: offered) == asks, "\(keys)")
        }
        #expect(try String(contentsOfFile: offered, encoding: .utf8).contains("remember decided.example"))
        // Off: Shift held changes nothing (the rule, now chrome since Remember replaced it, decides).
        unlink(offered)
        #expect(try world.run("hold-to-ask", "off").stdout.contains("off"))
        let holder = try BackgroundProcess(
            "/usr/bin/xdotool", ["keydown", "shift", "exec", "--sync", "/bin/echo", "held", "sleep", "10"],
            environment: ["DISPLAY": server.display])
        _ = try holder.waitFor("held")
        #expect(try world.run("open", "https://decided.example/d").status == 0)
        holder.stop(timeout: 1)
        try release(["shift"])
        #expect(world.waitForLaunch(count: 4).last?.hasSuffix("https://decided.example/d") == true)
        #expect(!FileManager.default.fileExists(atPath: offered))
        // Bad input: a key brsync cannot read, and a damaged setting (the click still opens, with a warning).
        let bad = try world.run("hold-to-ask", "hyper")
        #expect(bad.status == 2 && bad.stderr.contains("'hyper' is not a key brsync can read"), "\(bad)")
        try "caps".write(toFile: world.directory.file("brsync/hold-to-ask"), atomically: true, encoding: .utf8)
        chmod(world.directory.file("brsync/hold-to-ask"), 0o600)
        let damaged = try world.run("open", "https://decided.example/e")
        #expect(damaged.status == 0 && damaged.stderr.contains("names no key"), "\(damaged)")
        #expect(
            world.waitForLaunch(count: 5).last?.hasSuffix(
                "fakechrome --profile-directory=Default https://decided.example/e") == true, "\(world.launched())")
        #expect(try world.run("hold-to-ask").status == 2)
        // A setting that says off is off; a folder in its place is an error that names it.
        try "off\n".write(toFile: world.directory.file("brsync/hold-to-ask"), atomically: true, encoding: .utf8)
        chmod(world.directory.file("brsync/hold-to-ask"), 0o600)
        #expect(try world.run("hold-to-ask").stdout.hasPrefix("off"))
        #expect(try world.run("hold-to-ask", "off").status == 0)
        // One others can read (it is no secret) is taken; one others can change is not.
        try "shift".write(toFile: world.directory.file("brsync/hold-to-ask"), atomically: true, encoding: .utf8)
        chmod(world.directory.file("brsync/hold-to-ask"), 0o644)
        #expect(try world.run("hold-to-ask").stdout.contains("holding Shift"))
        chmod(world.directory.file("brsync/hold-to-ask"), 0o666)
        let loose = try world.run("hold-to-ask")
        #expect(
            loose.status == 2 && loose.stderr.contains("can be changed by others")
                && loose.stderr.contains("'brsync hold-to-ask off' removes it"), "\(loose)")
        #expect(try world.run("hold-to-ask", "off").status == 0)
        // A folder in its place: an empty one is removed by off; one with files is named.
        try FileManager.default.createDirectory(
            atPath: world.directory.file("brsync/hold-to-ask/inside"), withIntermediateDirectories: true)
        let folder = try world.run("hold-to-ask", "off")
        #expect(folder.status == 2 && folder.stderr.contains("remove it by hand (rm -r"), "\(folder)")
        try FileManager.default.removeItem(atPath: world.directory.file("brsync/hold-to-ask/inside"))
        #expect(try world.run("hold-to-ask", "off").stdout.hasPrefix("off"))
        #expect(!FileManager.default.fileExists(atPath: world.directory.file("brsync/hold-to-ask")))
        // Wayland: said, never read.
        #expect(try world.run("hold-to-ask", "off").status == 0)
        world.environment["WAYLAND_DISPLAY"] = "wayland-0"
        let wayland = try world.run("hold-to-ask", "shift")
        #expect(wayland.status == 0 && wayland.stdout.contains("Wayland session"), "\(wayland)")
        let waylandDoctor = try world.run("doctor").stdout
        #expect(
            waylandDoctor.contains("note    hold-to-ask: Shift is set, but not read here: this is a Wayland session"),
            "\(waylandDoctor)")
    }
}
