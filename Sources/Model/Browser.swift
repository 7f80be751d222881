import JSON

/// A browser that rules can name. This is the synced part of a browser; what is
/// true of one machine only (installed, launch command, desktop entry) lives in
/// the client's device-local table and never syncs.
///
/// JSON (see docs/patterns.md, "Data formats"):
/// `{"id": "firefox", "name": "Firefox", "urlScheme": "firefox",
///   "urlFormat": "firefox://open-url?url={url}", "enabled": true}`.
/// Keys this type does not know are kept in ``extra`` and written back on encode.
public struct Browser: Sendable, Hashable, Codable {
    /// Natural key: a catalog id (`firefox`) or a user-chosen slug.
    public var id: String
    public var name: String
    /// The iOS URL scheme; phone rules may name a browser by it.
    public var urlScheme: String
    /// How a URL is handed to this browser; see ``URLFormat``.
    public var urlFormat: String
    public var enabled: Bool
    /// Fields written by a newer client, kept verbatim.
    public var extra: [String: JSONValue]

    public init(
        id: String, name: String, urlScheme: String = "", urlFormat: String = URLFormat.passThrough,
        enabled: Bool = true, extra: [String: JSONValue] = [:]
    ) {
        self.id = id
        self.name = name
        self.urlScheme = urlScheme
        self.urlFormat = urlFormat
        self.enabled = enabled
        self.extra = extra
    }

    public static let knownKeys: Set<String> = ["id", "name", "urlScheme", "urlFormat", "enabled"]

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyCodingKey.self)
        id = try container.decode(String.self, forKey: AnyCodingKey("id"))
        name = try container.decodeIfPresent(String.self, forKey: AnyCodingKey("name")) ?? id
        urlScheme = try container.decodeIfPresent(String.self, forKey: AnyCodingKey("urlScheme")) ?? ""
        urlFormat =
            try container.decodeIfPresent(String.self, forKey: AnyCodingKey("urlFormat")) ?? URLFormat.passThrough
        enabled = try container.decodeIfPresent(Bool.self, forKey: AnyCodingKey("enabled")) ?? true
        extra = try container.unknownFields(excluding: Self.knownKeys)
    }

    /// The browser's known JSON members, in the order they are written.
    public var knownMembers: [(name: String, value: JSONValue)] {
        [
            ("id", .string(id)), ("name", .string(name)), ("urlScheme", .string(urlScheme)),
            ("urlFormat", .string(urlFormat)), ("enabled", .bool(enabled)),
        ]
    }
}

extension Browser: ExtensibleJSON {}

extension Browser {
    /// Why a browser id is not acceptable, or nil when it is.
    ///
    /// Ids are slugs: 1 to 64 characters of `a-z`, `0-9`, `.`, `_`, `-`, starting
    /// with a letter or digit, so they are safe in file names, URLs and shells.
    public static func problem(withID id: String) -> String? {
        if id.isEmpty { return "a browser id must not be empty" }
        if id.utf8.count > 64 { return "a browser id has at most 64 characters" }
        let bytes = Array(id.utf8)
        func isAlnum(_ byte: UInt8) -> Bool {
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
        }
        guard isAlnum(bytes[0]) else { return "a browser id starts with a lower-case letter or digit" }
        for byte in bytes
        where !(isAlnum(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")) {
            return "a browser id may hold only a-z, 0-9, '.', '_' and '-' (found '\(Character(Unicode.Scalar(byte)))')"
        }
        return nil
    }
}

/// A profile of another browser (`browsers add work --from firefox --args "-P work"`):
/// the base browser and the arguments added after its program. It syncs (in a
/// browser's `profileOf` and `profileArgs` fields, kept in ``Browser/extra`` so
/// a client that does not know them keeps them), and each machine builds the
/// launch command from its own base browser's.
public struct BrowserProfile: Sendable, Hashable {
    public let base: String
    public let arguments: [String]

    /// At most this many arguments, each at most ``maxArgumentBytes``.
    public static let maxArguments = 32
    public static let maxArgumentBytes = 512

    public init(base: String, arguments: [String]) throws(Problem) {
        if let problem = Browser.problem(withID: base) { throw Problem("the base browser: \(problem)") }
        guard !arguments.isEmpty, arguments.count <= Self.maxArguments else {
            throw Problem("a profile adds 1 to \(Self.maxArguments) arguments")
        }
        for argument in arguments {
            guard argument.utf8.count <= Self.maxArgumentBytes,
                !argument.contains(where: { $0 == "\0" || $0 == "\n" || $0 == "\r" })
            else {
                throw Problem("a profile argument is one line of at most \(Self.maxArgumentBytes) bytes")
            }
        }
        self.base = base
        self.arguments = arguments
    }

    /// The profile a browser's synced fields describe, or nil (none, or one
    /// this client cannot use, which it ignores as the phone does).
    public init?(fields extra: [String: JSONValue]) {
        guard let base = extra["profileOf"]?.stringValue, case .array(let items)? = extra["profileArgs"] else {
            return nil
        }
        let arguments = items.compactMap(\.stringValue)
        guard arguments.count == items.count, let profile = try? BrowserProfile(base: base, arguments: arguments) else {
            return nil
        }
        self = profile
    }

    /// The synced fields that hold this profile.
    public var fields: [String: JSONValue] {
        ["profileOf": .string(base), "profileArgs": .array(arguments.map(JSONValue.string))]
    }

    /// The base browser's launch command with the arguments inserted right
    /// after the browser's own program (``ExecCommand/browserProgramIndex()``),
    /// so they go to the browser, never to `flatpak` or `env`, and the URL
    /// field code stays last: `firefox %u` + `-P work` = `firefox -P work %u`;
    /// `flatpak run org.mozilla.firefox %u` + `-P work` =
    /// `flatpak run org.mozilla.firefox -P work %u`.
    /// - Throws: when the command has no place the arguments can go safely (a shell runs it).
    public func command(from baseExec: String) throws(ExecCommand.Problem) -> String {
        let base = try ExecCommand(baseExec)
        let at = try base.browserProgramIndex() + 1
        let arguments =
            Array(base.arguments[..<at]) + self.arguments.map { $0.replacing("%", with: "%%") } + base.arguments[at...]
        return arguments.map(ExecCommand.quote).joined(separator: " ")
    }

    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let reason: String
        init(_ reason: String) { self.reason = reason }
        public var description: String { reason }
    }
}

extension Browser {
    /// The profile this browser is, when it is one.
    public var profile: BrowserProfile? { BrowserProfile(fields: extra) }
}

/// Where the picker shows a browser: its place and whether it is hidden. Both
/// sync (the `pickerOrder` and `pickerHidden` fields, kept in
/// ``Browser/extra`` so a client that does not know them keeps them; the
/// phone may use them). A value of the wrong type is ignored.
extension Browser {
    public static let pickerOrderField = "pickerOrder"
    public static let pickerHiddenField = "pickerHidden"
    /// The largest place a browser can have.
    public static let maxPickerOrder = 1_000_000

    /// The browser's place in the picker (1 is first); nil when none was set.
    public var pickerOrder: Int? {
        guard let value = extra[Self.pickerOrderField]?.intValue, value >= 1, value <= Int64(Self.maxPickerOrder) else {
            return nil
        }
        return Int(value)
    }

    /// Hidden from the picker (rules still name it; it still opens links).
    public var isHiddenInPicker: Bool { extra[Self.pickerHiddenField]?.boolValue ?? false }

    /// The picker's order: by place (browsers with none after those with one),
    /// then by id.
    public static func inPickerOrder(_ first: Browser, _ second: Browser) -> Bool {
        let (a, b) = (first.pickerOrder ?? Int.max, second.pickerOrder ?? Int.max)
        return a != b ? a < b : first.id < second.id
    }
}
