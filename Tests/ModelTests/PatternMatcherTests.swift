import Testing

@testable import Model

/// One row: a pattern, a URL, and whether it must match.
struct MatchCase: CustomTestStringConvertible, Sendable {
    let pattern: String
    let url: String
    let matches: Bool
    init(_ pattern: String, _ url: String, _ matches: Bool) {
        self.pattern = pattern
        self.url = url
        self.matches = matches
    }
    var testDescription: String { "\(pattern) \(matches ? "~" : "!~") \(url)" }
}

@Suite struct PatternMatcherTests {
    /// Facts of the phone implementations (docs/patterns.md).
    static let phoneFacts: [MatchCase] = [
        // Case-insensitive.
        MatchCase("GitHub.com", "https://github.com/x", true),
        MatchCase("github.com", "HTTPS://GITHUB.COM/X", true),
        MatchCase("github.com/User/*", "https://github.com/user/Repo", true),
        // * does not cross '/'; ** does; ? is one character.
        MatchCase("example.com/a/*/c", "https://example.com/a/b/c", true),
        MatchCase("example.com/a/*/c", "https://example.com/a/b/x/c", false),
        MatchCase("example.com/a/**/c", "https://example.com/a/b/x/c", true),
        MatchCase("example.com/file?.txt", "https://example.com/file1.txt", true),
        MatchCase("example.com/file?.txt", "https://example.com/file12.txt", false),
        MatchCase("example.com/file?.txt", "https://example.com/file.txt", false),
        // No scheme: either scheme, optional www.
        MatchCase("github.com/user", "http://github.com/user", true),
        MatchCase("github.com/user", "https://www.github.com/user", true),
        MatchCase("github.com/user", "https://gist.github.com/user", false),
        // A plain domain matches the host and every subdomain, never lookalikes.
        MatchCase("google.com", "https://google.com", true),
        MatchCase("google.com", "https://mail.google.com/inbox", true),
        MatchCase("google.com", "https://a.b.google.com", true),
        MatchCase("google.com", "https://notgoogle.com", false),
        MatchCase("google.com", "https://google.org", false),
        MatchCase("google.com", "https://google.com.au", false),
        // *.domain matches every subdomain and the bare domain.
        MatchCase("*.google.com", "https://mail.google.com", true),
        MatchCase("*.google.com", "https://a.b.google.com", true),
        MatchCase("*.google.com", "https://google.com", true),
        MatchCase("*.google.com", "https://notgoogle.com", false),
        // No '/' (or a trailing *): any path below.
        MatchCase("github.com", "https://github.com/a/b/c?q=1#f", true),
        MatchCase("github.com/user/*", "https://github.com/user/repo", true),
        MatchCase("github.com/user/*", "https://github.com/user/repo/issues", true),
        MatchCase("github.com/user/*", "https://github.com/other/repo", false),
    ]

    /// The phone defects brsync fixes on purpose (docs/patterns.md, "The phone").
    static let fixes: [MatchCase] = [
        // Host only, never text elsewhere.
        MatchCase("google.com", "https://google.com@evil.com", false),
        MatchCase("google.com", "https://evil.com/?google.com", false),
        MatchCase("google.com", "https://google.com.evil.com", false),
        MatchCase("google.com", "https://evil.com/google.com", false),
        MatchCase("google.com", "https://evil.com#google.com", false),
        MatchCase("*google.com", "https://evil.com/?google.com", false),
        MatchCase("*.google.com", "https://evil.com/.google.com", false),
        MatchCase("evil.com", "https://google.com@evil.com", true),
        MatchCase("google.com", "https://user:pw@google.com/", true),
        // A pattern without a query part ignores query and fragment.
        MatchCase("example.com/page", "https://example.com/page?utm=1", true),
        MatchCase("example.com/page", "https://example.com/page#top", true),
        MatchCase("example.com/page", "https://example.com/page?x=1#top", true),
        // Scheme-qualified patterns still match paths below.
        MatchCase("https://example.com", "https://example.com/deep/path", true),
        MatchCase("https://example.com", "http://example.com/", false),
        MatchCase("http://example.com", "http://example.com/x", true),
        MatchCase("https://example.com/docs", "https://example.com/docs/a", true),
        // Hosts compared after normalisation.
        MatchCase("example.com", "https://EXAMPLE.com./", true),
        MatchCase("example.com", "https://example.com:443/", true),
        MatchCase("bücher.de", "https://xn--bcher-kva.de/", true),
        MatchCase("xn--bcher-kva.de", "https://BÜCHER.de/", true),
        MatchCase("127.0.0.1", "http://0x7f.0.0.1/", true),
        MatchCase("127.0.0.1", "http://2130706433/", true),
    ]

    static let more: [MatchCase] = [
        // Local files match only file:// patterns.
        MatchCase("file:///tmp/**", "/tmp/a/b.html", true),
        MatchCase("file:///tmp", "/tmp/a.html", true),
        MatchCase("file:///tmp", "/tmpx/a.html", false),
        MatchCase("file://", "/etc/hostname", true),
        MatchCase("file://localhost/home/me/*.html", "file:///home/me/a.html", true),
        MatchCase("file:///home/me/*.html", "/home/me/sub/a.html", false),
        MatchCase("tmp", "/tmp/a.html", false),
        MatchCase("*.example.com", "file:///x.example.com/a", false),
        MatchCase("file:///tmp/**", "https://tmp/a.html", false),
        MatchCase("file://server/share", "file://server/share/a.html", true),
        MatchCase("file:///share", "file://server/share/a.html", false),
        // Paths match at segment boundaries.
        MatchCase("github.com/user", "https://github.com/user/repo", true),
        MatchCase("github.com/user", "https://github.com/username", false),
        MatchCase("github.com/user/", "https://github.com/user", true),
        MatchCase("github.com/user", "https://github.com/user?tab=repos", true),
        MatchCase("github.com/user/*", "https://github.com/user", false),
        MatchCase("example.com/a*", "https://example.com/abc/def", true),
        MatchCase("example.com/a*", "https://example.com/b", false),
        // Query and fragment parts when the pattern has them.
        MatchCase("youtube.com/watch?v=*", "https://www.youtube.com/watch?v=abc&t=1", true),
        MatchCase("youtube.com/watch?v=*", "https://www.youtube.com/watch", false),
        MatchCase("example.com/doc#intro", "https://example.com/doc#intro", true),
        MatchCase("example.com/doc#intro", "https://example.com/doc#other", false),
        // www handling.
        MatchCase("www.example.com", "https://www.example.com", true),
        MatchCase("www.example.com", "https://example.com", false),
        MatchCase("https://example.com/x", "https://www.example.com/x", false),
        MatchCase("ex*.com/x", "https://www.example.com/x", true),
        // Wildcards in the host.
        MatchCase("*.example.*", "https://a.example.org", true),
        MatchCase("goo?le.com", "https://google.com", true),
        MatchCase("goo?le.com", "https://gooogle.com", false),
        MatchCase("**.corp.example", "https://a.b.corp.example/x/y", true),
        MatchCase("*", "https://anything.example/a/b", true),
        MatchCase("**", "https://anything.example/a/b", true),
        MatchCase("*/login", "https://a.example/login", true),
        MatchCase("*/login", "https://a.example/x/login", false),
        MatchCase("*/**/login", "https://a.example/x/y/login", true),
        // Ports.
        MatchCase("localhost:8080", "http://localhost:8080/app", true),
        MatchCase("localhost:8080", "http://localhost:3000/app", false),
        MatchCase("localhost", "http://localhost:3000/app", true),
        MatchCase("example.com:443", "https://example.com/", true),
        MatchCase("example.com:80", "https://example.com/", false),
        MatchCase("example.com:*", "https://example.com:8443/", true),
        // IPv6.
        MatchCase("[::1]", "http://[0:0::1]:8080/", true),
        MatchCase("[::1]:8080", "http://[::1]:8080/", true),
        MatchCase("[2001:db8::1]", "http://[2001:DB8:0:0:0:0:0:1]/", true),
        // Percent-encoding and IDN in paths.
        MatchCase("example.com/ü", "https://example.com/%C3%BC", true),
        MatchCase("example.com", "https://example.com/%7Euser", true),
    ]

    @Test("phone facts", arguments: phoneFacts)
    func phoneFact(_ row: MatchCase) throws {
        try check(row)
    }

    @Test("fixes of phone defects", arguments: fixes)
    func fix(_ row: MatchCase) throws {
        try check(row)
    }

    @Test("more cases", arguments: more)
    func moreCase(_ row: MatchCase) throws {
        try check(row)
    }

    private func check(_ row: MatchCase) throws {
        let pattern = try Pattern(row.pattern)
        let url = try NormalizedURL(row.url)
        #expect(pattern.match(url).isMatch == row.matches, "\(row.pattern) vs \(url)")
        // Whatever matches must be found through the index, too.
        let index = RuleIndex(rules: [UrlRule(pattern: row.pattern, browser: "b", createdAtMillis: 0)])
        #expect((index.decide(url) != nil) == row.matches, "index for \(row.pattern) vs \(url)")
    }

    static let invalidPatterns: [(String, String)] = [
        ("", "blank"),
        ("   ", "blank"),
        ("exa mple.com", "whitespace"),
        ("ftp://example.com", "scheme 'ftp'"),
        ("https://", "no host"),
        ("/path/only", "no host"),
        ("example.com:99999", "port"),
        ("example.com:http", "port"),
        ("user@example.com", "'@'"),
        ("a..b.com", "empty label"),
        ("exa<mple.com", "'<'"),
        ("***.example.com", "'***'"),
        ("[::zz]", "IPv6"),
        ("1.2.3.999", "IPv4"),
        ("ü*.example", "non-ASCII"),
        ("file://localhost:80/x", "no port"),
        ("mailto://x", "scheme 'mailto'"),
    ]

    @Test("invalid patterns say what is wrong", arguments: invalidPatterns)
    func invalid(_ row: (String, String)) {
        #expect {
            _ = try Pattern(row.0)
        } throws: { error in
            let text = String(describing: error)
            return text.hasPrefix("invalid pattern") && text.contains(row.1)
        }
    }

    @Test func keysNormalise() throws {
        #expect(try Pattern("GitHub.com").key == "github.com")
        #expect(try Pattern("github.com/").key == "github.com")
        #expect(try Pattern("HTTPS://Bücher.de/Path/").key == "https://xn--bcher-kva.de/path")
        #expect(try Pattern("github.com").key != Pattern("www.github.com").key)
        #expect(try Pattern("github.com/*").key != Pattern("github.com").key)
    }

    @Test func indexKeys() throws {
        #expect(try Pattern("google.com").indexKey == "google.com")
        #expect(try Pattern("*.google.com").indexKey == "google.com")
        #expect(try Pattern("goo*gle.com").indexKey == "com")
        #expect(try Pattern("google.*").indexKey == "")
        #expect(Pattern.candidateIndexKeys(forHost: "a.b.com") == ["a.b.com", "b.com", "com", ""])
    }
}
