import JSON

/// A rule pattern of the BrowserSelector pattern language, parsed and validated.
///
/// The language (docs/patterns.md): case-insensitive; `*` matches any
/// run of characters except `/`, `**` any run including `/`, `?` one character.
/// Without `http://`/`https://` a pattern matches either scheme and an optional
/// leading `www.`. A host-only pattern with no wildcard (`google.com`) matches
/// that host and every subdomain; `*.google.com` matches every subdomain and the
/// bare domain. A pattern matches the path it names and every path below it.
///
/// brsync matches the pattern's host part against the URL's host only, never
/// against text elsewhere in the URL; a pattern without `?` or `#` ignores the
/// URL's query and fragment. Local files match only patterns that name
/// `file://` (`file:///home/me/docs/**`; `file://` alone is every local file).
public struct Pattern: Sendable, Hashable {
    /// The pattern as typed, trimmed.
    public private(set) var text: String
    /// The normalised form: the rule's natural key. Equal keys mean equal patterns.
    public private(set) var key: String
    /// The app whose links alone it matches (`from:APP PATTERN`), lower-cased;
    /// nil for every link. See ``sourcePrefix``.
    public private(set) var source: String?
    /// `http`, `https`, `file`, or nil for either of http and https.
    let scheme: String?
    /// Lower-case ASCII host part, punycoded where literal.
    let host: String
    let hostGlob: Glob?
    /// For `*.example.com`: the glob of `example.com`, which the pattern also matches.
    let bareHostGlob: Glob?
    /// No path written: a literal host then matches its subdomains too.
    let isHostOnly: Bool
    /// nil: any port; otherwise the required effective port.
    let port: Int?
    /// nil: any path.
    let pathGlob: Glob?
    let includesQuery: Bool
    let includesFragment: Bool

    /// Whether the host part has no wildcard.
    public var hasExactHost: Bool { hostGlob == nil }

    /// What a pattern reaches, as a person would say it (the picker's
    /// "Remember for this domain", "… these pages", "… these files").
    public enum Reach: Sendable, Equatable {
        /// Local files (`file://…`).
        case files
        /// A site: a host (with its subdomains), nothing else named.
        case site
        /// Some pages of a site: a path, port, query or fragment is named.
        case pages
    }

    public var reach: Reach {
        if scheme == "file" { return .files }
        return isHostOnly && port == nil && !includesQuery && !includesFragment ? .site : .pages
    }
    /// Literal (non-wildcard) characters in host and path: more is more specific.
    public let literalLength: Int
    /// A label suffix that every host this pattern matches ends with (at a label
    /// boundary), or "" when there is none. See ``RuleIndex``.
    public let indexKey: String

    /// Parses `text`.
    /// - Throws: ``PatternProblem`` saying what is wrong (`invalid pattern: …`).
    public init(_ text: String) throws(PatternProblem) {
        // `from:APP PATTERN` (looked at only when the text could start so).
        if let first = text.utf8.first,
            first == UInt8(ascii: "f") || first == UInt8(ascii: "F") || first <= 0x20 || first >= 0x80,
            URLParser.trimmed(text).lowercased().hasPrefix(Self.sourcePrefix)
        {
            try self.init(fromApp: text)
        } else {
            try self.init(plain: text)
        }
    }

    /// A pattern that names no app.
    private init(plain text: String) throws(PatternProblem) {
        // Patterns are parsed for every candidate rule of a lookup and every
        // stored rule: common (ASCII, already trimmed) text takes byte-level checks.
        let isPlainASCII = text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
        let trimmed = isPlainASCII ? text : URLParser.trimmed(text)
        self.text = trimmed
        func fail(_ reason: String) -> PatternProblem { PatternProblem(pattern: text, reason: reason) }
        guard !trimmed.isEmpty else { throw fail("it is blank") }
        if !isPlainASCII {
            for scalar in trimmed.unicodeScalars
            where scalar.properties.isWhitespace || scalar.value < 0x20 || scalar.value == 0x7F {
                throw fail("it contains whitespace or a control character")
            }
        }
        if Self.find("***", in: trimmed) != nil { throw fail("'***' is not a wildcard; use * or **") }

        func first(_ separator: Unicode.Scalar, in text: Substring) -> String.Index? {
            Self.index(of: separator, in: text, plainASCII: isPlainASCII, last: false)
        }

        let (scheme, rest) = try Self.readScheme(trimmed, fail: fail)
        self.scheme = scheme

        let slash = first("/", in: rest) ?? rest.endIndex
        var hostPart = rest[..<slash]
        var pathPart = rest[slash...]
        if let hash = first("#", in: hostPart) {
            pathPart = "/" + hostPart[hash...] + pathPart
            hostPart = hostPart[..<hash]
        }
        if first("@", in: hostPart) != nil { throw fail("a pattern's host must not contain '@'") }

        let portText: Substring?
        (hostPart, portText) = try Self.splitPort(hostPart, plainASCII: isPlainASCII, fail: fail)
        port = try Self.readPort(portText, fail: fail)
        if scheme == "file" {
            // Local files: `file:///dir/**` (or `file://localhost/…`); no port.
            if portText != nil { throw fail("a file:// pattern has no port") }
            if hostPart.lowercased() == "localhost" { hostPart = "" }
        } else {
            guard !hostPart.isEmpty else {
                throw fail("it has no host (a pattern starts with a domain, like example.com)")
            }
        }
        let hasWildcard = first("*", in: hostPart) != nil || first("?", in: hostPart) != nil
        let host = try Self.normalizeHost(hostPart, hasWildcard: hasWildcard, fail: fail)
        self.host = host
        hostGlob = hasWildcard ? Glob(host.utf8) : nil

        // The path: trailing slashes carry no meaning ("a/" is "a" and what is below it).
        var path = URLParser.percentEncode(String(pathPart), keep: Self.patternPathAllowed).lowercased()
        while path.hasSuffix("/") { path.removeLast() }
        includesQuery = path.contains("?")
        includesFragment = path.contains("#")
        isHostOnly = path.isEmpty
        pathGlob = path.isEmpty || path == "/**" || path == "/*" ? nil : Glob(path.utf8)
        bareHostGlob =
            host.hasPrefix("**.")
            ? Glob(host.utf8.dropFirst(3)) : host.hasPrefix("*.") ? Glob(host.utf8.dropFirst(2)) : nil

        var key = scheme.map { "\($0)://" } ?? ""
        key += host
        if let port { key += ":\(port)" }
        key += path
        self.key = key
        literalLength = (hostGlob?.literalCount ?? host.utf8.count) + (pathGlob?.literalCount ?? 0)
        indexKey = Self.indexKey(forHost: host, isWildcard: hasWildcard)
    }

    /// Plain ASCII has one byte per character: separators are found as bytes
    /// (searching characters cost most of a parse); other text is searched by
    /// character, as it always was.
    private static func index(
        of separator: Unicode.Scalar, in text: Substring, plainASCII: Bool, last: Bool
    ) -> String.Index? {
        if plainASCII { return index(of: UInt8(ascii: separator), in: text, last: last) }
        return last ? text.lastIndex(of: Character(separator)) : text.firstIndex(of: Character(separator))
    }

    /// The scheme written before `://` (nil for none, `*://`, `http*://` and
    /// `http?://`: either of http and https) and the text after it.
    private static func readScheme(
        _ trimmed: String, fail: (String) -> PatternProblem
    ) throws(PatternProblem) -> (scheme: String?, rest: Substring) {
        guard let separator = find("://", in: trimmed) else { return (nil, Substring(trimmed)) }
        let name = trimmed[..<separator.lowerBound].lowercased()
        switch name {
        case "http", "https", "file": return (name, trimmed[separator.upperBound...])
        case "*", "http*", "http?": return (nil, trimmed[separator.upperBound...])
        default:
            throw fail("the scheme '\(name)' is not supported; write http://, https://, file:// or no scheme")
        }
    }

    /// The host part without its port, and the port's text (nil when none is
    /// written). An IPv6 address keeps its brackets.
    private static func splitPort(
        _ hostPart: Substring, plainASCII: Bool, fail: (String) -> PatternProblem
    ) throws(PatternProblem) -> (host: Substring, portText: Substring?) {
        if hostPart.hasPrefix("["), let close = hostPart.firstIndex(of: "]") {
            let after = hostPart[hostPart.index(after: close)...]
            guard !after.isEmpty else { return (hostPart, nil) }
            guard after.hasPrefix(":") else { throw fail("unexpected text after the IPv6 address") }
            return (hostPart[...close], after.dropFirst())
        }
        if let colon = index(of: ":", in: hostPart, plainASCII: plainASCII, last: true) {
            return (hostPart[..<colon], hostPart[hostPart.index(after: colon)...])
        }
        return (hostPart, nil)
    }

    /// The port a pattern requires: nil for any (none written, empty or `*`).
    private static func readPort(
        _ portText: Substring?, fail: (String) -> PatternProblem
    ) throws(PatternProblem) -> Int? {
        guard let portText, portText != "*", !portText.isEmpty else { return nil }
        guard portText.allSatisfy({ $0.isASCII && $0.isNumber }), portText.count <= 5, let number = Int(portText),
            (1...65535).contains(number)
        else { throw fail("the port '\(portText)' is not a number from 1 to 65535 or *") }
        return number
    }

    /// The host part in its normal form: an IPv6 address canonical, a
    /// wildcard host lower-cased and punycoded label by label, a literal name
    /// as the URL Standard's host parser leaves it.
    private static func normalizeHost(
        _ hostPart: Substring, hasWildcard: Bool, fail: (String) -> PatternProblem
    ) throws(PatternProblem) -> String {
        if hostPart.isEmpty { return "" }
        if hostPart.hasPrefix("[") {
            guard hostPart.hasSuffix("]"),
                let address = IPAddress.canonicalIPv6(String(hostPart.dropFirst().dropLast()))
            else {
                throw fail(HostProblem.invalidIPv6.message)
            }
            return "[\(address)]"
        }
        if hasWildcard { return try normalizeWildcardHost(String(hostPart), fail: fail) }
        let host: String
        switch HostName.normalize(bytes: ArraySlice(hostPart.utf8)) {
        case .success(let normal): host = normal
        case .failure(let problem): throw fail(problem.message)
        }
        // A URL may name such a host (the URL Standard keeps it); a rule
        // that does is a typo.
        if host.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).contains(where: {
            $0.isEmpty
        }) {
            throw fail(HostProblem.emptyLabel.message)
        }
        return host
    }

    /// The range of an ASCII `needle` in `text`, searched as bytes.
    static func find(_ needle: StaticString, in text: String) -> Range<String.Index>? {
        let target = UnsafeBufferPointer(start: needle.utf8Start, count: needle.utf8CodeUnitCount)
        let utf8 = text.utf8
        let offset: Int?? = utf8.withContiguousStorageIfAvailable { bytes in
            guard bytes.count >= target.count else { return nil }
            return (0...(bytes.count - target.count)).first { start in
                (0..<target.count).allSatisfy { bytes[start + $0] == target[$0] }
            }
        }
        if let offset {
            return offset.map {
                utf8.index(utf8.startIndex, offsetBy: $0)..<utf8.index(utf8.startIndex, offsetBy: $0 + target.count)
            }
        }
        var index = utf8.startIndex
        while index != utf8.endIndex {
            var probe = index
            var matched = 0
            while matched < target.count, probe != utf8.endIndex, utf8[probe] == target[matched] {
                matched += 1
                probe = utf8.index(after: probe)
            }
            if matched == target.count { return index..<probe }
            index = utf8.index(after: index)
        }
        return nil
    }

    /// The first (or last) position of `byte` in `text`'s UTF-8.
    private static func index(of byte: UInt8, in text: Substring, last: Bool) -> String.Index? {
        let utf8 = text.utf8
        let offset: Int?? = utf8.withContiguousStorageIfAvailable {
            last ? $0.lastIndex(of: byte) : $0.firstIndex(of: byte)
        }
        guard let offset else { return last ? utf8.lastIndex(of: byte) : utf8.firstIndex(of: byte) }
        return offset.map { utf8.index(utf8.startIndex, offsetBy: $0) }
    }

    private static let patternPathAllowed: [Bool] = {
        var table = URLParser.pathAllowed
        table[Int(UInt8(ascii: "?"))] = true
        table[Int(UInt8(ascii: "#"))] = true
        return table
    }()

    private static func normalizeWildcardHost(
        _ text: String, fail: (String) -> PatternProblem
    ) throws(PatternProblem) -> String {
        var labels: [String] = []
        var body = text
        if body.hasSuffix(".") { body.removeLast() }
        for label in body.split(separator: ".", omittingEmptySubsequences: false) {
            if label.isEmpty { throw fail(HostProblem.emptyLabel.message) }
            if label.contains("*") || label.contains("?") {
                guard label.unicodeScalars.allSatisfy(\.isASCII) else {
                    throw fail("wildcards inside a non-ASCII label are not supported; write that label in full")
                }
                labels.append(label.lowercased())
            } else {
                switch HostName.normalize(String(label)) {
                case .success(let normal): labels.append(normal)
                case .failure(let problem): throw fail(problem.message)
                }
            }
        }
        let host = labels.joined(separator: ".")
        for byte in host.utf8 where HostName.isForbidden(byte) && byte != UInt8(ascii: "?") {
            throw fail(HostProblem.forbiddenCharacter(Character(Unicode.Scalar(byte))).message)
        }
        return host
    }

    /// The longest label-aligned literal suffix after the last wildcard.
    static func indexKey(forHost host: String, isWildcard: Bool) -> String {
        guard isWildcard else { return host }
        guard let lastWildcard = host.lastIndex(where: { $0 == "*" || $0 == "?" }) else { return host }
        let tail = host[host.index(after: lastWildcard)...]
        guard let dot = tail.firstIndex(of: ".") else { return "" }
        return String(tail[tail.index(after: dot)...])
    }

    /// The index keys under which rules that may match `host` are filed: every
    /// label suffix of the host, and "" for rules with no literal host suffix.
    public static func candidateIndexKeys(forHost host: String) -> [String] {
        guard !host.isEmpty else { return [""] } // a local file
        var keys = [host]
        // On bytes: Character-level search would cost more than the lookups.
        let utf8 = host.utf8
        if utf8.first != UInt8(ascii: "[") {
            var index = utf8.startIndex
            while let dot = utf8[index...].firstIndex(of: UInt8(ascii: ".")) {
                index = utf8.index(after: dot)
                keys.append(String(host[index...]))
            }
        }
        keys.append("")
        return keys
    }
}

/// Why a pattern is invalid; its description reads `invalid pattern 'X': reason`.
public struct PatternProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public let pattern: String
    public let reason: String
    public var description: String { "invalid pattern '\(pattern)': \(reason)" }
}

extension Pattern {
    /// What a rule that names the app a link comes from starts with:
    /// `from:APP PATTERN` (`from:com.slack.Slack github.com`). The space is on
    /// purpose: every brsync before rules by source, and the phone's, refuse a
    /// pattern with whitespace, so they set such a rule aside instead of
    /// applying it to every link.
    public static let sourcePrefix = "from:"

    /// The key form of an app id: lower-cased (desktop-file ids differ in case
    /// only by accident).
    public static func sourceKey(_ id: String) -> String { id.lowercased() }

    /// Whether `id` can name an app: 1 to 255 of ASCII letters, digits, `.`,
    /// `_`, `-`, `+`, at least one of them a letter or digit.
    public static func isSourceID(_ id: some StringProtocol) -> Bool {
        func isAlphanumeric(_ byte: UInt8) -> Bool {
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
        }
        return !id.isEmpty && id.utf8.count <= 255 && id.utf8.contains(where: isAlphanumeric)
            && id.utf8.allSatisfy { byte in
                isAlphanumeric(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+")
            }
    }

    /// Why `id` cannot name an app, worded for the person who typed it; nil when it can.
    public static func sourceIDProblem(_ id: some StringProtocol) -> String? {
        guard !isSourceID(id) else { return nil }
        return
            "'\(DisplayText.printable(id.prefix(80)))\(id.count > 80 ? "…" : "")' is not an app's id: a desktop file's name without .desktop, "
            + "a Flatpak id or a program's name (1 to 255 ASCII letters, digits, '.', '_', '-', '+', with a letter or digit)"
    }

    /// Parses `from:APP PATTERN`.
    init(fromApp text: String) throws(PatternProblem) {
        let trimmed = URLParser.trimmed(text)
        func fail(_ reason: String) -> PatternProblem { PatternProblem(pattern: text, reason: reason) }
        let afterPrefix = trimmed.dropFirst(Self.sourcePrefix.count)
        guard let space = afterPrefix.firstIndex(where: { $0 == " " || $0 == "\t" }) else {
            throw fail("'from:APP' is followed by a space and the pattern (from:com.slack.Slack github.com)")
        }
        let app = afterPrefix[..<space]
        if let problem = Self.sourceIDProblem(app) { throw fail(problem) }
        let rest = afterPrefix[space...].drop { $0 == " " || $0 == "\t" }
        guard !rest.isEmpty else { throw fail("it names the app '\(app)' but no pattern") }
        guard !rest.lowercased().hasPrefix(Self.sourcePrefix) else { throw fail("a rule names one app at most") }
        var pattern = try Pattern(plain: String(rest))
        pattern.source = Self.sourceKey(String(app))
        pattern.text = "\(Self.sourcePrefix)\(app) \(pattern.text)"
        pattern.key = "\(Self.sourcePrefix)\(Self.sourceKey(String(app))) \(pattern.key)"
        self = pattern
    }
}
