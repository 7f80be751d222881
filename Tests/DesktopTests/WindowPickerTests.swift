import Foundation
import JSON
import TestSupport
import Testing

@testable import Desktop

/// What brsync and `brsync-picker` say to each other, and the private-window
/// action of a desktop entry.
@Suite struct WindowPickerTests {
    let request = WindowPicker.Request(
        url: "https://example.org/a",
        choices: [
            .init(id: "chrome", name: "Chrome", hasPrivateWindow: false),
            .init(id: "firefox", name: "Firefox", icon: "firefox", isDefault: true, hasPrivateWindow: true),
            .init(id: "work", name: "Work", profile: "-P work", hasPrivateWindow: true),
        ], suggestedPattern: "example.org")

    @Test func requestsAndAnswersReadBackAsThemselves() throws {
        #expect(try WindowPicker.Request(parsing: request.json.jsonText) == request)
        var fromApp = request
        fromApp.fromApp = "com.slack.Slack"
        #expect(try WindowPicker.Request(parsing: fromApp.json.jsonText) == fromApp)
        var badApp = fromApp.json
        if case .object(var object) = badApp { object["fromApp"] = .string("no/app"); badApp = .object(object) }
        #expect(throws: WindowPicker.Problem.self) { try WindowPicker.Request(parsing: badApp.jsonText) }
        // The browser selected first: an index of the choices, or none.
        var selected = request
        selected.selected = 2
        #expect(try WindowPicker.Request(parsing: selected.json.jsonText) == selected)
        for bad: JSONValue in [.int(3), .int(-1), .string("1"), .bool(true)] {
            guard case .object(var object) = request.json else { continue }
            object["selected"] = bad
            #expect(throws: WindowPicker.Problem.self) {
                try WindowPicker.Request(parsing: JSONValue.object(object).jsonText)
            }
        }
        let answer = WindowPicker.Answer(
            choice: 2, remember: "example.org", privateWindow: true, order: [2, 0], hidden: [1])
        #expect(try WindowPicker.Answer(parsing: answer.json.jsonText, request: request) == answer)
        // An older window's answer (no private window, order or hidden): a plain choice.
        #expect(try WindowPicker.Answer(parsing: #"{"choice": 1}"#, request: request) == WindowPicker.Answer(choice: 1))
    }

    @Test(arguments: [
        (#"{"choice": 3}"#, "names no browser"),
        (#"{"choice": -1}"#, "names no browser"),
        (#"{"choice": "1"}"#, "names no browser"),
        (#"{"choice": 0, "privateWindow": true}"#, "private window chrome has not"),
        (#"{"choice": 0, "order": [0, 1]}"#, "not the browsers it was offered"),
        (#"{"choice": 0, "order": [0, 1, 1]}"#, "twice"),
        (#"{"choice": 0, "order": [0, 1, 2, 3]}"#, "twice or one it was not offered"),
        (#"{"choice": 0, "order": [0, 1], "hidden": [1]}"#, "not the browsers it was offered"),
        (#"{"choice": 0, "order": [1, 2], "hidden": [0]}"#, "chose a browser it hid"),
        (#"{"choice": 0, "hidden": "1"}"#, "must be a list"),
        ("not json", "not JSON"),
    ])
    func answersThatDoNotFitTheRequestAreRefused(text: String, reason: String) {
        #expect {
            _ = try WindowPicker.Answer(parsing: text, request: request)
        } throws: { error in
            "\(error)".contains(reason)
        }
    }

    /// The "Remember" box's words follow what the pattern reaches.
    @Test(arguments: [
        ("example.org", "Remember for this domain"), ("*.example.org", "Remember for this domain"),
        ("github.com/acme/*", "Remember for these pages"), ("example.org:8443", "Remember for these pages"),
        ("example.org/?q=*", "Remember for these pages"), ("file:///home/me/notes/**", "Remember for these files"),
        ("from:org.gnome.Evolution example.org", "Remember for this domain"), ("a b", "Remember"), ("", "Remember"),
    ])
    func theRememberBoxSaysWhatThePatternReaches(pattern: String, label: String) {
        #expect(WindowPicker.Request.rememberLabel(for: pattern) == label)
    }

    @Test func anInvalidPatternInAnAnswerIsNotRemembered() throws {
        let answer = try WindowPicker.Answer(parsing: #"{"choice": 0, "remember": "a b"}"#, request: request)
        #expect(answer.remember == nil && answer.choice == 0)
    }

    @Test func privateWindowActionsAreFoundByIDOrName() throws {
        let directory = try TemporaryDirectory(prefix: "brsync-private")
        defer { directory.remove() }
        func entry(_ name: String, _ body: String) throws -> String {
            let path = directory.file(name)
            try ("[Desktop Entry]\nType=Application\nName=B\nExec=b %u\n" + body).write(
                toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let firefox = directory.file("firefox.desktop")
        try DesktopEntryTests.firefox.write(toFile: firefox, atomically: true, encoding: .utf8)
        #expect(BrowserDetector.privateWindowCommand(ofEntryAt: firefox) == "firefox --private-window %u")
        // Debian's Chromium: the action is "incognito", with no field code.
        let chromium = try entry(
            "chromium.desktop",
            "Actions=incognito;\n[Desktop Action incognito]\nName=Open a New Window in incognito mode\nExec=/usr/bin/chromium --incognito\n"
        )
        #expect(BrowserDetector.privateWindowCommand(ofEntryAt: chromium) == "/usr/bin/chromium --incognito")
        // An unknown id whose name says so.
        let edge = try entry(
            "edge.desktop",
            "Actions=newinprivate;\n[Desktop Action newinprivate]\nName=New InPrivate window\nExec=edge --inprivate\n")
        #expect(BrowserDetector.privateWindowCommand(ofEntryAt: edge) == "edge --inprivate")
        // None; an action not listed in Actions; an unusable Exec; no file.
        let plain = try entry(
            "plain.desktop", "Actions=new-window;\n[Desktop Action new-window]\nName=New Window\nExec=b --new-window\n")
        let unlisted = try entry(
            "unlisted.desktop", "[Desktop Action new-private-window]\nName=New Private Window\nExec=b --private\n")
        let broken = try entry(
            "broken.desktop", "Actions=private;\n[Desktop Action private]\nName=Private\nExec=b \"unterminated\n")
        for path in [plain, unlisted, broken, directory.file("missing.desktop")] {
            #expect(BrowserDetector.privateWindowCommand(ofEntryAt: path) == nil, "\(path)")
        }
    }

    /// Known browsers whose entry has no action get their flag, before the
    /// link's field code (after a profile's arguments, inside Flatpak's
    /// `@@u … @@`), or at the end when the command has none.
    @Test func knownBrowsersGetTheirPrivateWindowFlag() {
        #expect(
            PrivateWindow.command(catalogID: "firefox", exec: "/usr/lib/firefox-esr/firefox-esr %u")
                == "/usr/lib/firefox-esr/firefox-esr --private-window %u")
        #expect(
            PrivateWindow.command(catalogID: "chromium", exec: "/usr/bin/chromium %U")
                == "/usr/bin/chromium --incognito %U")
        #expect(
            PrivateWindow.command(catalogID: "firefox", exec: "firefox -P work %u")
                == "firefox -P work --private-window %u")
        #expect(
            PrivateWindow.command(
                catalogID: "firefox", exec: "/usr/bin/flatpak run --command=firefox org.mozilla.firefox @@u %u @@")
                == "/usr/bin/flatpak run --command=firefox org.mozilla.firefox --private-window @@u %u @@")
        #expect(PrivateWindow.command(catalogID: "edge", exec: "microsoft-edge") == "microsoft-edge --inprivate")
        #expect(PrivateWindow.command(catalogID: "chrome", exec: "chrome --incognito %U") == "chrome --incognito %U")
        // A quoted program and an escaped percent stay as they were.
        #expect(
            PrivateWindow.command(catalogID: "brave", exec: "\"/opt/my browser/brave\" --x=100%% %U")
                == "\"/opt/my browser/brave\" --x=100%% --incognito %U")
        // Unknown, always private, or unreadable: none.
        #expect(PrivateWindow.command(catalogID: "my-browser", exec: "mine %u") == nil)
        #expect(PrivateWindow.command(catalogID: "tor-browser", exec: "torbrowser %u") == nil)
        #expect(PrivateWindow.command(catalogID: "firefox", exec: "firefox \"%u") == nil)
    }
}
