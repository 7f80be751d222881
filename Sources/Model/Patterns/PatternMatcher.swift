/// The outcome of matching one pattern against one URL; a miss says which part
/// of the URL differed (for `brsync explain`).
public enum PatternMatch: Sendable, Equatable {
    case match
    case schemeDiffers
    case portDiffers
    case hostDiffers
    case pathDiffers
    /// The rule names the app a link comes from, and this link came from another.
    case sourceDiffers
    /// The rule names the app a link comes from, and this link's app is not known.
    case sourceUnknown

    public var isMatch: Bool { self == .match }

    public var explanation: String {
        switch self {
        case .match: return "matches"
        case .schemeDiffers: return "the scheme differs"
        case .portDiffers: return "the port differs"
        case .hostDiffers: return "the host differs"
        case .pathDiffers: return "the path differs"
        case .sourceDiffers: return "the link came from another app"
        case .sourceUnknown: return "it is for one app's links, and this link's app is not known"
        }
    }
}

/// A URL prepared once for matching against many patterns: the parts that
/// patterns compare, lower-cased, as bytes.
public struct MatchSubject: Sendable {
    public let url: NormalizedURL
    /// The app the link came from, lower-cased (``Pattern/source``), or nil when not known.
    let source: String?
    let host: [UInt8]
    /// Lower-cased path, then `?query`, then `#fragment`; the ends of each part.
    let pathQueryFragment: [UInt8]
    let pathEnd: Int
    let queryEnd: Int

    /// - Parameter source: the id of the app the link came from, when known.
    public init(_ url: NormalizedURL, source: String? = nil) {
        self.url = url
        self.source = source.map(Pattern.sourceKey)
        host = Array(url.host.utf8)
        // Normalised URLs are ASCII (non-ASCII is percent-encoded), so ASCII
        // lower-casing is all the case-insensitivity matching needs.
        var bytes = [UInt8]()
        bytes.reserveCapacity(url.path.utf8.count + (url.query?.utf8.count ?? 0) + (url.fragment?.utf8.count ?? 0) + 2)
        bytes += url.path.utf8
        pathEnd = bytes.count
        if let query = url.query { bytes.append(UInt8(ascii: "?")); bytes += query.utf8 }
        queryEnd = bytes.count
        if let fragment = url.fragment { bytes.append(UInt8(ascii: "#")); bytes += fragment.utf8 }
        for index in bytes.indices where bytes[index] >= UInt8(ascii: "A") && bytes[index] <= UInt8(ascii: "Z") {
            bytes[index] += 0x20
        }
        pathQueryFragment = bytes
    }
}

extension Pattern {
    /// Whether this pattern matches `url`, and if not, which part differs.
    public func match(_ url: NormalizedURL) -> PatternMatch {
        match(MatchSubject(url))
    }

    /// Matching against a prepared subject, for resolving against many rules.
    public func match(_ subject: MatchSubject) -> PatternMatch {
        let url = subject.url
        if let source, source != subject.source { return subject.source == nil ? .sourceUnknown : .sourceDiffers }
        if let scheme, scheme != url.scheme { return .schemeDiffers }
        if scheme == nil, url.isFile { return .schemeDiffers } // no scheme: http or https
        if let port, port != url.effectivePort { return .portDiffers }
        guard matchesHost(subject.host) else { return .hostDiffers }
        guard let pathGlob else { return .match }
        let end =
            includesFragment ? subject.pathQueryFragment.count : includesQuery ? subject.queryEnd : subject.pathEnd
        let matched = subject.pathQueryFragment.withUnsafeBufferPointer { buffer -> Bool in
            let part = UnsafeBufferPointer(rebasing: buffer[0..<end])
            let ends = pathGlob.matchEnds(part)
            // The pattern names a path and everything below it: it must end at the
            // end of the subject or just before a '/', '?' or '#'.
            for index in stride(from: end, through: 0, by: -1) where ends[index] {
                if index == end { return true }
                let next = part[index]
                if next == UInt8(ascii: "/") || next == UInt8(ascii: "?") || next == UInt8(ascii: "#") { return true }
            }
            return false
        }
        return matched ? .match : .pathDiffers
    }

    private func matchesHost(_ urlHost: [UInt8]) -> Bool {
        let www = Array("www.".utf8)
        let hasWWW = urlHost.count > 4 && urlHost.starts(with: www)
        guard let hostGlob else {
            let literal = host.utf8
            if urlHost.elementsEqual(literal) { return true }
            if isHostOnly {
                // Any subdomain: the URL host ends with "." + host.
                let count = literal.count
                return urlHost.count > count && urlHost[urlHost.count - count - 1] == UInt8(ascii: ".")
                    && urlHost[(urlHost.count - count)...].elementsEqual(literal)
            }
            return scheme == nil && hasWWW && urlHost[4...].elementsEqual(literal)
        }
        return urlHost.withUnsafeBufferPointer { buffer in
            if hostGlob.matchEnds(buffer)[buffer.count] { return true }
            if let bareHostGlob, bareHostGlob.matchEnds(buffer)[buffer.count] { return true }
            if scheme == nil && hasWWW {
                let rest = UnsafeBufferPointer(rebasing: buffer[4...])
                return hostGlob.matchEnds(rest)[rest.count]
            }
            return false
        }
    }
}
