import JSON

/// A rule: URLs matching ``pattern`` open in ``browser``.
///
/// Its natural key is the pattern's normalised form (``Pattern/key``), so two
/// machines that both remember `github.com` hold one rule.
///
/// JSON: `{"pattern": "github.com", "browser": "firefox", "priority": 3,
///   "createdAt": "2026-11-21T22:45:10.123Z", "origin": "3f2a…"}`.
/// `browserScheme` (the phone's field name) is accepted for `browser`, and
/// `createdAt` may also be a number of seconds since 1970. Unknown keys are kept
/// in ``extra`` and written back on encode.
public struct UrlRule: Sendable, Hashable, Codable {
    /// The pattern as the user typed it.
    public var pattern: String
    /// A browser id, or an iOS scheme naming a catalog browser.
    public var browser: String
    /// Higher wins; see ``RulePrecedence``.
    public var priority: Int
    /// Creation time in milliseconds since 1970 (UTC).
    public var createdAtMillis: Int64
    /// The device that created the rule, when known.
    public var origin: String?
    public var extra: [String: JSONValue]

    public init(
        pattern: String, browser: String, priority: Int = 0, createdAtMillis: Int64,
        origin: String? = nil, extra: [String: JSONValue] = [:]
    ) {
        self.pattern = pattern
        self.browser = browser
        self.priority = priority
        self.createdAtMillis = createdAtMillis
        self.origin = origin
        self.extra = extra
    }

    /// Whether the URL this rule opens keeps its tracking parameters (some
    /// sites break without them); see ``LinkCleanup``. Kept in ``extra`` as
    /// `keepTracking`, so a client that does not know it keeps it.
    public var keepsTracking: Bool { extra["keepTracking"]?.boolValue ?? false }

    public static let knownKeys: Set<String> = [
        "pattern", "browser", "browserScheme", "priority", "createdAt", "origin",
    ]

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyCodingKey.self)
        pattern = try container.decode(String.self, forKey: AnyCodingKey("pattern"))
        if let browser = try container.decodeIfPresent(String.self, forKey: AnyCodingKey("browser")) {
            self.browser = browser
        } else {
            browser = try container.decode(String.self, forKey: AnyCodingKey("browserScheme"))
        }
        priority = try container.decodeIfPresent(Int.self, forKey: AnyCodingKey("priority")) ?? 0
        origin = try container.decodeIfPresent(String.self, forKey: AnyCodingKey("origin"))
        switch try container.decodeIfPresent(JSONValue.self, forKey: AnyCodingKey("createdAt")) {
        case nil, .null?:
            createdAtMillis = 0
        case .string(let text)?:
            guard let millis = Timestamp.millis(fromISO8601: text) else {
                throw DecodingError.dataCorruptedError(
                    forKey: AnyCodingKey("createdAt"), in: container,
                    debugDescription: "createdAt '\(text)' is not an ISO 8601 UTC time like 2026-11-21T22:45:10.123Z")
            }
            createdAtMillis = millis
        case .int(let seconds)?:
            createdAtMillis = seconds * 1000
        case .double(let seconds)?:
            createdAtMillis = Int64((seconds * 1000).rounded())
        case let other?:
            throw DecodingError.dataCorruptedError(
                forKey: AnyCodingKey("createdAt"), in: container,
                debugDescription: "createdAt must be a time string or a number, not \(other)")
        }
        extra = try container.unknownFields(excluding: Self.knownKeys)
    }

    /// The rule's known JSON members, in the order they are written.
    public var knownMembers: [(name: String, value: JSONValue)] {
        var members: [(name: String, value: JSONValue)] = [
            ("pattern", .string(pattern)), ("browser", .string(browser)), ("priority", .int(Int64(priority))),
            ("createdAt", .string(Timestamp.iso8601(millis: createdAtMillis))),
        ]
        if let origin { members.append(("origin", .string(origin))) }
        return members
    }
}

extension UrlRule: ExtensibleJSON {}
