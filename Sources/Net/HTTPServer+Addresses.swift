import Glibc

/// Who a peer is for the per-address cap.
extension HTTPServer {
    /// The address part of `host:port` or `[v6]:port`.
    static func address(of peer: String) -> String {
        guard let colon = peer.lastIndex(of: ":") else { return peer }
        return String(peer[..<colon])
    }

    /// What the per-address cap counts a peer under: its IPv4 address, or
    /// the /64 network of its IPv6 address (one host has a /64 to pick
    /// addresses from, so a single address would cost an attacker nothing).
    static func addressGroup(of peer: String) -> String {
        let address = Self.address(of: peer)
        guard address.hasPrefix("["), address.hasSuffix("]") else { return address }
        var raw = in6_addr()
        let inside = String(address.dropFirst().dropLast())
        guard inet_pton(AF_INET6, inside, &raw) == 1 else { return address }
        let bytes = withUnsafeBytes(of: &raw) { Array($0) }
        // An IPv4 address carried in IPv6 (::ffff:a.b.c.d) counts as itself.
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF { return inside }
        let groups = stride(from: 0, to: 8, by: 2).map {
            String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16)
        }
        return "[\(groups.joined(separator: ":"))::/64]"
    }
}
