import Glibc

/// A `HOST:PORT` to listen on or connect to: `127.0.0.1:8443`, `[::1]:8443`,
/// `localhost:8443`, `0.0.0.0:443`, `[::]:443`. Port 0 asks for an ephemeral port.
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    public let host: String
    public let port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT`.
    /// - Throws: ``NetError/badAddress(_:)`` saying what is wrong.
    public init(parsing text: String) throws(NetError) {
        let hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw .badAddress("'\(text)' is not [IPv6]:PORT")
            }
            hostPart = text[text.index(after: text.startIndex)..<close]
            portPart = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw .badAddress("'\(text)' has no port (HOST:PORT)") }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
        }
        guard !hostPart.isEmpty else { throw .badAddress("'\(text)' has no host (HOST:PORT)") }
        guard let port = UInt16(portPart) else {
            throw .badAddress("'\(portPart)' in '\(text)' is not a port from 0 to 65535")
        }
        self.init(host: String(hostPart), port: port)
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// The socket addresses `host` resolves to (numeric hosts need no lookup).
    func resolve(passive: Bool) throws(NetError) -> [(family: Int32, storage: sockaddr_storage, length: socklen_t)] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = passive ? AI_PASSIVE : 0
        hints.ai_family = AF_UNSPEC
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &result)
        guard status == 0, let first = result else {
            throw .badAddress("cannot resolve '\(host)': \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(first) }
        var addresses: [(Int32, sockaddr_storage, socklen_t)] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            var storage = sockaddr_storage()
            withUnsafeMutableBytes(of: &storage) { target in
                target.copyMemory(
                    from: UnsafeRawBufferPointer(start: info.pointee.ai_addr, count: Int(info.pointee.ai_addrlen)))
            }
            addresses.append((info.pointee.ai_family, storage, info.pointee.ai_addrlen))
            cursor = info.pointee.ai_next
        }
        return addresses
    }
}
