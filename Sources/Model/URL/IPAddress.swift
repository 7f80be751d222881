/// IPv4 and IPv6 host parsing and canonical serialisation, as browsers do it
/// (WHATWG URL Standard, "host parsing"), so `http://0x7f.1/` and
/// `http://127.0.0.1/` are the same host.
/// https://url.spec.whatwg.org/#host-parsing
enum IPAddress {
    /// Whether a domain's last label makes it an IPv4 address per WHATWG
    /// ("ends in a number"): all digits, or `0x` followed by hex digits.
    static func endsInNumber(_ host: String) -> Bool {
        var labels = host.split(separator: ".", omittingEmptySubsequences: false)
        if labels.last == "" {
            if labels.count == 1 { return false }
            labels.removeLast()
        }
        guard let last = labels.last, !last.isEmpty else { return false }
        if last.allSatisfy({ $0.isASCII && $0.isNumber }) { return true }
        let lower = last.lowercased()
        return lower.hasPrefix("0x") && lower.dropFirst(2).allSatisfy(\.isHexDigit)
    }

    /// Parses an IPv4 address in any form a browser accepts (decimal, octal, hex,
    /// fewer than four parts) and returns dotted-decimal text, or nil.
    static func canonicalIPv4(_ host: String) -> String? {
        var parts = host.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        if parts.last == "" { parts.removeLast() }
        guard !parts.isEmpty, parts.count <= 4 else { return nil }
        var numbers: [UInt64] = []
        for part in parts {
            guard let number = parseNumber(part) else { return nil }
            numbers.append(number)
        }
        for number in numbers.dropLast() where number > 255 { return nil }
        guard let last = numbers.last, last < (UInt64(1) << (8 * (5 - numbers.count))) else { return nil }
        var address = last
        for (index, number) in numbers.dropLast().enumerated() {
            address += number << (8 * (3 - index))
        }
        return "\(address >> 24 & 255).\(address >> 16 & 255).\(address >> 8 & 255).\(address & 255)"
    }

    private static func parseNumber(_ text: String) -> UInt64? {
        guard !text.isEmpty else { return nil }
        var digits = Substring(text)
        var radix = 10
        if digits.count >= 2, digits.hasPrefix("0x") || digits.hasPrefix("0X") {
            digits = digits.dropFirst(2)
            radix = 16
        } else if digits.count >= 2, digits.hasPrefix("0") {
            digits = digits.dropFirst()
            radix = 8
        }
        if digits.isEmpty { return 0 }
        guard digits.count <= 32, let value = UInt64(digits, radix: radix) else { return nil }
        return value
    }

    /// Parses the text between `[` and `]` and returns the RFC 5952 form
    /// (lower-case, longest zero run compressed), or nil.
    static func canonicalIPv6(_ text: String) -> String? {
        var pieces = [UInt16](repeating: 0, count: 8)
        var pieceIndex = 0
        var compress: Int?
        let chars = Array(text.lowercased().utf8)
        var i = 0
        if chars.first == UInt8(ascii: ":") {
            guard chars.count > 1, chars[1] == UInt8(ascii: ":") else { return nil }
            i = 2
            pieceIndex = 1
            compress = 1
        }
        while i < chars.count {
            guard pieceIndex < 8 else { return nil }
            if chars[i] == UInt8(ascii: ":") {
                guard compress == nil else { return nil }
                i += 1
                pieceIndex += 1
                compress = pieceIndex
                continue
            }
            var value: UInt16 = 0
            var length = 0
            while length < 4, i < chars.count, let digit = hexValue(chars[i]) {
                value = value * 16 + UInt16(digit)
                i += 1
                length += 1
            }
            if i < chars.count, chars[i] == UInt8(ascii: ".") {
                // Embedded IPv4 in the last 32 bits.
                guard length > 0, pieceIndex <= 6 else { return nil }
                i -= length
                let rest = String(decoding: chars[i...], as: UTF8.self)
                let octets = rest.split(separator: ".", omittingEmptySubsequences: false)
                guard octets.count == 4 else { return nil }
                var bytes: [UInt16] = []
                for octet in octets {
                    guard !octet.isEmpty, octet.count <= 3, octet.allSatisfy({ $0.isASCII && $0.isNumber }),
                        !(octet.count > 1 && octet.hasPrefix("0")), let number = UInt16(octet), number <= 255
                    else { return nil }
                    bytes.append(number)
                }
                pieces[pieceIndex] = bytes[0] << 8 | bytes[1]
                pieces[pieceIndex + 1] = bytes[2] << 8 | bytes[3]
                pieceIndex += 2
                i = chars.count
                break
            }
            guard length > 0 else { return nil }
            if i < chars.count {
                guard chars[i] == UInt8(ascii: ":") else { return nil }
                i += 1
                guard i < chars.count else { return nil }
            }
            pieces[pieceIndex] = value
            pieceIndex += 1
        }
        if let compress {
            var swaps = pieceIndex - compress
            pieceIndex = 7
            while pieceIndex != 0 && swaps > 0 {
                pieces.swapAt(pieceIndex, compress + swaps - 1)
                pieceIndex -= 1
                swaps -= 1
            }
        } else if pieceIndex != 8 {
            return nil
        }
        return serialize(pieces)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        default: return nil
        }
    }

    private static func serialize(_ pieces: [UInt16]) -> String {
        // Longest run of two or more zero pieces, first one on ties (RFC 5952 §4.2).
        var bestStart = -1
        var bestLength = 1
        var index = 0
        while index < 8 {
            if pieces[index] == 0 {
                var end = index
                while end < 8 && pieces[end] == 0 { end += 1 }
                if end - index > bestLength {
                    bestStart = index
                    bestLength = end - index
                }
                index = end
            } else {
                index += 1
            }
        }
        var output = ""
        index = 0
        while index < 8 {
            if index == bestStart {
                output += index == 0 ? "::" : ":"
                index += bestLength
                continue
            }
            output += String(pieces[index], radix: 16)
            if index < 7 { output += ":" }
            index += 1
        }
        return output
    }
}
