import Foundation
import TestSupport
import Testing

@testable import Desktop

/// Fixture trees of desktop entries: a user folder, a system folder, Flatpak and Snap exports.
@Suite struct BrowserDetectorTests {
    func write(_ text: String, _ path: String) throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    func entry(_ name: String, exec: String, extra: String = "") -> String {
        "[Desktop Entry]\nType=Application\nName=\(name)\nExec=\(exec)\nMimeType=text/html;x-scheme-handler/https;\n\(extra)"
    }

    @Test func findsBrowsersAcrossFoldersWithPrecedence() throws {
        let directory = try TemporaryDirectory(prefix: "brsync-desktop")
        defer { directory.remove() }
        let user = directory.file("home/.local/share")
        let system = directory.file("usr/share")
        let flatpak = directory.file("var/lib/flatpak/exports/share")
        let snap = directory.file("var/lib/snapd/desktop")
        let bin = directory.file("bin")
        try write("#!/bin/sh\n", bin + "/installed-browser")
        chmod(bin + "/installed-browser", 0o755)
        // The user's copy of firefox hides the system one.
        try write(
            entry("My Firefox", exec: "firefox --user %u", extra: "Name[de]=Mein Firefox\n"),
            user + "/applications/firefox.desktop")
        try write(entry("Firefox", exec: "firefox %u"), system + "/applications/firefox.desktop")
        // Flatpak Chromium and Snap Chromium are one browser: the first found wins.
        try write(
            entry("Chromium", exec: "/usr/bin/flatpak run org.chromium.Chromium @@u %U @@"),
            flatpak + "/applications/org.chromium.Chromium.desktop")
        try write(
            entry("Chromium (snap)", exec: "/snap/bin/chromium %U"), snap + "/applications/chromium_chromium.desktop")
        // Hidden, NoDisplay, a missing TryExec, not a browser, malformed, and an unknown browser.
        try write(
            entry("Gone", exec: "gone %u", extra: "Hidden=true\n"), system + "/applications/vivaldi-stable.desktop")
        try write(
            entry("Helper", exec: "helper %u", extra: "NoDisplay=true\n"), system + "/applications/helper.desktop")
        try write(
            entry("Missing", exec: "missing %u", extra: "TryExec=not-installed-anywhere\n"),
            system + "/applications/brave-browser.desktop")
        try write(
            "[Desktop Entry]\nType=Application\nName=Editor\nExec=edit %f\nMimeType=text/plain;\n",
            system + "/applications/editor.desktop")
        try write("[Desktop Entry\nbroken", system + "/applications/broken.desktop")
        try write(
            entry(
                "Odd Browser", exec: "installed-browser %u",
                extra: "TryExec=installed-browser\nCategories=Network;WebBrowser;\n"),
            system + "/applications/com.example.Odd.desktop")
        try write(entry("brsync", exec: "brsync open %u"), user + "/applications/brsync.desktop")

        let detector = BrowserDetector(
            directories: [user, system, flatpak, snap].map { $0 + "/applications" }, locale: "de_DE.UTF-8", path: [bin])
        let (found, skipped) = detector.detect()
        #expect(found.map(\.browserID) == ["chromium", "com.example.odd", "firefox"])
        let firefox = try #require(found.first { $0.browserID == "firefox" })
        #expect(firefox.name == "Mein Firefox" && firefox.exec == "firefox --user %u" && firefox.isCatalogBrowser)
        #expect(found.first { $0.browserID == "chromium" }?.desktopID == "org.chromium.Chromium.desktop")
        #expect(found.first { $0.browserID == "com.example.odd" }?.isCatalogBrowser == false)
        #expect(
            skipped.map { ($0.path as NSString).lastPathComponent }.sorted() == [
                "brave-browser.desktop", "broken.desktop",
            ])
        #expect(skipped.first { $0.path.hasSuffix("broken.desktop") }?.reason.contains("[Name]") == true)
    }

    @Test func standardFoldersFollowXDG() {
        let folders = BrowserDetector.standardDirectories(environment: [
            "HOME": "/h", "XDG_DATA_DIRS": "/a:/b:relative",
        ])
        #expect(
            folders == [
                "/h/.local/share/applications", "/a/applications", "/b/applications",
                "/h/.local/share/flatpak/exports/share/applications", "/var/lib/flatpak/exports/share/applications",
                "/var/lib/snapd/desktop/applications",
            ])
        #expect(
            BrowserDetector.standardDirectories(environment: ["HOME": "/h", "XDG_DATA_HOME": "/d"]).prefix(3)
                == ["/d/applications", "/usr/local/share/applications", "/usr/share/applications"])
        // The data home named again in XDG_DATA_DIRS, and a folder twice: each is looked in once.
        #expect(
            BrowserDetector.standardDirectories(environment: [
                "HOME": "/h", "XDG_DATA_HOME": "/d", "XDG_DATA_DIRS": "/d:/a:/a/:/b",
            ]).prefix(4)
                == ["/d/applications", "/a/applications", "/b/applications", "/d/flatpak/exports/share/applications"])
    }

    @Test func subfoldersMakeDesktopIDs() throws {
        let directory = try TemporaryDirectory(prefix: "brsync-desktop")
        defer { directory.remove() }
        try write(entry("Kde Browser", exec: "falkon %u"), directory.file("apps/org/kde.falkon.desktop"))
        let found = BrowserDetector(directories: [directory.file("apps")], locale: nil, path: []).detect().found
        #expect(found.map(\.desktopID) == ["org-kde.falkon.desktop"])
    }
}
