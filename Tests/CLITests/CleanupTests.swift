import Foundation
import TestSupport
import Testing

/// Link cleanup through the real binary: what `resolve --json` and `explain`
/// report, a click opening the cleaned link, the per-rule opt-out, and the
/// synced parameter list with its bad input.
@Suite struct CleanupTests {
    static let wrapped =
        "https://nam12.safelinks.protection.outlook.com/?url=https%3A%2F%2Fus02web.zoom.us%2Fj%2F1%3Futm_source%3Dmail%26pwd%3Dx&data=05"

    @Test func resolveReportsTheCleanedLinkAndWhatLaunchesIt() throws {
        let cli = try CLIHarness()
        try cli.standardSetup()
        try cli.mustSucceed("rules", "add", "zoom.us", "chrome")
        let result = try cli.run("resolve", "--json", Self.wrapped)
        #expect(result.status == 0, "\(result)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(json["url"] as? String == "https://us02web.zoom.us/j/1?pwd=x")
        #expect(json["argv"] as? [String] == ["google-chrome", "https://us02web.zoom.us/j/1?pwd=x"])
        #expect(json["phone"] as? String == "googlechromes://us02web.zoom.us/j/1?pwd=x")
        #expect(json["removed"] as? [String] == ["utm_source=mail"])
        #expect((json["unwrapped"] as? [[String: String]])?.map { $0["wrapper"] } == ["Microsoft Safe Links"])
        #expect(json["given"] as? String == Self.wrapped)
        #expect(json["rule"] as? String == "zoom.us")
        let explained = try cli.run("explain", Self.wrapped)
        #expect(explained.stdout.contains("unwrapped: a Microsoft Safe Links link"), "\(explained.stdout)")
        #expect(explained.stdout.contains("tracking parameters removed: utm_source=mail"))
        #expect(explained.stdout.contains("rules decide on: https://us02web.zoom.us/j/1?pwd=x"))
        #expect(
            explained.stdout.contains("launch: google-chrome 'https://us02web.zoom.us/j/1?pwd=x'"),
            "\(explained.stdout)")
        // `rules test` matches the cleaned link.
        let tested = try cli.run("rules", "test", "zoom.us", Self.wrapped)
        #expect(tested.status == 0 && tested.stdout.contains("cleaned: https://us02web.zoom.us/j/1?pwd=x"), "\(tested)")
    }

    @Test func aRuleCanKeepTrackingParameters() throws {
        let cli = try CLIHarness()
        try cli.standardSetup()
        let link = "https://shop.example/item?fbclid=abc&id=7"
        try cli.mustSucceed("rules", "add", "shop.example", "chrome", "--keep-tracking")
        #expect(try cli.run("resolve", link).stdout.contains("\t\(link)\t"))
        #expect(try cli.run("rules", "list").stdout.contains("keeps tracking parameters"))
        // Changing the rule without the flag keeps the choice; --no-keep-tracking ends it.
        try cli.mustSucceed("rules", "add", "shop.example", "firefox")
        #expect(try cli.run("resolve", link).stdout.contains("\t\(link)\t"))
        try cli.mustSucceed("rules", "add", "shop.example", "firefox", "--no-keep-tracking")
        #expect(try cli.run("resolve", link).stdout.contains("\thttps://shop.example/item?id=7\t"))
        let exported = try cli.run("export")
        #expect(exported.stdout.contains("keepTracking"), "the phone and other machines get it: \(exported.stdout)")
    }

    @Test func theParameterListIsASettingWithCheckedInput() throws {
        let cli = try CLIHarness()
        try cli.standardSetup()
        #expect(try cli.run("cleanup").stdout.contains("the default list"))
        try cli.mustSucceed("cleanup", "params", "--add", "ref", "--add", "src_*", "--remove", "gclid")
        let link = "https://a.example/?ref=1&src_x=2&gclid=3&k=4"
        #expect(try cli.run("cleanup", "url", link).stdout == "https://a.example/?gclid=3&k=4\n")
        let shown = try cli.run("cleanup", "show", "--json")
        #expect(shown.stdout.contains(#""default":false"#) && shown.stdout.contains(#""src_*""#), "\(shown.stdout)")
        let before = try cli.snapshot()
        for bad in [
            ["cleanup", "params", "--add", "a=b"], ["cleanup", "params", "--add", "*"],
            ["cleanup", "params", "--remove", "nothere"],
            ["cleanup", "params"], ["cleanup", "params", "--reset", "--add", "x"], ["cleanup", "url", "mailto:x@y"],
        ] {
            let result = try cli.run(bad)
            #expect(result.status == 2 && !result.stderr.isEmpty, "\(bad): \(result)")
        }
        #expect(try cli.snapshot() == before, "bad input changed nothing")
        try cli.mustSucceed("cleanup", "params", "--reset")
        #expect(try cli.run("cleanup", "url", link).stdout == "https://a.example/?ref=1&src_x=2&k=4\n")
    }

    /// A clicked wrapped link reaches the browser cleaned.
    @Test func aClickOpensTheCleanedLink() throws {
        let world = try DesktopClickTests.readyWorld()
        #expect(
            try world.run(
                "open", "https://www.google.com/url?q=https%3A%2F%2Fexample.org%2Fa%3Futm_medium%3Dx%26b%3D1&sa=D"
            ).status == 0)
        #expect(
            world.waitForLaunch(count: 1).last?.hasSuffix("fakefox https://example.org/a?b=1") == true,
            "\(world.launched())")
    }
}
