import JSON

/// An http(s) or file URL in the normal form that rules match against and
/// browsers open. An absolute local path (`/tmp/page.html`) reads as a `file:`
/// URL; only patterns that name `file://` match those.
///
/// Normalisation: scheme and host lower-cased, IDN hosts to punycode, trailing
/// dot and default port dropped, IPv4/IPv6 addresses in canonical form,
/// userinfo removed (it is never the host), `\` read as `/`, dot segments
/// resolved, characters a URL may not hold percent-encoded, an empty query or
/// fragment dropped. Text with no scheme (`example.com/x`) is read as `https://`.
/// The path keeps its case: only matching is case-insensitive.
public struct NormalizedURL: Sendable, Hashable, CustomStringConvertible {
    /// `http`, `https` or `file`.
    public let scheme: String
    /// Lower-case ASCII host; an IPv6 address is in brackets; "" for a local file.
    public let host: String
    /// The port, or nil for the scheme's default.
    public let port: Int?
    /// Starts with `/`.
    public let path: String
    /// Without the `?`; nil when absent or empty.
    public let query: String?
    /// Without the `#`; nil when absent or empty.
    public let fragment: String?

    public var defaultPort: Int { scheme == "http" ? 80 : scheme == "https" ? 443 : 0 }
    public var effectivePort: Int { port ?? defaultPort }

    /// The host with `:port` when the port is not the default.
    public var hostWithPort: String { port.map { "\(host):\($0)" } ?? host }

    /// Path, `?query` and `#fragment` as they appear in the URL.
    public var pathQueryFragment: String {
        var text = path
        if let query { text += "?" + query }
        if let fragment { text += "#" + fragment }
        return text
    }

    public var absoluteString: String { "\(scheme)://\(hostWithPort)\(pathQueryFragment)" }
    public var description: String { absoluteString }

    /// Parses and normalises `text`.
    /// - Throws: ``URLProblem`` saying what is wrong (not a URL, unsupported scheme, bad host or port).
    public init(_ text: String) throws(URLProblem) {
        self = try URLParser.parse(text)
    }

    init(scheme: String, host: String, port: Int?, path: String, query: String?, fragment: String?) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.path = path
        self.query = query
        self.fragment = fragment
    }
}

/// Why text is not an acceptable http(s) or file URL.
public struct URLProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public let input: String
    public let reason: String
    /// The input is shown with control characters and bidi overrides made
    /// harmless: a link is hostile text until proven otherwise.
    public var description: String { "not a web URL: '\(DisplayText.printable(input))': \(reason)" }
}
