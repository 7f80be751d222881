import Model

/// Opening a link in a private window when a browser's desktop entry has no
/// action for it (Debian's `firefox-esr.desktop` and `chromium.desktop` have
/// none): the command-line flag each known browser takes.
public enum PrivateWindow {
    /// Catalog id → the arguments that open a private window. Tor Browser and
    /// Mullvad Browser are private already; Safari and the phone-only
    /// browsers do not run here.
    static let arguments: [String: [String]] = [
        "firefox": ["--private-window"], "librewolf": ["--private-window"], "floorp": ["--private-window"],
        "zen": ["--private-window"],
        "chrome": ["--incognito"], "chromium": ["--incognito"], "brave": ["--incognito"], "vivaldi": ["--incognito"],
        "yandex": ["--incognito"],
        "edge": ["--inprivate"], "opera": ["--private"], "epiphany": ["--incognito-mode"],
        "falkon": ["--private-browsing"],
    ]

    /// `exec` (the browser's launch command here) with the private-window
    /// flag of catalog browser `catalogID` put before the link's field code
    /// (or at the end when it has none), or nil when that browser has no flag
    /// or the command cannot be read.
    public static func command(catalogID: String, exec: String) -> String? {
        guard let flags = arguments[catalogID], let command = try? ExecCommand(exec) else { return nil }
        var words = command.arguments // as written: field codes unexpanded
        let codes = ["%u", "%U", "%f", "%F", "@@u", "@@"]
        let at =
            words.indices.dropFirst().first { index in codes.contains { words[index].contains($0) } } ?? words.endIndex
        guard !words[1...].contains(where: { flags.contains($0) }) else { return exec } // already private
        words.insert(contentsOf: flags, at: at)
        return words.map(ExecCommand.quote).joined(separator: " ")
    }
}
