/// A server URL: `https://HOST[:PORT]`. Only https: there is no insecure mode.
public struct RemoteURL: Sendable, Equatable, CustomStringConvertible {
    public let host: String
    public let port: UInt16
    public let text: String

    public init(parsing text: String) throws(ReplicaError) {
        guard text.hasPrefix("https://") else {
            throw .invalidInput("the server URL must start with https:// (brsync only talks to a server it can verify)")
        }
        var rest = text.dropFirst("https://".count)
        while rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.isEmpty, !rest.contains("/"), !rest.contains("@"), !rest.contains("?") else {
            throw .invalidInput("the server URL is https://HOST or https://HOST:PORT, without a path")
        }
        var host = String(rest)
        var port: UInt16 = 443
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else {
                throw .invalidInput("'\(text)' has an IPv6 address without ']'")
            }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let value = UInt16(after.dropFirst()) else {
                    throw .invalidInput("'\(text)' has a bad port")
                }
                port = value
            }
        } else if let colon = rest.lastIndex(of: ":") {
            guard let value = UInt16(rest[rest.index(after: colon)...]), value > 0 else {
                throw .invalidInput("'\(text)' has a bad port")
            }
            port = value
            host = String(rest[..<colon])
        }
        guard !host.isEmpty else { throw .invalidInput("'\(text)' has no host") }
        self.host = host.lowercased()
        self.port = port
        self.text =
            port == 443
            ? "https://\(host.contains(":") ? "[\(self.host)]" : self.host)"
            : "https://\(host.contains(":") ? "[\(self.host)]" : self.host):\(port)"
    }

    public var description: String { text }
}
