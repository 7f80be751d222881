/// The browsers brsync knows by name: every browser of the BrowserSelector phone
/// app (same ids, iOS schemes and URL formats) and the common Linux browsers,
/// each with the desktop-entry ids it has on Linux (native package, Flatpak, Snap).
public enum BrowserCatalog {
    public struct Entry: Sendable, Hashable {
        /// The phone app's id, or brsync's for Linux-only browsers.
        public let id: String
        public let name: String
        /// The iOS scheme; "" for none.
        public let urlScheme: String
        public let urlFormat: String
        /// Other schemes that name this browser (the http variant, older apps).
        public let otherSchemes: [String]
        /// Desktop-entry ids (file names without `.desktop`) of this browser on Linux.
        public let desktopIDs: [String]

        /// A Linux browser the phone does not have: it opens the link as it is.
        static func linux(id: String, name: String, desktopIDs: [String]) -> Entry {
            Entry(id: id, name: name, urlScheme: "", urlFormat: "{url}", otherSchemes: [], desktopIDs: desktopIDs)
        }

        public var browser: Browser {
            Browser(id: id, name: name, urlScheme: urlScheme, urlFormat: urlFormat, enabled: true)
        }
    }

    public static let entries: [Entry] = [
        // The phone app's table.
        Entry(id: "safari", name: "Safari", urlScheme: "", urlFormat: "{url}", otherSchemes: [], desktopIDs: []),
        Entry(
            id: "chrome", name: "Chrome", urlScheme: "googlechromes", urlFormat: "googlechromes://{host}{path}",
            otherSchemes: ["googlechrome"],
            desktopIDs: ["google-chrome", "google-chrome-stable", "com.google.Chrome"]),
        Entry(
            id: "chrome-callback", name: "Chrome (callback)", urlScheme: "googlechrome-x-callback",
            urlFormat: "googlechrome-x-callback://x-callback-url/open/?url={url}", otherSchemes: [], desktopIDs: []),
        Entry(
            id: "firefox", name: "Firefox", urlScheme: "firefox", urlFormat: "firefox://open-url?url={url}",
            otherSchemes: [],
            desktopIDs: ["firefox", "firefox-esr", "org.mozilla.firefox", "firefox_firefox"]),
        Entry(
            id: "firefox-focus", name: "Firefox Focus", urlScheme: "firefox-focus",
            urlFormat: "firefox-focus://open-url?url={url}", otherSchemes: [], desktopIDs: []),
        Entry(
            id: "brave", name: "Brave", urlScheme: "brave", urlFormat: "brave://open-url?url={url}",
            otherSchemes: [], desktopIDs: ["brave-browser", "brave-browser-stable", "com.brave.Browser", "brave_brave"]),
        Entry(
            id: "edge", name: "Microsoft Edge", urlScheme: "microsoft-edge",
            urlFormat: "microsoft-edge://open?url={url}",
            otherSchemes: ["microsoft-edge-https", "microsoft-edge-http"],
            desktopIDs: ["microsoft-edge", "microsoft-edge-stable", "com.microsoft.Edge"]),
        Entry(
            id: "opera-mini", name: "Opera Mini", urlScheme: "opera-https", urlFormat: "opera-https://{host}{path}",
            otherSchemes: ["opera-http"], desktopIDs: []),
        Entry(
            id: "opera", name: "Opera", urlScheme: "touch-https", urlFormat: "touch-https://{host}{path}",
            otherSchemes: ["touch-http"], desktopIDs: ["opera", "com.opera.Opera", "opera_opera"]),
        Entry(
            id: "duckduckgo", name: "DuckDuckGo", urlScheme: "ddgQuickLink", urlFormat: "ddgQuickLink://{url}",
            otherSchemes: [], desktopIDs: []),
        Entry(
            id: "yandex", name: "Yandex", urlScheme: "yandexbrowser-open-url",
            urlFormat: "yandexbrowser-open-url://{url}",
            otherSchemes: [], desktopIDs: ["yandex-browser", "yandex-browser-stable"]),
        Entry(
            id: "uc", name: "UC Browser", urlScheme: "ucbrowser", urlFormat: "ucbrowser://{url}",
            otherSchemes: [], desktopIDs: []),
        Entry(
            id: "aloha", name: "Aloha", urlScheme: "alohabrowser", urlFormat: "alohabrowser://{url}",
            otherSchemes: [], desktopIDs: []),
        Entry(
            id: "onion", name: "Onion Browser", urlScheme: "onionhttps", urlFormat: "onionhttps://{host}{path}",
            otherSchemes: ["onionhttp"], desktopIDs: []),
        Entry(
            id: "puffin", name: "Puffin", urlScheme: "puffin", urlFormat: "puffin://{url}",
            otherSchemes: ["puffins"], desktopIDs: []),
        // Linux browsers with no phone counterpart.
        Entry.linux(
            id: "chromium", name: "Chromium",
            desktopIDs: ["chromium", "chromium-browser", "org.chromium.Chromium", "chromium_chromium"]),
        Entry.linux(
            id: "vivaldi", name: "Vivaldi",
            desktopIDs: ["vivaldi-stable", "vivaldi", "com.vivaldi.Vivaldi", "vivaldi_vivaldi-stable"]),
        Entry.linux(
            id: "librewolf", name: "LibreWolf",
            desktopIDs: ["librewolf", "io.gitlab.librewolf-community", "librewolf_librewolf"]),
        Entry.linux(
            id: "epiphany", name: "GNOME Web",
            desktopIDs: ["org.gnome.Epiphany", "epiphany", "epiphany-browser", "epiphany_epiphany"]),
        Entry.linux(id: "falkon", name: "Falkon", desktopIDs: ["org.kde.falkon", "falkon", "falkon_falkon"]),
        Entry.linux(
            id: "tor-browser", name: "Tor Browser",
            desktopIDs: [
                "torbrowser", "start-tor-browser", "org.torproject.torbrowser-launcher", "torbrowser-launcher",
            ]),
        Entry.linux(id: "zen", name: "Zen Browser", desktopIDs: ["zen", "zen-browser", "app.zen_browser.zen"]),
        Entry.linux(id: "floorp", name: "Floorp", desktopIDs: ["floorp", "one.ablaze.floorp", "floorp_floorp"]),
        Entry.linux(
            id: "mullvad-browser", name: "Mullvad Browser",
            desktopIDs: ["mullvad-browser", "mullvadbrowser", "net.mullvad.MullvadBrowser"]),
    ]

    private static let byName: [String: Entry] = {
        var table: [String: Entry] = [:]
        for entry in entries {
            table[entry.id] = entry
        }
        for entry in entries {
            for scheme in [entry.urlScheme] + entry.otherSchemes where !scheme.isEmpty {
                table[scheme.lowercased()] = table[scheme.lowercased()] ?? entry
            }
        }
        return table
    }()

    private static let byDesktopID: [String: Entry] = {
        var table: [String: Entry] = [:]
        for entry in entries {
            for desktopID in entry.desktopIDs { table[desktopID.lowercased()] = entry }
        }
        return table
    }()

    /// The entry named by an id or an iOS scheme (case-insensitive), or nil.
    public static func entry(named name: String) -> Entry? {
        byName[name.lowercased()]
    }

    /// The entry whose Linux desktop-entry id is `desktopID` (with or without
    /// `.desktop`), or nil.
    public static func entry(forDesktopID desktopID: String) -> Entry? {
        var id = desktopID.lowercased()
        if id.hasSuffix(".desktop") { id.removeLast(8) }
        return byDesktopID[id]
    }
}
