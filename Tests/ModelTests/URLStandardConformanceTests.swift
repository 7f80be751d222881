import Foundation
import TestSupport
import Testing

@testable import Model

/// The URL parser against the URL Standard's own test data: the absolute
/// `http:`/`https:` inputs of web-platform-tests' urltestdata.json, kept in
/// Tests/Data/urltestdata-absolute.json (see Tests/Data/LICENSES.md). An input
/// the data calls a failure must be refused; any other must read as the
/// data's `href` in brsync's normal form: userinfo removed (it is never the
/// host), an empty query or fragment dropped, one trailing dot of a domain
/// dropped when a label comes before it (`example.com.` is `example.com`
/// for every rule).
@Suite struct URLStandardConformanceTests {
    struct Row: Decodable, CustomStringConvertible {
        let input: String
        let href: String?
        let failure: Bool?
        var description: String { "\(input.debugDescription) → \(href.map(\.debugDescription) ?? "failure")" }
    }

    /// Inputs where brsync deliberately differs from the standard, each with why.
    static let knownDifferences: [String: String] = [
        // Windows drive letters: the standard reads `C|` and a host `C:` as the
        // drive C:. brsync serves Linux, where a host `C:` or `C|` is not a
        // host and `C|` in a path is a file name like any other.
        "file://C:/": "a Windows drive letter in the host's place: refused (':' is no host character)",
        "file:/C|/": "a Windows drive letter written C|: kept as the file name 'C|'",
        "file://C|/": "a Windows drive letter written C| in the host's place: refused ('|' is no host character)",
    ]

    static func rows() throws -> [Row] {
        let path = Repository.file("Tests/Data/urltestdata-absolute.json")
        return try JSONDecoder().decode([Row].self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// `href` (the standard's serialisation) in brsync's normal form.
    static func normalForm(_ href: String) -> String {
        guard let schemeEnd = href.range(of: "://") else { return href }
        let scheme = href[..<schemeEnd.lowerBound]
        var rest = href[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var host = authority
        var port = Substring("")
        if let colon = authority.lastIndex(of: ":"), !authority[colon...].contains("]") {
            host = authority[..<colon]
            port = authority[colon...]
        }
        if host.hasSuffix("."), !host.hasSuffix(".."), host.count > 1 { host = host.dropLast() }
        rest = rest[authorityEnd...]
        var tail = String(rest)
        if let hash = tail.firstIndex(of: "#"), tail.index(after: hash) == tail.endIndex { tail.remove(at: hash) }
        if let question = tail.firstIndex(of: "?") {
            let next = tail.index(after: question)
            if next == tail.endIndex || tail[next] == "#" { tail.remove(at: question) }
        }
        return "\(scheme)://\(host)\(port)\(tail)"
    }

    @Test func urlTestData() throws {
        let rows = try Self.rows()
        #expect(rows.count > 300)
        var failures: [String] = []
        var differences = 0
        for row in rows {
            if Self.knownDifferences[row.input] != nil {
                differences += 1
                continue
            }
            let result = Result { () throws(URLProblem) in try NormalizedURL(row.input) }
            switch (result, row.href) {
            case (.success(let url), .some(let href)):
                if url.absoluteString != Self.normalForm(href) {
                    failures.append(
                        "\(row): got \(url.absoluteString.debugDescription), expected \(Self.normalForm(href).debugDescription)"
                    )
                }
            case (.success(let url), .none):
                failures.append("\(row): accepted as \(url.absoluteString.debugDescription)")
            case (.failure(let problem), .some):
                failures.append("\(row): refused (\(problem.reason))")
            case (.failure, .none):
                break
            }
        }
        let refusals = rows.filter { $0.failure == true }.count
        print(
            "URL Standard test data (absolute http, https and file inputs): \(rows.count - failures.count - differences) of \(rows.count) rows pass "
                + "(\(refusals) must be refused), \(differences) differ on purpose (listed in the test)")
        for failure in failures.prefix(80) { print("  " + failure) }
        #expect(differences == Self.knownDifferences.count)
        #expect(failures.isEmpty)
    }
}
