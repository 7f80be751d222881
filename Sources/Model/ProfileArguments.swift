import JSON

/// The arguments a profile's synced record may make a machine pass to a
/// browser, by browser family. A profile syncs (``BrowserProfile``), so one
/// machine, or anyone who can write its record, would otherwise choose what
/// every other machine runs: Chromium's `--renderer-cmd-prefix=COMMAND` runs
/// a program for every page, Firefox's `--profile PATH` opens a folder anyone
/// may have prepared. So only what a profile needs passes: which profile, a
/// private or new window. Anything else runs only where this machine's user
/// approved it (the client keeps the approvals), and a readable account's
/// server refuses it.
///
/// Each entry, from the browser's own documentation of its command line:
///
/// | family | argument | documented as | why it is safe |
/// |---|---|---|---|
/// | Chromium | `--profile-directory=NAME` | "Selects directory of profile to associate with the first browser launched" | a folder *name* inside the browser's own data folder (no path): it picks one of this machine's profiles, or makes one there |
/// | Chromium | `--incognito`, `--guest` | launch directly in incognito, or guest, mode | a window with less state, not more |
/// | Chromium | `--new-window` | "Launches URL in new browser window" | where the link opens |
/// | Edge | `--inprivate` | Edge's incognito | as `--incognito` |
/// | Opera | `--private` | Opera's private window | as `--incognito` |
/// | Firefox | `-P NAME` (`-p`) | "Start with the profile with the given profile name" | a name from this machine's `profiles.ini`; `--profile PATH` (a folder) is not taken |
/// | Firefox | `--private-window`, `--private` | a private window, permanent private browsing | less state, not more |
/// | Firefox | `--new-window`, `--new-tab` | open the link in a new window or tab | where the link opens |
/// | Firefox | `--no-remote`, `--new-instance` | start a separate instance (two profiles at once) | which process opens the link |
/// | GNOME Web | `--incognito-mode` (`-i`), `--private-instance` (`-p`), `--new-window` | incognito, a private instance, a new window | less state, or where the link opens; `--profile=DIR` (a folder) is not taken |
/// | Falkon | `--profile=NAME` (`-p NAME`) | "Starts with specified profile" (a name) | a name, as Firefox's |
/// | Falkon | `--private-browsing` (`-i`), `--new-window` (`-w`), `--new-tab` (`-t`), `--no-remote` (`-r`) | private browsing, a new window or tab, a new instance | as above |
///
/// Firefox's arguments take one or two leading dashes (`-P`, `--new-window`),
/// as Firefox reads them. A value must be a name: 1 to 64 bytes, not an option
/// itself (no leading `-`), no path (`/`, `\`), no `..`, no control character,
/// no `%` (a field code), not starting with `.`. Chromium's and GNOME Web's
/// switches are read as `--name=value` and never take the next argument; a
/// switch that takes no value may not carry one.
///
/// Other browsers (those outside the catalog, and the phone-only ones) have
/// no family: none of their profile arguments runs without approval. Falkon
/// passes unknown options on to its Chromium engine, which is why it is held to
/// its own list like the others.
public enum ProfileArguments {
    /// A family of browsers that read the same command line.
    public enum Family: String, Sendable, CaseIterable {
        case chromium, firefox, epiphany, falkon
    }

    /// Catalog browser → its family.
    static let families: [String: Family] = [
        "chrome": .chromium, "chromium": .chromium, "brave": .chromium, "edge": .chromium, "vivaldi": .chromium,
        "opera": .chromium, "yandex": .chromium,
        "firefox": .firefox, "librewolf": .firefox, "tor-browser": .firefox, "zen": .firefox, "floorp": .firefox,
        "mullvad-browser": .firefox,
        "epiphany": .epiphany, "falkon": .falkon,
    ]

    /// The family of catalog browser `id`, or nil (not in the catalog, or no Linux command line).
    public static func family(of id: String) -> Family? { families[id] }

    /// An argument a family takes: its spellings, and whether it takes a name.
    struct Allowed {
        let spellings: [String]
        let takesName: Bool
    }

    static func allowed(_ family: Family, base: String) -> [Allowed] {
        switch family {
        case .chromium:
            return [
                Allowed(spellings: ["--profile-directory"], takesName: true),
                Allowed(
                    spellings: ["--incognito", "--guest", "--new-window"] + (base == "edge" ? ["--inprivate"] : [])
                        + (base == "opera" ? ["--private"] : []), takesName: false),
            ]
        case .firefox:
            return [
                Allowed(spellings: ["-P", "-p"], takesName: true),
                Allowed(
                    spellings: ["private-window", "private", "new-window", "new-tab", "no-remote", "new-instance"]
                        .flatMap { ["-\($0)", "--\($0)"] }, takesName: false),
            ]
        case .epiphany:
            return [
                Allowed(
                    spellings: ["--incognito-mode", "-i", "--private-instance", "-p", "--new-window"], takesName: false)
            ]
        case .falkon:
            return [
                Allowed(spellings: ["--profile", "-p"], takesName: true),
                Allowed(
                    spellings: [
                        "--private-browsing", "-i", "--new-window", "-w", "--new-tab", "-t", "--no-remote", "-r",
                    ], takesName: false),
            ]
        }
    }

    /// Why a profile of `base` may not pass `arguments` on synced data alone
    /// (the first argument at fault, and why), or nil when each one is on its
    /// family's list with a value that is a name.
    public static func problem(_ arguments: [String], base: String) -> String? {
        guard let family = family(of: base) else {
            return
                "'\(DisplayText.printable(base.prefix(64)))' is not a browser whose command line brsync knows, so no argument of its profiles runs on synced data alone"
        }
        let allowed = Self.allowed(family, base: base)
        /// Whether `spelling` is one of the list's, taking a name or not.
        func find(_ spelling: String) -> Allowed? { allowed.first { $0.spellings.contains(spelling) } }
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let shown = "'\(DisplayText.printable(argument.prefix(80)))'"
            // `--name=value`; Firefox's `-P` (and Falkon's `-p`) take the next argument instead.
            // Split at the first '=' byte, as the browser does (not at a Character).
            let (name, inlineValue): (String, String?) = {
                let bytes = Array(argument.utf8)
                guard bytes.starts(with: [0x2D, 0x2D]), let equals = bytes.firstIndex(of: UInt8(ascii: "=")) else {
                    return (argument, nil)
                }
                return (
                    String(decoding: bytes[..<equals], as: UTF8.self),
                    String(decoding: bytes[(equals + 1)...], as: UTF8.self)
                )
            }()
            guard let entry = find(name) else {
                return "\(shown) is not an argument a \(family.rawValue) profile may take from synced data"
            }
            if entry.takesName {
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else if family == .chromium {
                    return "\(shown) takes its name after '=' (\(name)=NAME)"
                } else {
                    guard index + 1 < arguments.count else { return "\(shown) needs a profile name after it" }
                    index += 1
                    value = arguments[index]
                }
                if let problem = nameProblem(value) { return "the name given to \(shown): \(problem)" }
            } else if inlineValue != nil {
                return "\(shown) takes no value"
            }
            index += 1
        }
        return nil
    }

    /// Why `value` is not a profile name, or nil. Read byte by byte, as the
    /// browser reads it (a combining mark after `-` or `/` hides it from a
    /// comparison of Characters, not from the browser).
    static func nameProblem(_ value: String) -> String? {
        let bytes = Array(value.utf8)
        func has(_ text: String) -> Bool {
            let needle = Array(text.utf8)
            return bytes.count >= needle.count
                && (0...(bytes.count - needle.count)).contains { bytes[$0..<$0 + needle.count].elementsEqual(needle) }
        }
        if bytes.isEmpty || bytes.count > 64 { return "a name is 1 to 64 bytes" }
        if bytes[0] == UInt8(ascii: "-") { return "a name that starts with '-' would be read as an option" }
        if bytes[0] == UInt8(ascii: ".") || has("..") { return "a name does not start with '.' nor hold '..'" }
        if has("/") || has("\\") { return "a name, not a path: no '/' or '\\'" }
        if has("%") { return "a name holds no '%'" }
        // Nothing invisible or that breaks a line where the name is shown (approving it means reading it).
        if value.unicodeScalars.contains(where: { scalar in
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned:
                return true
            default: return false
            }
        }) {
            return "a name holds no control, format or line-separator character"
        }
        return nil
    }
}
