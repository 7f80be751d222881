import JSON
import Testing

@testable import Model

@Suite struct DisplayTextTests {
    static let rows: [(String, String)] = [
        ("Firefox", "Firefox"),
        ("evil\u{1B}]0;owned\u{07}", "evil\u{FFFD}]0;owned\u{FFFD}"),
        ("two\nlines", "two\u{FFFD}lines"),
        ("csi\u{9B}31m", "csi\u{FFFD}31m"),
        ("abc\u{202E}gpj.exe", "abc\u{FFFD}gpj.exe"),
        ("isolate\u{2066}x\u{2069}", "isolate\u{FFFD}x\u{FFFD}"),
        ("del\u{7F}", "del\u{FFFD}"),
        ("Zürich 浏览器", "Zürich 浏览器"),
        ("h1.\u{202E}\u{200B}مممم", "h1.\u{FFFD}\u{FFFD}مممم"),
        ("hidden\u{2060}\u{FEFF}\u{061C}x", "hidden\u{FFFD}\u{FFFD}\u{FFFD}x"),
        // Joiners stay: scripts and emoji sequences need them.
        ("👩\u{200D}💻 क्\u{200C}ष", "👩\u{200D}💻 क्\u{200C}ष"),
    ]

    @Test("control characters and bidi overrides are shown as �", arguments: rows)
    func printable(_ row: (String, String)) {
        #expect(DisplayText.printable(row.0) == row.1)
    }

    @Test func linesKeepTheirBreaksAndTabs() {
        #expect(DisplayText.printableLines("a\tb\nc\u{1B}[2J") == "a\tb\nc\u{FFFD}[2J")
    }

    /// JSON output escapes what a terminal would act on, and reads back unchanged.
    @Test func jsonEscapesTerminalControls() throws {
        for text in [
            "esc\u{1B}[31m", "c1\u{9B}", "bidi\u{202E}x", "del\u{7F}", "plain ü 浏览器", "line\u{2028}", "zw\u{200B}",
        ] {
            let json = JSONValue.string(text).jsonText
            #expect(!json.unicodeScalars.contains { $0.isUnsafeToDisplay }, "\(json.debugDescription)")
            #expect(try JSONValue.parse(json) == .string(text))
        }
    }
}
