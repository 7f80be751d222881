/// Normalisation of a host for matching: percent-decoded, UTS #46 to ASCII,
/// lower-cased, trailing dot dropped, IPv4 in dotted-decimal form.
enum HostName {
    /// Bytes that may never appear in a host (WHATWG "forbidden domain code
    /// point"), as a table: a `Set` would cost more to build than a lookup saves
    /// in a process that resolves one link.
    static let forbiddenTable: [Bool] = {
        var table = [Bool](repeating: false, count: 256)
        for byte in 0...0x20 { table[byte] = true }
        table[0x7F] = true
        for byte in " #%/:<>?@[\\]^|".utf8 { table[Int(byte)] = true }
        return table
    }()

    static func isForbidden(_ byte: UInt8) -> Bool { forbiddenTable[Int(byte)] }

    /// Lower-case table and validity of ASCII host bytes, for the fast path.
    private static let asciiHostByte: [UInt8] = (0..<256).map { byte in
        if byte >= 0x80 || isForbidden(UInt8(byte)) { return 0 }
        if byte >= 0x41 && byte <= 0x5A { return UInt8(byte + 0x20) }
        return UInt8(byte)
    }

    /// ``normalize(_:)`` on bytes, with a fast path for the common case: an
    /// ASCII name with no escape, not an IPv4 address.
    static func normalize(bytes: ArraySlice<UInt8>) -> Result<String, HostProblem> {
        var output = [UInt8]()
        output.reserveCapacity(bytes.count)
        for byte in bytes {
            let mapped = asciiHostByte[Int(byte)]
            guard mapped != 0 else { return normalize(String(decoding: bytes, as: UTF8.self)) }
            output.append(mapped)
        }
        // A Punycode label is checked as UTS #46 says: the full path.
        if IDNA.hasACELabel(output) { return normalize(String(decoding: output, as: UTF8.self)) }
        guard !output.isEmpty else { return .failure(.empty) }
        // Maybe an IPv4 address (the last label, before a trailing dot, starts with a digit): the full path.
        var lastLabel = output[...]
        if lastLabel.last == UInt8(ascii: ".") { lastLabel = lastLabel.dropLast() }
        if let dot = lastLabel.lastIndex(of: UInt8(ascii: ".")) { lastLabel = lastLabel[(dot + 1)...] }
        if let first = lastLabel.first, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) {
            return normalize(String(decoding: output, as: UTF8.self))
        }
        // No length limits (VerifyDnsLength=false) and, as in the URL
        // Standard, empty labels are kept (`a..b` is a host a browser tries).
        dropTrailingDot(&output)
        return .success(String(decoding: output, as: UTF8.self))
    }

    static func normalize(_ raw: String) -> Result<String, HostProblem> {
        guard !raw.isEmpty else { return .failure(.empty) }
        guard let decoded = percentDecode(raw) else { return .failure(.invalidPercentEncoding) }
        let host: String
        switch IDNA.toASCII(decoded) {
        case .success(let ascii): host = ascii
        case .failure(let problem): return .failure(problem)
        }
        guard !host.isEmpty else { return .failure(.empty) }
        for byte in host.utf8 where isForbidden(byte) {
            return .failure(.forbiddenCharacter(Character(Unicode.Scalar(byte))))
        }
        if IPAddress.endsInNumber(host) {
            guard let address = IPAddress.canonicalIPv4(host) else { return .failure(.invalidIPv4) }
            return .success(address)
        }
        var bytes = Array(host.utf8)
        dropTrailingDot(&bytes)
        return .success(String(decoding: bytes, as: UTF8.self))
    }

    /// `example.com.` is `example.com` for every rule: one trailing dot goes,
    /// unless the label before it is empty (`a..`, `.`), where dropping it
    /// would make another host (`a.` could then read as an IPv4 address
    /// when `a` is a number, and `.` would be no host at all).
    static func dropTrailingDot(_ bytes: inout [UInt8]) {
        let count = bytes.count
        if count >= 2, bytes[count - 1] == UInt8(ascii: "."), bytes[count - 2] != UInt8(ascii: ".") {
            bytes.removeLast()
        }
    }

    /// Decodes `%XX` escapes; nil when an escape is broken or the bytes are not UTF-8.
    static func percentDecode(_ text: String) -> String? {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return text }
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexDigit), let low = iterator.next().flatMap(hexDigit) else {
                    return nil
                }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        return String(validUTF8: bytes)
    }

    static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// Whether the host is an IP address, `localhost` or has no dot: such hosts
    /// have no registrable domain and are matched exactly.
    static func isAddressOrLocal(_ host: String) -> Bool {
        host.hasPrefix("[") || host == "localhost" || host.hasSuffix(".localhost") || !host.contains(".")
            || IPAddress.endsInNumber(host)
    }
}
