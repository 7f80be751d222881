import Foundation
import Testing
import TestSupport

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
            process = try BackgroundProcess("/usr/bin/Xvfb", ["-displayfd", "1", "-nolisten", "tcp", "-noreset", "-screen", "0", "1024x768x24"])
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
        ["/usr/bin/Xvfb", "/usr/bin/xdg-open", "/usr/bin/xdg-mime"].allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }
    }

    @Test func linksAndFilesClickedOnTheDesktopOpen() throws {
        guard Self.hasTools else {
            Issue.record("Xvfb and xdg-utils are needed (scripts/setup installs xvfb and xdg-utils)")
            return
        }
        let server = try XServer()
        defer { server.stop() }
        let world = try DesktopClickTests.readyWorld()
        world.environment["DISPLAY"] = server.display
        try FileManager.default.createDirectory(atPath: world.directory.file("config"), withIntermediateDirectories: true)
        try "[Default Applications]\nx-scheme-handler/https=firefox.desktop;\nx-scheme-handler/http=firefox.desktop;\ntext/html=firefox.desktop;\n"
            .write(toFile: world.directory.file("config/mimeapps.list"), atomically: true, encoding: .utf8)
        #expect(try world.run("rules", "add", "github.com", "chrome").status == 0)
        #expect(try world.run("install").status == 0)
        func xdgOpen(_ target: String) throws -> ProcessResult {
            try ProcessRunner.run("/usr/bin/xdg-open", [target], environment: world.environment)
        }
        // A link: the rule decides.
        let link = try xdgOpen("https://github.com/brsync?tab=1")
        #expect(link.status == 0, "\(link)")
        #expect(world.waitForLaunch(count: 1).last?.hasSuffix("fakechrome --profile-directory=Default https://github.com/brsync?tab=1") == true,
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
        try "#!/bin/sh\nexec xdg-open \"$@\"\n".write(toFile: wrapper, atomically: true, encoding: .utf8)
        chmod(wrapper, 0o755)
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
}
