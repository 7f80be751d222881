/// Host-name mapping to the ASCII form used for matching and storage: the
/// URL Standard's "domain to ASCII", which is UTS #46 ToASCII (``UTS46``).
enum IDNA {
    /// Maps a host (already percent-decoded) to its ASCII form; the reason
    /// when it is not a valid domain. ASCII names with no `xn--` label take
    /// a fast path (lower-casing is all UTS #46 does to them).
    static func toASCII(_ host: String) -> Result<String, HostProblem> {
        if host.utf8.allSatisfy({ $0 < 0x80 }) && !hasACELabel(host.utf8) {
            return .success(host.lowercased())
        }
        switch UTS46.toASCII(host) {
        case .success(let ascii): return .success(ascii)
        case .failure(let problem): return .failure(.invalidDomain(problem.reason))
        }
    }

    /// Whether a label of `bytes` starts with `xn--` (in any case).
    static func hasACELabel<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        var atLabelStart = true
        var iterator = bytes.makeIterator()
        while let byte = iterator.next() {
            if atLabelStart, byte | 0x20 == UInt8(ascii: "x") {
                if iterator.next().map({ $0 | 0x20 == UInt8(ascii: "n") }) == true,
                    iterator.next() == UInt8(ascii: "-"), iterator.next() == UInt8(ascii: "-")
                {
                    return true
                }
                atLabelStart = false
                continue
            }
            atLabelStart = byte == UInt8(ascii: ".")
        }
        return false
    }
}

/// Why a host is not acceptable.
enum HostProblem: Error, Equatable {
    case empty
    case emptyLabel
    case invalidDomain(String)
    case forbiddenCharacter(Character)
    case invalidIPv4
    case invalidIPv6
    case invalidPercentEncoding

    var message: String {
        switch self {
        case .empty: return "the host is empty"
        case .emptyLabel: return "the host has an empty label (two dots in a row, or a leading dot)"
        case .invalidDomain(let reason): return "the host is not a valid domain: \(reason)"
        case .forbiddenCharacter(let character):
            let shown =
                character.unicodeScalars.first.map {
                    $0.value < 0x20 || $0.value == 0x7F
                        ? "U+" + String("000" + String($0.value, radix: 16, uppercase: true)).suffix(4)
                        : String(character)
                } ?? "?"
            return "the host contains '\(shown)', which no host name may hold"
        case .invalidIPv4: return "the host looks like an IPv4 address but is not a valid one"
        case .invalidIPv6: return "the IPv6 address in brackets is not valid"
        case .invalidPercentEncoding: return "the host has a broken percent-escape"
        }
    }
}
