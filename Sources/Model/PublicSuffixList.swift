/// The Public Suffix List, ICANN and private sections, and the registrable
/// domain (eTLD+1) it defines. `Model` takes the list's text; the client reads
/// the system's copy.
/// https://publicsuffix.org/list/ (format and algorithm)
public struct PublicSuffixList: Sendable {
    private var rules: Set<String> = []
    private var wildcards: Set<String> = []
    private var exceptions: Set<String> = []

    /// Number of rules read.
    public var ruleCount: Int { rules.count + wildcards.count + exceptions.count }

    /// Parses the list's text (`public_suffix_list.dat`).
    /// - Throws: ``PublicSuffixListProblem`` when the text holds no rule at all.
    public init(text: String) throws(PublicSuffixListProblem) {
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            guard let token = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).first,
                !token.hasPrefix("//")
            else { continue }
            var rule = String(token)
            var isException = false
            var isWildcard = false
            if rule.hasPrefix("!") {
                isException = true
                rule.removeFirst()
            } else if rule.hasPrefix("*.") {
                isWildcard = true
                rule.removeFirst(2)
            }
            guard case .success(let ascii) = IDNA.toASCII(rule), !ascii.isEmpty else { continue }
            if isException {
                exceptions.insert(ascii)
            } else if isWildcard {
                wildcards.insert(ascii)
            } else {
                rules.insert(ascii)
            }
        }
        guard ruleCount > 0 else { throw PublicSuffixListProblem(reason: "it holds no public-suffix rule") }
    }

    /// The public suffix of a normalised host (`co.uk` for `a.b.co.uk`).
    public func publicSuffix(of host: String) -> String {
        let labels = host.split(separator: ".").map(String.init)
        guard !labels.isEmpty else { return host }
        let start = suffixStart(labels)
        return labels[start...].joined(separator: ".")
    }

    /// The registrable domain (eTLD+1) of a normalised host, or nil when the host
    /// is itself a public suffix or is an address.
    public func registrableDomain(of host: String) -> String? {
        if HostName.isAddressOrLocal(host) { return nil }
        let labels = host.split(separator: ".").map(String.init)
        let start = suffixStart(labels)
        guard start > 0 else { return nil }
        return labels[(start - 1)...].joined(separator: ".")
    }

    /// The pattern "remember for this domain" proposes for `url`: the registrable
    /// domain; for an IP address, `localhost` or a dotless host the exact host
    /// (with its port when not the default); a public suffix itself stays exact;
    /// for a local file, its folder (`file:///home/me/docs/**`).
    public func suggestedPattern(for url: NormalizedURL) -> String {
        if url.isFile {
            // The file's folder and everything below it.
            let folder = url.path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(
                separator: "/")
            return "file://\(url.host)\(folder)/**"
        }
        if HostName.isAddressOrLocal(url.host) { return url.hostWithPort }
        return registrableDomain(of: url.host) ?? url.host
    }

    private func suffixStart(_ labels: [String]) -> Int {
        func suffix(_ index: Int) -> String { labels[index...].joined(separator: ".") }
        for index in 0..<labels.count where exceptions.contains(suffix(index)) {
            return index + 1
        }
        for index in 0..<labels.count {
            if rules.contains(suffix(index)) { return index }
            if index + 1 < labels.count && wildcards.contains(suffix(index + 1)) { return index }
        }
        // The implicit rule "*": the last label is a public suffix.
        return labels.count - 1
    }
}

public struct PublicSuffixListProblem: Error, Sendable, CustomStringConvertible {
    public let reason: String
    public var description: String { "public suffix list unusable: \(reason)" }
}
