import Testing

@testable import Model

@Suite struct URLFormatTests {
    static let url = try! NormalizedURL("https://example.com:8443/a b/c?x=1&y=ü#frag")

    /// Every catalog browser renders the same URL, with its expected result.
    static let expected: [String: String] = [
        "safari": "https://example.com:8443/a%20b/c?x=1&y=%C3%BC#frag",
        "chrome": "googlechromes://example.com:8443/a%20b/c?x=1&y=%C3%BC#frag",
        "chrome-callback":
            "googlechrome-x-callback://x-callback-url/open/?url=https%3A%2F%2Fexample.com%3A8443%2Fa%2520b%2Fc%3Fx%3D1%26y%3D%25C3%25BC%23frag",
        "firefox":
            "firefox://open-url?url=https%3A%2F%2Fexample.com%3A8443%2Fa%2520b%2Fc%3Fx%3D1%26y%3D%25C3%25BC%23frag",
        "firefox-focus":
            "firefox-focus://open-url?url=https%3A%2F%2Fexample.com%3A8443%2Fa%2520b%2Fc%3Fx%3D1%26y%3D%25C3%25BC%23frag",
        "brave": "brave://open-url?url=https%3A%2F%2Fexample.com%3A8443%2Fa%2520b%2Fc%3Fx%3D1%26y%3D%25C3%25BC%23frag",
        "edge":
            "microsoft-edge://open?url=https%3A%2F%2Fexample.com%3A8443%2Fa%2520b%2Fc%3Fx%3D1%26y%3D%25C3%25BC%23frag",
        "opera-mini": "opera-https://example.com:8443/a%20b/c?x=1&y=%C3%BC#frag",
        "opera": "touch-https://example.com:8443/a%20b/c?x=1&y=%C3%BC#frag",
        "duckduckgo": "ddgQuickLink://https%3A%2F%2Fexample.com%3A8443%2Fa%2520b%2Fc%3Fx%3D1%26y%3D%25C3%25BC%23frag",
        "yandex":
            "yandexbrowser-open-url://https%3A%2F%2Fexample.com%3A8443%2Fa%2520b%2Fc%3Fx%3D1%26y%3D%25C3%25BC%23frag",
        "uc": "ucbrowser://https%3A%2F%2Fexample.com%3A8443%2Fa%2520b%2Fc%3Fx%3D1%26y%3D%25C3%25BC%23frag",
        "aloha": "alohabrowser://https%3A%2F%2Fexample.com%3A8443%2Fa%2520b%2Fc%3Fx%3D1%26y%3D%25C3%25BC%23frag",
        "onion": "onionhttps://example.com:8443/a%20b/c?x=1&y=%C3%BC#frag",
        "puffin": "puffin://https%3A%2F%2Fexample.com%3A8443%2Fa%2520b%2Fc%3Fx%3D1%26y%3D%25C3%25BC%23frag",
    ]

    @Test("every catalog browser renders", arguments: BrowserCatalog.entries)
    func renders(_ entry: BrowserCatalog.Entry) {
        let rendered = URLFormat.render(entry.urlFormat, url: Self.url)
        #expect(URLFormat.problem(with: entry.urlFormat) == nil)
        if let expected = Self.expected[entry.id] {
            #expect(rendered == expected)
        } else {
            // Linux-only browsers take the URL as it is.
            #expect(entry.urlFormat == URLFormat.passThrough)
            #expect(rendered == Self.url.absoluteString)
        }
    }

    @Test func phoneBrowsersAreAllThere() {
        let ids = Set(BrowserCatalog.entries.map(\.id))
        for id in [
            "safari", "chrome", "chrome-callback", "firefox", "firefox-focus", "brave", "edge", "opera-mini",
            "opera", "duckduckgo", "yandex", "uc", "aloha", "onion", "puffin", "chromium", "vivaldi",
            "librewolf", "epiphany", "falkon", "tor-browser", "zen", "floorp", "mullvad-browser",
        ] {
            #expect(ids.contains(id), "\(id) missing from the catalog")
        }
        #expect(ids.count == BrowserCatalog.entries.count, "catalog ids are unique")
    }

    @Test func schemesNameBrowsers() {
        #expect(BrowserCatalog.entry(named: "googlechromes")?.id == "chrome")
        #expect(BrowserCatalog.entry(named: "googlechrome")?.id == "chrome")
        #expect(BrowserCatalog.entry(named: "microsoft-edge")?.id == "edge")
        #expect(BrowserCatalog.entry(named: "ddgquicklink")?.id == "duckduckgo")
        #expect(BrowserCatalog.entry(named: "Firefox")?.id == "firefox")
        #expect(BrowserCatalog.entry(named: "netscape") == nil)
        #expect(BrowserCatalog.entry(forDesktopID: "org.mozilla.firefox.desktop")?.id == "firefox")
        #expect(BrowserCatalog.entry(forDesktopID: "chromium_chromium")?.id == "chromium")
    }

    static let formatProblems: [(String, String)] = [
        ("", "empty"),
        ("mybrowser://open", "no placeholder"),
        ("x://{uri}", "unknown placeholder {uri}"),
        ("x://{url", "no closing"),
    ]

    @Test("bad formats", arguments: formatProblems)
    func badFormat(_ row: (String, String)) {
        #expect(URLFormat.problem(with: row.0)?.contains(row.1) == true)
    }
}
