import Foundation
import Testing

@testable import Model

@Suite struct PublicSuffixListTests {
    /// The system's copy (Debian `publicsuffix`, installed by .ci/run).
    static let list: PublicSuffixList = {
        let text =
            (try? String(contentsOfFile: "/usr/share/publicsuffix/public_suffix_list.dat", encoding: .utf8)) ?? ""
        return (try? PublicSuffixList(text: text)) ?? (try! PublicSuffixList(text: "com"))
    }()

    static let suggestions: [(String, String)] = [
        ("https://www.google.com/search", "google.com"),
        ("https://mail.google.com/", "google.com"),
        ("https://a.b.example.co.uk/", "example.co.uk"),
        ("https://bbc.co.uk/", "bbc.co.uk"),
        ("https://user.github.io/repo", "user.github.io"),
        ("https://a.b.user.github.io/", "user.github.io"),
        ("https://github.io/", "github.io"),
        ("https://co.uk/", "co.uk"),
        ("https://foo.blogspot.com/", "foo.blogspot.com"),
        ("https://www.city.kawasaki.jp/", "city.kawasaki.jp"),
        ("https://a.b.kawasaki.jp/", "a.b.kawasaki.jp"),
        ("http://192.168.1.10:8080/admin", "192.168.1.10:8080"),
        ("http://10.0.0.1/", "10.0.0.1"),
        ("http://[::1]:3000/", "[::1]:3000"),
        ("http://localhost:3000/", "localhost:3000"),
        ("http://intranet/wiki", "intranet"),
        ("https://www.bücher.de/", "xn--bcher-kva.de"),
        ("https://shop.例え.jp/", "xn--r8jz45g.jp"),
    ]

    @Test("suggested pattern", arguments: suggestions)
    func suggestion(_ row: (String, String)) throws {
        #expect(Self.list.ruleCount > 5000, "the system list is installed")
        #expect(Self.list.suggestedPattern(for: try NormalizedURL(row.0)) == row.1)
    }

    @Test func smallListRules() throws {
        let list = try PublicSuffixList(
            text: """
                // comment
                com
                *.ck
                !www.ck
                // ===BEGIN PRIVATE DOMAINS===
                github.io
                """)
        #expect(list.registrableDomain(of: "a.b.com") == "b.com")
        #expect(list.registrableDomain(of: "a.b.c.ck") == "b.c.ck")
        #expect(list.registrableDomain(of: "www.ck") == "www.ck")
        #expect(list.registrableDomain(of: "x.github.io") == "x.github.io")
        #expect(list.registrableDomain(of: "com") == nil)
        #expect(list.registrableDomain(of: "a.unknowntld") == "a.unknowntld")
    }

    @Test func emptyListIsAnError() {
        #expect(throws: PublicSuffixListProblem.self) { try PublicSuffixList(text: "// only comments\n\n") }
    }
}
