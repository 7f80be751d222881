import Foundation
import JSON
import Testing

@testable import Model

@Suite struct CodecTests {
    @Test func browserRoundTripKeepsUnknownFields() throws {
        let json =
            ##"{"id":"firefox","name":"Firefox","urlScheme":"firefox","urlFormat":"firefox://open-url?url={url}","enabled":false,"iconColor":"#ff0000","future":{"a":[1,2.5,null,true]}}"##
        let browser = try JSONDecoder().decode(Browser.self, from: Data(json.utf8))
        #expect(browser.enabled == false)
        #expect(browser.extra["iconColor"] == .string("#ff0000"))
        let encoded = try JSONEncoder().encode(browser)
        let again = try JSONDecoder().decode(Browser.self, from: encoded)
        #expect(again == browser)
        let object = try JSONDecoder().decode([String: JSONValue].self, from: encoded)
        #expect(object["future"] == .object(["a": .array([.int(1), .double(2.5), .null, .bool(true)])]))
    }

    @Test func ruleAcceptsPhoneFieldNames() throws {
        let json =
            #"{"pattern":"zoom.us","browserScheme":"googlechromes","priority":4,"createdAt":1700000000.5,"note":"x"}"#
        let rule = try JSONDecoder().decode(UrlRule.self, from: Data(json.utf8))
        #expect(rule.browser == "googlechromes")
        #expect(rule.priority == 4)
        #expect(rule.createdAtMillis == 1_700_000_000_500)
        #expect(rule.extra["note"] == .string("x"))
        let encoded = String(decoding: try JSONEncoder().encode(rule), as: UTF8.self)
        #expect(encoded.contains(#""createdAt":"2023-11-14T22:13:20.500Z""#))
        #expect(try JSONDecoder().decode(UrlRule.self, from: Data(encoded.utf8)) == rule)
    }

    /// `jsonValue` (what brsync's own encoder takes as it is) and the
    /// `Codable` form another encoder writes are the same JSON, extra fields,
    /// an origin and times before 1970 or past 9999 included.
    @Test func jsonValueIsWhatCodableWrites() throws {
        let rules = [
            UrlRule(
                pattern: "zoom.us", browser: "chrome", priority: -3, createdAtMillis: 1_700_000_000_500,
                origin: "dev1", extra: ["keepTracking": .bool(true), "future": .array([.int(1), .null])]),
            UrlRule(
                pattern: "from:slack *.example.com/x", browser: "firefox", priority: Int.max,
                createdAtMillis: -86_400_001),
            UrlRule(pattern: "a.b", browser: "b", createdAtMillis: 300_000_000_000_000),
        ]
        let browsers = [
            Browser(
                id: "firefox", name: "Firefox", urlScheme: "firefox", enabled: false,
                extra: ["iconColor": .string("#f00")]),
            Browser(id: "x", name: "X \u{202E}"),
        ]
        func viaFoundation(_ value: some Encodable) throws -> JSONValue {
            try JSONDecoder().decode(JSONValue.self, from: try JSONEncoder().encode(value))
        }
        for rule in rules {
            #expect(try viaFoundation(rule) == rule.jsonValue)
            #expect(try JSONValue(encoding: [rule]) == .array([rule.jsonValue]))
        }
        for browser in browsers { #expect(try viaFoundation(browser) == browser.jsonValue) }
    }

    @Test func badCreatedAtIsAnError() {
        let json = #"{"pattern":"a.com","browser":"x","createdAt":"yesterday"}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(UrlRule.self, from: Data(json.utf8)) }
    }

    static let times: [(Int64, String)] = [
        (0, "1970-01-01T00:00:00.000Z"),
        (1_700_000_000_500, "2023-11-14T22:13:20.500Z"),
        (951_782_400_000, "2000-02-29T00:00:00.000Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
    ]

    @Test("ISO 8601 times", arguments: times)
    func isoTimes(_ row: (Int64, String)) {
        #expect(Timestamp.iso8601(millis: row.0) == row.1)
        #expect(Timestamp.millis(fromISO8601: row.1) == row.0)
    }

    @Test func isoParsingIsStrict() {
        #expect(Timestamp.millis(fromISO8601: "2023-11-14T22:13:20Z") == 1_700_000_000_000)
        #expect(Timestamp.millis(fromISO8601: "2023-11-14T22:13:20.5Z") == 1_700_000_000_500)
        #expect(Timestamp.millis(fromISO8601: "2023-13-14T22:13:20Z") == nil)
        #expect(Timestamp.millis(fromISO8601: "2023-11-14T22:13:20+02:00") == nil)
        #expect(Timestamp.millis(fromISO8601: "soon") == nil)
    }

    @Test func browserIDs() {
        #expect(Browser.problem(withID: "firefox-work") == nil)
        #expect(Browser.problem(withID: "") != nil)
        #expect(Browser.problem(withID: "Firefox")?.contains("lower-case") == true)
        #expect(Browser.problem(withID: "a b")?.contains("' '") == true)
        #expect(Browser.problem(withID: String(repeating: "a", count: 65)) != nil)
    }

    @Test func closeMatches() {
        #expect(Suggestions.closeMatches(to: "frefox", in: ["firefox", "chrome", "falkon"]) == ["firefox"])
        #expect(
            Suggestions.closeMatches(to: "chrom", in: ["chrome", "chromium", "firefox"]) == ["chrome", "chromium"])
        #expect(Suggestions.closeMatches(to: "zzzzzz", in: ["chrome"]).isEmpty)
    }
}
