import Testing

@testable import Model

/// What a synced profile may make a machine run: its family's list, values
/// that are names, and the arguments placed right after the browser's own
/// program whatever launches it.
@Suite struct ProfileArgumentsTests {
    /// Arguments a profile of `base` may pass on synced data alone.
    @Test(arguments: [
        ("chromium", ["--profile-directory=Work"]),
        ("chrome", ["--profile-directory=Profile 1", "--new-window"]),
        ("brave", ["--incognito"]),
        ("vivaldi", ["--guest"]),
        ("edge", ["--inprivate", "--profile-directory=Default"]),
        ("opera", ["--private"]),
        ("firefox", ["-P", "work"]),
        ("firefox", ["-p", "work stuff", "--no-remote"]),
        ("librewolf", ["--private-window"]),
        ("tor-browser", ["-new-instance", "-P", "tor"]),
        ("zen", ["--new-tab"]),
        ("epiphany", ["--incognito-mode"]),
        ("epiphany", ["-p", "--new-window"]),
        ("falkon", ["--profile=work", "-i"]),
        ("falkon", ["-p", "work", "--new-tab"]),
        ("falkon", ["--profile", "work"]),
    ])
    func allowed(base: String, arguments: [String]) {
        #expect(ProfileArguments.problem(arguments, base: base) == nil, "\(base) \(arguments)")
    }

    /// Arguments that wait for each machine's approval, and the part of the reason that says why.
    @Test(arguments: [
        ("chromium", ["--renderer-cmd-prefix=touch /tmp/pwned"], "not an argument a chromium profile may take"),
        ("chromium", ["--gpu-launcher=/bin/sh"], "not an argument"),
        ("chromium", ["--user-data-dir=/tmp/x"], "not an argument"),
        ("chromium", ["--load-extension=/tmp/evil"], "not an argument"),
        ("chromium", ["--remote-debugging-port=9222"], "not an argument"),
        ("chromium", ["--profile-directory"], "after '='"),
        ("chromium", ["--profile-directory", "Work"], "after '='"),
        ("chromium", ["--profile-directory=../../.ssh"], "'..'"),
        ("chromium", ["--profile-directory=/home/me/x"], "a path"),
        ("chromium", ["--profile-directory=a/b"], "a path"),
        ("chromium", ["--profile-directory=--no-sandbox"], "read as an option"),
        ("chromium", ["--profile-directory=%u"], "no '%'"),
        ("chromium", ["--profile-directory="], "1 to 64 bytes"),
        ("chromium", ["--incognito=1"], "takes no value"),
        ("chromium", ["--inprivate"], "not an argument"),
        ("chromium", ["-P", "work"], "not an argument"),
        ("firefox", ["--profile", "/tmp/prepared"], "not an argument"),
        ("firefox", ["-profile", "/tmp/prepared"], "not an argument"),
        ("firefox", ["-P"], "needs a profile name"),
        ("firefox", ["-P", "-headless"], "read as an option"),
        ("firefox", ["-P", "..\\x"], "'..'"),
        ("firefox", ["-P", "a\u{1B}[2J"], "control"),
        ("firefox", ["-P", "work\u{2028}--headless"], "line-separator"),
        ("chromium", ["--profile-directory=a\u{202E}b"], "format"),
        ("firefox", ["--marionette"], "not an argument"),
        ("firefox", ["--remote-debugging-port", "9222"], "not an argument"),
        ("firefox", ["--private-window=https://evil.example"], "takes no value"),
        ("epiphany", ["--profile=/tmp/x"], "not an argument"),
        ("falkon", ["--portable"], "not an argument"),
        ("falkon", ["--renderer-cmd-prefix=touch /tmp/pwned"], "not an argument"),
        ("falkon", ["-p"], "needs a profile name"),
        ("my-browser", ["--new-window"], "not a browser whose command line brsync knows"),
        // A combining mark hides a '-', '/' or '=' from Characters, not from the browser.
        ("firefox", ["-P", "-\u{301}headless"], "read as an option"),
        ("firefox", ["-P", "a/\u{301}b"], "a path"),
        ("chromium", ["--profile-directory=a\u{301}/b"], "a path"),
        ("safari", ["--new-window"], "not a browser whose command line brsync knows"),
    ])
    func waitsForApproval(base: String, arguments: [String], reason: String) {
        let problem = ProfileArguments.problem(arguments, base: base)
        #expect(problem?.contains(reason) == true, "\(base) \(arguments): \(problem ?? "allowed")")
    }

    /// Where a profile's arguments go in each launcher form.
    @Test(arguments: [
        ("firefox %u", "firefox -P work %u"),
        ("/usr/bin/firefox-esr %u", "/usr/bin/firefox-esr -P work %u"),
        ("firefox", "firefox -P work"),
        ("flatpak run org.mozilla.firefox %u", "flatpak run org.mozilla.firefox -P work %u"),
        (
            "/usr/bin/flatpak run --branch=stable --arch=x86_64 --command=firefox --file-forwarding org.mozilla.firefox @@u %u @@",
            "/usr/bin/flatpak run --branch=stable --arch=x86_64 --command=firefox --file-forwarding org.mozilla.firefox -P work @@u %u @@"
        ),
        ("snap run firefox %u", "snap run firefox -P work %u"),
        (
            "env BAMF_DESKTOP_FILE_HINT=/var/lib/snapd/desktop/applications/firefox_firefox.desktop /snap/bin/firefox %u",
            "env BAMF_DESKTOP_FILE_HINT=/var/lib/snapd/desktop/applications/firefox_firefox.desktop /snap/bin/firefox -P work %u"
        ),
        (
            "env -i MOZ_ENABLE_WAYLAND=1 flatpak run org.mozilla.firefox %u",
            "env -i MOZ_ENABLE_WAYLAND=1 flatpak run org.mozilla.firefox -P work %u"
        ),
        ("flatpak --verbose run org.mozilla.firefox", "flatpak --verbose run org.mozilla.firefox -P work"),
    ])
    func argumentsFollowTheBrowsersOwnProgram(exec: String, expected: String) throws {
        let profile = try BrowserProfile(base: "firefox", arguments: ["-P", "work"])
        #expect(try profile.command(from: exec) == expected)
    }

    /// Arguments read back as written, by the scalar: a space before a
    /// combining mark still parts two arguments (found by the fuzzer: the
    /// profile's first argument ran into the program's name).
    @Test(arguments: [
        ["hhttp.usws.example'.\u{16}ca", "\u{94D}\u{200D}**"],
        ["a b", "\u{301}c", "\u{301}"],
        ["x", "\"\u{301}$`\\"],
    ])
    func quotedArgumentsReadBack(_ arguments: [String]) throws {
        let text = arguments.map(ExecCommand.quote).joined(separator: " ")
        #expect(try ExecCommand(text).arguments == arguments, "\(text.debugDescription)")
        let profile = try BrowserProfile(base: "firefox", arguments: Array(arguments.dropFirst()))
        #expect(
            try ExecCommand(try profile.command(from: ExecCommand.quote(arguments[0]) + " %u")).arguments == arguments
                + ["%u"])
    }

    /// Launch commands where the arguments cannot be placed safely.
    @Test(arguments: [
        ("sh -c \"firefox %u\"", "a shell runs it"),
        ("/bin/bash /opt/firefox/run.sh %u", "a shell runs it"),
        ("env -u DISPLAY firefox %u", "an option brsync does not read"),
        ("env A=1", "names no program"),
        ("flatpak run --command firefox org.mozilla.firefox %u", "no application id"),
        ("flatpak run %u", "no application id"),
        ("snap run", "no snap"),
        // Found by the fuzzer: an "application id" that is a path ending in a launcher.
        ("flatpak run --command=chromium org.c(((com/l.https://www.news.exame..k/a/env x", "no application id"),
        ("flatpak run org..mozilla.firefox %u", "no application id"),
        ("flatpak run org.mozilla.1firefox %u", "no application id"),
        ("snap run ../bin/sh %u", "no snap"),
        ("snap run Firefox %u", "no snap"),
        ("flatpak list", "without 'run'"),
        ("snap info firefox", "without 'run'"),
    ])
    func commandsThatCannotTakeArguments(exec: String, reason: String) throws {
        let profile = try BrowserProfile(base: "firefox", arguments: ["-P", "work"])
        #expect(throws: ExecCommand.Problem.self) { try profile.command(from: exec) }
        do { _ = try profile.command(from: exec) } catch {
            #expect(error.reason.contains(reason), "\(exec): \(error.reason)")
        }
    }
}
