import TestSupport
import Testing

@testable import Model

@Suite struct NormalizedURLTests {
    static let normalisations: [(String, String)] = [
        ("https://Example.COM/Path", "https://example.com/Path"),
        ("HTTP://example.com", "http://example.com/"),
        ("example.com/x", "https://example.com/x"),
        ("  example.com  ", "https://example.com/"),
        // The URL Standard: C0 controls and spaces at the ends go, then every tab and newline.
        ("http://example\t.\norg", "http://example.org/"),
        ("\u{0}\u{1F} https://exa\r\nmple.com/a\tb?c\n=d#e\tf \u{7}", "https://example.com/ab?c=d#ef"),
        ("\thttps://example.com/\n", "https://example.com/"),
        ("//example.com/a", "https://example.com/a"),
        ("https://example.com./", "https://example.com/"),
        ("https://example.com:443/", "https://example.com/"),
        ("http://example.com:80/", "http://example.com/"),
        ("http://example.com:443/", "http://example.com:443/"),
        ("https://example.com:8443", "https://example.com:8443/"),
        ("https://example.com:/", "https://example.com/"),
        ("https://user:pass@example.com/", "https://example.com/"),
        ("https://google.com@evil.com/", "https://evil.com/"),
        ("https://a@b@evil.com/", "https://evil.com/"),
        ("https://bücher.de/", "https://xn--bcher-kva.de/"),
        ("https://BÜCHER.de/", "https://xn--bcher-kva.de/"),
        ("https://例え.テスト/", "https://xn--r8jz45g.xn--zckzah/"),
        ("https://münchen。de/", "https://xn--mnchen-3ya.de/"),
        // UTS #46 mapping: zero-width characters go, full-width forms and
        // non-Latin capitals map, as every browser does.
        ("http://GOO\u{200B}\u{2060}\u{FEFF}goo.com", "http://googoo.com/"),
        ("https://ｅｘａｍｐｌｅ．ｃｏｍ/", "https://example.com/"),
        ("https://ΑΒΓ.gr/", "https://xn--mxacd.gr/"),
        ("https://faß.de/", "https://xn--fa-hia.de/"),
        ("https://XN--MNCHEN-3YA.de/", "https://xn--mnchen-3ya.de/"),
        ("https://a\u{094D}\u{200D}b.example/", "https://xn--ab-fsf014u.example/"),
        // Labels longer than 63 (VerifyDnsLength=false).
        (
            "https://" + String(repeating: "a", count: 64) + ".com/",
            "https://" + String(repeating: "a", count: 64) + ".com/"
        ),
        ("https://exa%6Dple.com/", "https://example.com/"),
        // Empty labels stay, as in the URL Standard; one trailing dot goes
        // only after a label ("0x.." read back as "0x." was 0.0.0.0: the fuzzer).
        ("https://a..b/", "https://a..b/"),
        ("0x..\t", "https://0x../"),
        ("http://./", "http://./"),
        ("https://example.com./", "https://example.com/"),
        // Control characters in a path, query or fragment are percent-encoded.
        ("https://example.com/a\u{7}b?c\u{0}d#e\u{7F}f", "https://example.com/a%07b?c%00d#e%7Ff"),
        ("https://!\"$&'()*+,-.;=_`{}~/", "https://!\"$&'()*+,-.;=_`{}~/"),
        ("http://0x7f.0.0.1/", "http://127.0.0.1/"),
        ("http://2130706433/", "http://127.0.0.1/"),
        ("http://0177.0.0.1/", "http://127.0.0.1/"),
        ("http://[0:0:0:0:0:0:0:1]:8080/", "http://[::1]:8080/"),
        ("http://[2001:DB8::0:1]/", "http://[2001:db8::1]/"),
        ("http://[::ffff:192.0.2.1]/", "http://[::ffff:c000:201]/"),
        ("https://example.com/a/./b/../c", "https://example.com/a/c"),
        ("https://example.com/a/%2e%2E/b", "https://example.com/b"),
        ("https://example.com\\a\\b", "https://example.com/a/b"),
        ("https://example.com/a b", "https://example.com/a%20b"),
        ("https://example.com/ü?q=ü#ü", "https://example.com/%C3%BC?q=%C3%BC#%C3%BC"),
        ("https://example.com/?", "https://example.com/"),
        ("https://example.com/#", "https://example.com/"),
        ("https://example.com/p?a=1&b=2#frag", "https://example.com/p?a=1&b=2#frag"),
        ("localhost:8080/x", "https://localhost:8080/x"),
        ("http:example.com", "http://example.com/"),
        ("https:///path", "https://path/"),
        // Local files: a path or a file: URL, never https://.
        ("/tmp/page.html", "file:///tmp/page.html"),
        ("/tmp/my page#1?.html", "file:///tmp/my%20page%231%3F.html"),
        ("/tmp/100%.html", "file:///tmp/100%25.html"),
        ("/tmp/a\\b.html", "file:///tmp/a%5Cb.html"), // a backslash is part of a Linux file name
        ("/tmp/a/../b.html", "file:///tmp/b.html"),
        ("/", "file:///"),
        ("file:///tmp/x.html#top", "file:///tmp/x.html#top"),
        ("FILE://localhost/tmp/x", "file:///tmp/x"),
        ("file:/tmp/x", "file:///tmp/x"),
        ("file:./a\\b/../c", "file:///a/c"), // found by the fuzzer
        ("file:\\\\Server\\share\\a", "file://server/share/a"),
        ("file://Server/share/a?q", "file://server/share/a?q"),
        ("/tmp/caf\u{E9}.html", "file:///tmp/caf%C3%A9.html"),
    ]

    @Test("normalisation", arguments: normalisations)
    func normalises(_ row: (String, String)) throws {
        #expect(try NormalizedURL(row.0).absoluteString == row.1)
    }

    static let rejected: [(String, String)] = [
        ("", "blank"),
        ("   ", "blank"),
        ("mailto:someone@example.com", "scheme 'mailto'"),
        ("ftp://example.com/", "scheme 'ftp'"),
        ("javascript:alert(1)", "scheme 'javascript'"),
        ("about:blank", "scheme 'about'"),
        ("https://", "no host"),
        ("https://?q=1", "no host"),
        ("https://exa mple.com/", "' '"),
        ("https://example.com:99999/", "port"),
        ("https://example.com:12ab/", "port"),
        ("https://[::1/", "closing ']'"),
        ("https://[:::1]/", "IPv6"),
        ("http://1.2.3.256/", "IPv4"),
        ("https://exa%zzmple.com/", "percent"),
        ("https://exa\u{7}mple.com/", "U+0007"),
        ("https://a\u{7F}b/", "U+007F"),
        // UTS #46 (the URL Standard's flags): what a browser refuses to visit.
        ("https://%EF%B7%90.example/", "U+FDD0"), // U+FDD0, percent-encoded (a noncharacter)
        ("https://a\u{FFFD}b.example/", "U+FFFD"),
        ("https://a\u{200C}b.example/", "CONTEXTJ"),
        ("https://xn--pokxncvks.example/", "xn--pokxncvks"),
        ("https://xn--ab-j1t.example/", "xn--ab-j1t"),
        ("https://xn--.example/", "encodes nothing"),
        ("https://xn--ab-.example/", "only ASCII"),
        ("https://\u{0301}a.example/", "combining mark"),
        ("https://a\u{05D0}.example/", "bidi"),
        ("file://exa mple/x", "file URL's host"),
        ("file://host:8080/x", "file URL's host"),
    ]

    /// A refused link is shown back to the user: an escape sequence in it
    /// must not reach the terminal.
    @Test func aRefusedLinkIsShownSafely() {
        let hostile = "https://exa\u{1B}]0;owned\u{7}mple\u{202E}.com/"
        #expect {
            _ = try NormalizedURL(hostile)
        } throws: { error in
            let text = String(describing: error)
            return !text.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x202E }
                && text.contains("exa\u{FFFD}]0;owned")
        }
    }

    @Test("rejected with a reason", arguments: rejected)
    func rejects(_ row: (String, String)) {
        #expect {
            _ = try NormalizedURL(row.0)
        } throws: { error in
            let text = String(describing: error)
            return text.hasPrefix("not a web URL") && text.contains(row.1)
        }
    }

    /// Bytes read as text only when they are valid UTF-8 (what Model uses
    /// instead of `String(validating:as:)`, which the phone's iOS 17 lacks).
    @Test func utf8IsValidatedWithoutNewerAPI() {
        #expect(String(validUTF8: Array("bücher ✓ 𝄞".utf8)) == "bücher ✓ 𝄞")
        #expect(String(validUTF8: [UInt8]()) == "")
        for bad: [UInt8] in [
            [0xFF], [0xC3], [0xE2, 0x9C], [0xED, 0xA0, 0x80], [0xC0, 0xAF], [0x61, 0x80, 0x62],
            [0xF4, 0x90, 0x80, 0x80],
        ] {
            #expect(String(validUTF8: bad) == nil, "\(bad)")
        }
        // The replacement character itself is valid text.
        #expect(String(validUTF8: [0xEF, 0xBF, 0xBD]) == "\u{FFFD}")
        // The same answer as the standard library's validation, on every
        // boundary of the table and on random bytes (ASCII runs included,
        // which are checked eight bytes at a time).
        var random = SeededRandom.fromEnvironment(fallback: 20_261_124)
        print("utf8 validation seed: \(random.seed) (re-run with BRSYNC_TEST_SEED=\(random.seed))")
        let edges: [UInt8] = [
            0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF,
            0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF,
        ]
        var samples: [[UInt8]] = []
        for a in edges {
            for b in edges { samples.append([a, b, 0x80, 0x80]); samples.append([0x41, a, b, 0xBF, 0xBF]) }
        }
        for _ in 0..<20_000 {
            let ascii = [UInt8](repeating: 0x61, count: Int.random(in: 0...20, using: &random))
            let tail = (0..<Int.random(in: 0...6, using: &random)).map { _ in
                Bool.random(using: &random)
                    ? edges.randomElement(using: &random)! : UInt8.random(in: 0...255, using: &random)
            }
            samples.append(ascii + tail + ascii)
        }
        for bytes in samples {
            #expect(String(validUTF8: bytes) == String(validating: bytes, as: UTF8.self), "\(bytes)")
        }
    }

    @Test func parts() throws {
        let url = try NormalizedURL("https://User@Example.com:8443/a/B?x=1#f")
        #expect(url.scheme == "https")
        #expect(url.host == "example.com")
        #expect(url.port == 8443)
        #expect(url.hostWithPort == "example.com:8443")
        #expect(url.path == "/a/B")
        #expect(url.query == "x=1")
        #expect(url.fragment == "f")
        #expect(url.pathQueryFragment == "/a/B?x=1#f")
    }

    @Test func localFiles() throws {
        let file = try NormalizedURL("/tmp/my page#1%.html")
        #expect(file.isFile && file.host.isEmpty && file.localPath == "/tmp/my page#1%.html")
        #expect(try NormalizedURL("file:///tmp/caf%C3%A9.html").localPath == "/tmp/caf\u{E9}.html")
        #expect(try NormalizedURL("file://server/a").localPath == nil, "not on this machine")
        #expect(try NormalizedURL("https://example.com/a").localPath == nil)
        #expect(try PublicSuffixList(text: "com").suggestedPattern(for: file) == "file:///tmp/**")
    }

    @Test func punycodeMatchesRFC3492Samples() {
        // RFC 3492 §7.1 (A) Arabic (Egyptian) and (L) a Japanese sample, lower-cased.
        #expect(Punycode.encode(Array("ليهمابتكلموشعربي؟".unicodeScalars)) == "egbpdaj6bu4bxfgehfvwxn")
        #expect(Punycode.encode(Array("3年b組金八先生".unicodeScalars)) == "3b-ww4c5e180e575a65lsy2b")
        #expect(Punycode.encode(Array("bücher".unicodeScalars)) == "bcher-kva")
    }
}
