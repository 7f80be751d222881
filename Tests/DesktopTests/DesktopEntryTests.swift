import Model
import Testing

@testable import Desktop

@Suite struct DesktopEntryTests {
    static let firefox = """
        # A comment
        [Desktop Entry]
        Type=Application
        Name=Firefox
        Name[de]=Feuerfuchs
        Name[sr@latin]=Fajerfoks
        Name[pt_BR]=Raposa
        Comment=Browse\\sthe\\tWeb\\\\now
        Exec=firefox %u
        MimeType=text/html;x-scheme-handler/http;x-scheme-handler/https;
        Categories=Network;WebBrowser;Odd\\;Name;
        Actions=new-window;new-private-window;

        [Desktop Action new-window]
        Name=New Window
        Exec=firefox --new-window %u

        [Desktop Action new-private-window]
        Name=New Private Window
        Exec=firefox --private-window %u
        """

    @Test func parsesGroupsListsEscapesAndActions() throws {
        let entry = try DesktopEntry(text: Self.firefox, id: "firefox.desktop", path: "/x/firefox.desktop")
        #expect(entry.string("Type") == "Application")
        #expect(entry.string("Comment") == "Browse the\tWeb\\now")
        #expect(entry.list("MimeType") == ["text/html", "x-scheme-handler/http", "x-scheme-handler/https"])
        #expect(entry.list("Categories") == ["Network", "WebBrowser", "Odd;Name"])
        #expect(entry.actions.map(\.name) == ["New Window", "New Private Window"])
        #expect(entry.actions.last?.exec == "firefox --private-window %u")
    }

    static let locales: [(String?, String)] = [
        ("de_DE.UTF-8", "Feuerfuchs"), ("de", "Feuerfuchs"), ("sr_RS@latin", "Fajerfoks"), ("pt_BR", "Raposa"),
        ("pt_PT", "Firefox"), ("C", "Firefox"), (nil, "Firefox"),
    ]

    @Test("localised names", arguments: locales)
    func localised(_ row: (String?, String)) throws {
        let entry = try DesktopEntry(text: Self.firefox, id: "firefox.desktop", path: "/x")
        #expect(entry.localized("Name", locale: row.0) == row.1)
    }

    static let malformed: [(String, String)] = [
        ("Name=x\n[Desktop Entry]", "a key before any group"),
        ("[Desktop Entry]\nthis is not a pair", "not key=value"),
        ("[Desktop Entry\nName=x", "[Name]"),
        ("[Desktop Entry]\n[Desktop Entry]", "appears twice"),
        ("[Other]\nName=x", "no [Desktop Entry]"),
        ("[Desktop Entry]\nNa me=x", "invalid key"),
    ]

    @Test("malformed files say where", arguments: malformed)
    func malformedFile(_ row: (String, String)) {
        #expect { _ = try DesktopEntry(text: row.0, id: "x.desktop", path: "/x.desktop") } throws: {
            String(describing: $0).contains(row.1)
        }
    }
}

@Suite struct ExecCommandTests {
    static let splits: [(String, [String])] = [
        ("firefox %u", ["firefox", "%u"]),
        ("  firefox   -P  work %u ", ["firefox", "-P", "work", "%u"]),
        (#""/opt/My Browser/browser" %U"#, ["/opt/My Browser/browser", "%U"]),
        (#"sh -c "echo \"hi\" \$HOME \\ \`x\`""#, ["sh", "-c", #"echo "hi" $HOME \ `x`"#]),
        (#"browser """#, ["browser", ""]),
    ]

    @Test("quoting rules", arguments: splits)
    func splitsArguments(_ row: (String, [String])) throws {
        #expect(try ExecCommand(row.0).arguments == row.1)
        // What quote writes, the parser reads back.
        #expect(try ExecCommand(row.1.map(ExecCommand.quote).joined(separator: " ")).arguments == row.1)
    }

    static let expansions: [(String, [String])] = [
        ("firefox %u", ["firefox", "https://a.example/x?y=1&z"]),
        ("chrome %U", ["chrome", "https://a.example/x?y=1&z", "https://b.example/"]),
        ("browser %f", ["browser", "https://a.example/x?y=1&z"]),
        ("epiphany %F", ["epiphany", "https://a.example/x?y=1&z", "https://b.example/"]),
        (
            "app %i %c %k %u",
            ["app", "--icon", "web-browser", "Fire Fox", "/apps/ff.desktop", "https://a.example/x?y=1&z"]
        ),
        ("app --name=%c %%u", ["app", "--name=Fire Fox", "%u", "https://a.example/x?y=1&z", "https://b.example/"]),
        ("app %d %D %n %N %v %m %u", ["app", "", "", "", "", "", "", "https://a.example/x?y=1&z"]),
        ("no-codes --flag", ["no-codes", "--flag", "https://a.example/x?y=1&z", "https://b.example/"]),
    ]

    @Test("field codes", arguments: expansions)
    func expands(_ row: (String, [String])) throws {
        let context = ExecCommand.Context(
            urls: ["https://a.example/x?y=1&z", "https://b.example/"], icon: "web-browser",
            name: "Fire Fox", desktopFile: "/apps/ff.desktop")
        #expect(try ExecCommand(row.0).expanded(context) == row.1)
    }

    @Test func badCommands() {
        for (exec, reason) in [
            ("", "empty"), (#"browser "unclosed"#, "not closed"), (#"browser "\x""#, "not a valid escape"),
        ] {
            #expect { _ = try ExecCommand(exec) } throws: { String(describing: $0).contains(reason) }
        }
    }
}
