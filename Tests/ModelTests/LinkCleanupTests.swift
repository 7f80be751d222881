import Model
import Testing

/// Link cleanup, table-driven: each wrapper, nesting, the depth limit,
/// malformed wrappers left alone, the parameter list and the per-rule opt-out.
@Suite struct LinkCleanupTests {
    static func cleaned(_ text: String, _ cleanup: LinkCleanup = LinkCleanup()) throws -> LinkCleanup.Result {
        cleanup.clean(try NormalizedURL(text))
    }

    /// (wrapping link, the link it wraps, the wrapper's name)
    static let wrapped: [(String, String, String)] = [
        (
            "https://nam12.safelinks.protection.outlook.com/?url=https%3A%2F%2Fzoom.us%2Fj%2F1&data=05%7C01&reserved=0",
            "https://zoom.us/j/1", "Microsoft Safe Links"
        ),
        (
            "https://eur03.safelinks.protection.outlook.com/ap/t-59584e83/?url=https%3A%2F%2Fteams.microsoft.com%2Fl%2Fmeetup-join%2F19&data=1",
            "https://teams.microsoft.com/l/meetup-join/19", "Microsoft Safe Links"
        ),
        (
            "https://statics.teams.cdn.office.net/evergreen-assets/safelinks/1/atp-safelinks.html?url=https%3A%2F%2Fgithub.com%2Fa&locale=en-us",
            "https://github.com/a", "Microsoft Teams Safe Links"
        ),
        (
            "https://www.google.com/url?q=https://github.com/apple/swift&sa=D&source=editors",
            "https://github.com/apple/swift", "Google"
        ),
        (
            "https://www.google.co.uk/url?sa=t&url=https%3A%2F%2Fwww.bbc.co.uk%2Fnews&usg=AOv",
            "https://www.bbc.co.uk/news", "Google"
        ),
        ("https://google.de/url?q=http://example.org/a+b", "http://example.org/a%20b", "Google"),
        (
            "https://l.facebook.com/l.php?u=https%3A%2F%2Fexample.org%2Fpost%3Fid%3D3&h=AT1",
            "https://example.org/post?id=3", "Facebook"
        ),
        ("https://lm.facebook.com/l.php?u=https%3A%2F%2Fexample.org%2F", "https://example.org/", "Facebook"),
        ("https://l.messenger.com/l.php?u=https%3A%2F%2Fexample.org%2Fm", "https://example.org/m", "Facebook"),
        ("https://l.instagram.com/?u=https%3A%2F%2Fshop.example%2F&e=AT0", "https://shop.example/", "Instagram"),
        ("https://slack-redir.net/link?url=https%3A%2F%2Fdocs.example.com%2Fx", "https://docs.example.com/x", "Slack"),
        (
            "https://www.youtube.com/redirect?event=video_description&q=https%3A%2F%2Fexample.org%2Fv&v=abc",
            "https://example.org/v", "YouTube"
        ),
        (
            "https://www.linkedin.com/redir/redirect?url=https%3A%2F%2Fexample.org%2Fjob&urlhash=x",
            "https://example.org/job", "LinkedIn"
        ),
        (
            "https://steamcommunity.com/linkfilter/?url=https://store.example/game", "https://store.example/game",
            "Steam"
        ),
        ("https://vk.com/away.php?to=https%3A%2F%2Fexample.org%2F&cc_key=", "https://example.org/", "VK"),
        ("https://out.reddit.com/t3_abc?url=https%3A%2F%2Fexample.org%2Fr&token=x", "https://example.org/r", "Reddit"),
        ("https://t.umblr.com/redirect?z=https%3A%2F%2Fexample.org%2Ft&t=x", "https://example.org/t", "Tumblr"),
    ]

    @Test(arguments: wrapped) func eachWrapperIsUnwrapped(_ link: String, _ target: String, _ wrapper: String) throws {
        let result = try Self.cleaned(link)
        #expect(result.url.absoluteString == target)
        #expect(result.steps.map(\.wrapper) == [wrapper])
        #expect(result.steps.first?.from == (try NormalizedURL(link)))
    }

    @Test func nestedWrappersAreUnwrappedToTheEnd() throws {
        let inner = "https://www.google.com/url?q=https%3A%2F%2Fzoom.us%2Fj%2F9%3Futm_source%3Dcal%26pwd%3Dk"
        let outer = "https://nam1.safelinks.protection.outlook.com/?url=" + inner.replacingPercent()
        let result = try Self.cleaned(outer)
        #expect(result.steps.map(\.wrapper) == ["Microsoft Safe Links", "Google"])
        #expect(result.unwrapped.absoluteString == "https://zoom.us/j/9?utm_source=cal&pwd=k")
        #expect(result.url.absoluteString == "https://zoom.us/j/9?pwd=k")
        #expect(result.removed == ["utm_source=cal"])
    }

    /// A link wrapped deeper than the limit stops unwrapping there.
    @Test func unwrappingStopsAtTheDepthLimit() throws {
        var link = "https://example.org/end"
        for _ in 0..<(LinkCleanup.maxDepth + 2) {
            link = "https://slack-redir.net/link?url=" + link.replacingPercent()
        }
        let result = try Self.cleaned(link)
        #expect(result.steps.count == LinkCleanup.maxDepth)
        #expect(result.url.host == "slack-redir.net")
    }

    /// Wrappers that do not hold a usable http(s) link are left alone.
    @Test(arguments: [
        "https://www.google.com/url?sa=t", // no target
        "https://www.google.com/url?q=", // empty target
        "https://www.google.com/url?q=/search%3Fq%3Dx", // relative
        "https://www.google.com/url?q=javascript:alert(1)", // another scheme
        "https://www.google.com/url?q=file:///etc/passwd", // a local file
        "https://l.facebook.com/l.php?u=https%3A%2F%2F%2F", // not a URL (no host)
        "https://www.google.com/search?q=https://example.org", // not the redirect path
        "https://google.example.com/url?q=https://example.org", // not Google
        "https://www.google.toolongtld/url?q=https://example.org", // not a Google ending
        "https://evil.example/?url=https://safelinks.protection.outlook.com", // not a wrapper host
        "https://nam1.safelinks.protection.outlook.com/?data=1", // no url parameter
        "http://slack-redir.net/link?url=https://exa%mple.org", // a broken escape
    ])
    func malformedWrappersAreLeftAlone(_ link: String) throws {
        let url = try NormalizedURL(link)
        let result = LinkCleanup().clean(url)
        #expect(result.steps.isEmpty, "\(result.url)")
        #expect(result.unwrapped == url)
    }

    @Test func trackingParametersAreRemovedAndTheRestKept() throws {
        let result = try Self.cleaned(
            "https://shop.example/p?UTM_Source=news&id=7&fbclid=IwAR&q=a+b%26c&utm_campaign=x&gclid=1#reviews")
        #expect(result.url.absoluteString == "https://shop.example/p?id=7&q=a+b%26c#reviews")
        #expect(result.removed == ["UTM_Source=news", "fbclid=IwAR", "utm_campaign=x", "gclid=1"])
        #expect(result.steps.isEmpty)
        let only = try Self.cleaned("https://example.org/?utm_source=a&mc_eid=b")
        #expect(only.url.absoluteString == "https://example.org/" && only.url.query == nil)
        let untouched = try Self.cleaned("https://example.org/?utmsource=a&fbclidx=1&ref=2")
        #expect(untouched.removed.isEmpty && untouched.url == untouched.unwrapped)
        // An encoded name is read as its decoded form.
        #expect(
            try Self.cleaned("https://example.org/?%66bclid=1&a=2").url.absoluteString == "https://example.org/?a=2")
    }

    /// The cleaned URL reads back as itself: it is in normal form.
    @Test func theCleanedURLIsInNormalForm() throws {
        for (link, _, _) in Self.wrapped + [("https://a.example/?utm_x=1&b=2&fbclid=3#f", "", "")] {
            let url = try Self.cleaned(link).url
            #expect(try NormalizedURL(url.absoluteString) == url)
            #expect(LinkCleanup().clean(url).url == url, "cleaning twice changes nothing")
        }
    }

    @Test func aRuleMayKeepTrackingParameters() throws {
        let result = try Self.cleaned(
            "https://l.facebook.com/l.php?u=https%3A%2F%2Fshop.example%2F%3Ffbclid%3D1%26id%3D2")
        #expect(result.opened(keepingTracking: false).absoluteString == "https://shop.example/?id=2")
        #expect(result.opened(keepingTracking: true).absoluteString == "https://shop.example/?fbclid=1&id=2")
        var rule = UrlRule(pattern: "shop.example", browser: "firefox", createdAtMillis: 0)
        #expect(!rule.keepsTracking)
        rule.extra["keepTracking"] = .bool(true)
        #expect(rule.keepsTracking)
    }

    @Test func theParameterListReadsFromTheSetting() throws {
        let list = try LinkCleanup(parsing: "ref, src_*  session")
        #expect(list.parameters == ["ref", "src_*", "session"])
        #expect(list.settingText == "ref src_* session")
        #expect(
            try Self.cleaned("https://a.example/?ref=1&src_x=2&utm_source=3", list).url.absoluteString
                == "https://a.example/?utm_source=3")
        #expect(try LinkCleanup(parsing: "").parameters.isEmpty)
        for bad in ["*", "a b=", "x\u{0}", "na%6de", String(repeating: "p", count: 65), "é"] {
            #expect(throws: LinkCleanup.Problem.self, "\(bad)") { try LinkCleanup(parsing: bad) }
        }
        #expect(throws: LinkCleanup.Problem.self) {
            try LinkCleanup(parsing: (0...LinkCleanup.maxParameters).map { "p\($0)" }.joined(separator: " "))
        }
        // No list: nothing removed, wrappers still unwrapped.
        let none = try Self.cleaned(
            "https://www.google.com/url?q=https://a.example/?utm_source=1", LinkCleanup(parameters: []))
        #expect(none.url.absoluteString == "https://a.example/?utm_source=1")
    }
}

private extension String {
    /// Percent-encodes everything but letters and digits (as a wrapper does).
    func replacingPercent() -> String {
        utf8.map { byte in
            let safe =
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            return safe ? String(UnicodeScalar(byte)) : "%" + String(byte, radix: 16, uppercase: true)
        }.joined()
    }
}
