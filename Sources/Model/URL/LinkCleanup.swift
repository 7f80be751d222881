import JSON

/// Link cleanup, offline: links that wrap another link (mail scanners,
/// social sites, chat apps) are unwrapped, then tracking parameters are
/// dropped, the same way on every machine and on the phone. Pure and
/// table-driven: no network, no short-link expansion.
///
/// Rules decide on the cleaned URL. The parameters are dropped from the URL
/// that is opened unless the deciding rule keeps them (``UrlRule/keepsTracking``:
/// some sites break without them).
public struct LinkCleanup: Sendable, Equatable {
    /// Parameter names dropped by default; a trailing `*` matches any name
    /// with that prefix. Compared without regard to ASCII case.
    public static let defaultParameters: [String] = [
        "utm_*", "fbclid", "gclid", "gclsrc", "dclid", "gbraid", "wbraid", "msclkid", "mc_eid", "mc_cid",
        "igshid", "yclid", "twclid", "ttclid", "li_fat_id", "_hsenc", "_hsmi", "__hssc", "__hstc", "__hsfp",
        "mkt_tok", "oly_anon_id", "oly_enc_id", "vero_id", "vero_conv", "wickedid", "rb_clickid", "ef_id",
        "s_cid", "_gl", "srsltid",
    ]

    /// How many wrappers inside each other are unwrapped; a deeper one is left
    /// as it is at that depth.
    public static let maxDepth = 5

    /// At most this many parameter names in the list.
    public static let maxParameters = 200

    /// The names (and `prefix*` patterns) dropped.
    public let parameters: [String]

    public init(parameters: [String] = LinkCleanup.defaultParameters) {
        self.parameters = parameters
    }

    /// Reads a parameter list as stored in the synced setting (names separated
    /// by spaces or commas).
    /// - Throws: ``Problem`` naming the first unusable name.
    public init(parsing text: String) throws(Problem) {
        let names = text.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\n" || $0 == "\t" }).map(String.init)
        for name in names {
            if let reason = Self.problem(name: name) { throw Problem(reason) }
        }
        guard names.count <= Self.maxParameters else { throw Problem("at most \(Self.maxParameters) parameter names") }
        self.init(parameters: names)
    }

    /// The list as the setting stores it.
    public var settingText: String { parameters.joined(separator: " ") }

    /// Why `name` cannot be a parameter name in the list, or nil: 1 to 64 of
    /// `A-Z a-z 0-9 . _ - [ ]`, optionally ending in `*` (a prefix).
    public static func problem(name: String) -> String? {
        let body = name.hasSuffix("*") ? name.dropLast() : Substring(name)
        guard !body.isEmpty, name.utf8.count <= 64 else {
            return "'\(DisplayText.printable(name))': a parameter name has 1 to 64 characters"
        }
        let allowed = body.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2E || byte == 0x5F || byte == 0x2D || byte == 0x5B || byte == 0x5D
        }
        return allowed
            ? nil
            : "'\(DisplayText.printable(name))': a parameter name holds only A-Z a-z 0-9 . _ - [ ] (and may end in *)"
    }

    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let reason: String
        init(_ reason: String) { self.reason = reason }
        public var description: String { reason }
    }

    /// What cleanup did to a URL.
    public struct Result: Sendable, Equatable {
        /// The URL rules decide on: unwrapped, tracking parameters dropped.
        public let url: NormalizedURL
        /// Unwrapped, with its tracking parameters (opened when the deciding rule keeps them).
        public let unwrapped: NormalizedURL
        /// Each wrapper taken off, outermost first.
        public let steps: [Unwrapping]
        /// The parameters dropped, as they appeared (`name=value`).
        public let removed: [String]

        /// The URL to open when the deciding rule keeps (or not) tracking parameters.
        public func opened(keepingTracking: Bool) -> NormalizedURL { keepingTracking ? unwrapped : url }
    }

    /// One wrapper taken off a link.
    public struct Unwrapping: Sendable, Equatable {
        /// The wrapper's name (`Microsoft Safe Links`, `Google`, …).
        public let wrapper: String
        /// The wrapping link.
        public let from: NormalizedURL
    }

    /// Unwraps `url` (at most ``maxDepth`` wrappers) and drops tracking
    /// parameters. A wrapper whose target is missing or not an http(s) URL is
    /// left alone.
    public func clean(_ url: NormalizedURL) -> Result {
        var current = url
        var steps: [Unwrapping] = []
        while steps.count < Self.maxDepth, let (wrapper, target) = Self.unwrap(current) {
            steps.append(Unwrapping(wrapper: wrapper, from: current))
            current = target
        }
        let (stripped, removed) = strip(current)
        return Result(url: stripped, unwrapped: current, steps: steps, removed: removed)
    }

    /// `url` without the listed parameters (the others keep their order and spelling).
    public func strip(_ url: NormalizedURL) -> (url: NormalizedURL, removed: [String]) {
        guard let query = url.query, !parameters.isEmpty else { return (url, []) }
        var kept: [Substring] = []
        var removed: [String] = []
        for piece in query.split(separator: "&", omittingEmptySubsequences: false) {
            let name = Self.formDecode(
                piece.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
            if !name.isEmpty, isTracking(name) { removed.append(String(piece)) } else { kept.append(piece) }
        }
        guard !removed.isEmpty else { return (url, []) }
        let newQuery = kept.joined(separator: "&")
        return (
            NormalizedURL(
                scheme: url.scheme, host: url.host, port: url.port, path: url.path,
                query: newQuery.isEmpty ? nil : newQuery, fragment: url.fragment), removed
        )
    }

    /// Whether parameter `name` is in the list.
    public func isTracking(_ name: String) -> Bool {
        let lowered = name.lowercased()
        return parameters.contains { entry in
            let pattern = entry.lowercased()
            return pattern.hasSuffix("*") ? lowered.hasPrefix(pattern.dropLast()) : lowered == pattern
        }
    }

    // MARK: Wrappers

    /// A kind of wrapping link: where it lives and which parameter holds the target.
    struct Wrapper: Sendable {
        let name: String
        let host: @Sendable (String) -> Bool
        let path: @Sendable (String) -> Bool
        let parameters: [String]
    }

    static let wrappers: [Wrapper] = [
        Wrapper(
            name: "Microsoft Safe Links", host: { $0.hasSuffix(".safelinks.protection.outlook.com") },
            path: { _ in true },
            parameters: ["url"]),
        Wrapper(
            name: "Microsoft Teams Safe Links", host: { $0 == "statics.teams.cdn.office.net" },
            path: { $0.hasPrefix("/evergreen-assets/safelinks/") }, parameters: ["url"]),
        Wrapper(name: "Google", host: isGoogle, path: { $0 == "/url" }, parameters: ["q", "url"]),
        Wrapper(
            name: "Facebook", host: { ["l.facebook.com", "lm.facebook.com", "l.messenger.com"].contains($0) },
            path: { $0 == "/l.php" || $0 == "/" }, parameters: ["u"]),
        Wrapper(name: "Instagram", host: { $0 == "l.instagram.com" }, path: { $0 == "/" }, parameters: ["u"]),
        Wrapper(name: "Slack", host: { $0 == "slack-redir.net" }, path: { $0 == "/link" }, parameters: ["url"]),
        Wrapper(
            name: "YouTube", host: { ["www.youtube.com", "youtube.com", "m.youtube.com"].contains($0) },
            path: { $0 == "/redirect" }, parameters: ["q"]),
        Wrapper(
            name: "LinkedIn", host: { ["www.linkedin.com", "linkedin.com"].contains($0) },
            path: { $0 == "/redir/redirect" || $0 == "/redir/redirect/" }, parameters: ["url"]),
        Wrapper(
            name: "Steam", host: { $0 == "steamcommunity.com" }, path: { $0 == "/linkfilter/" || $0 == "/linkfilter" },
            parameters: ["u", "url"]),
        Wrapper(
            name: "VK", host: { $0 == "vk.com" || $0 == "away.vk.com" }, path: { $0 == "/away.php" }, parameters: ["to"]
        ),
        Wrapper(name: "Reddit", host: { $0 == "out.reddit.com" }, path: { _ in true }, parameters: ["url"]),
        Wrapper(name: "Tumblr", host: { $0 == "t.umblr.com" }, path: { $0 == "/redirect" }, parameters: ["z"]),
    ]

    /// `google.TLD` or `www.google.TLD`, with a country or generic ending of
    /// one or two short labels (`com`, `de`, `co.uk`, `com.au`).
    @Sendable static func isGoogle(_ host: String) -> Bool {
        var labels = host.split(separator: ".", omittingEmptySubsequences: false)
        if labels.first == "www" { labels.removeFirst() }
        guard labels.first == "google", (2...3).contains(labels.count) else { return false }
        return labels.dropFirst().allSatisfy { (2...3).contains($0.count) && $0.allSatisfy(\.isLetter) }
    }

    /// The wrapper `url` is and the link it wraps, or nil.
    static func unwrap(_ url: NormalizedURL) -> (String, NormalizedURL)? {
        guard url.scheme == "https" || url.scheme == "http", let query = url.query else { return nil }
        for wrapper in wrappers where wrapper.host(url.host) && wrapper.path(url.path) {
            let pairs = query.split(separator: "&").map { piece in
                let parts = piece.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                return (formDecode(parts[0]), parts.count > 1 ? formDecode(parts[1]) : "")
            }
            for name in wrapper.parameters {
                guard let value = pairs.first(where: { $0.0 == name })?.1 else { continue }
                // Only an absolute http(s) URL: never a relative path, a local
                // file, or another scheme a wrapper could be made to carry.
                let lowered = value.lowercased()
                guard lowered.hasPrefix("https://") || lowered.hasPrefix("http://"),
                    let target = try? NormalizedURL(value), target.scheme != "file"
                else { return nil }
                return (wrapper.name, target)
            }
        }
        return nil
    }

    /// `application/x-www-form-urlencoded` decoding: `+` is a space, `%XX` a
    /// byte; a malformed escape stays as it is; bytes that are not UTF-8 are
    /// replaced.
    static func formDecode(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = Array(text.utf8)[...]
        while let byte = iterator.popFirst() {
            if byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), iterator.count >= 2,
                let high = HostName.hexDigit(iterator[iterator.startIndex]),
                let low = HostName.hexDigit(iterator[iterator.startIndex + 1])
            {
                bytes.append(high << 4 | low)
                iterator = iterator.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
