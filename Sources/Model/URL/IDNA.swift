#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Host-name mapping to the ASCII form used for matching and storage.
enum IDNA {
    /// Dots that UTS #46 maps to U+002E.
    static func isAlternateDot(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "\u{3002}" || scalar == "\u{FF0E}" || scalar == "\u{FF61}"
    }

    /// Maps a host (already percent-decoded) to lower-case ASCII, punycoding every
    /// label that is not ASCII. Returns nil with a reason when a label cannot be encoded.
    static func toASCII(_ host: String) -> Result<String, HostProblem> {
        var unified = String.UnicodeScalarView()
        var allASCII = true
        for scalar in host.unicodeScalars {
            if isAlternateDot(scalar) {
                unified.append(".")
            } else {
                if !scalar.isASCII { allASCII = false }
                unified.append(scalar)
            }
        }
        if allASCII {
            return .success(String(unified).lowercased())
        }
        var labels: [String] = []
        for label in String(unified).split(separator: ".", omittingEmptySubsequences: false) {
            let text = String(label)
            if text.unicodeScalars.allSatisfy(\.isASCII) {
                labels.append(text.lowercased())
                continue
            }
            // NFC (UTS #46 maps to it); the standard library's normaliser, as Foundation uses.
            let mapped = String(decoding: text.lowercased()._nfcCodeUnits, as: UTF8.self)
            for scalar in mapped.unicodeScalars where scalar.properties.generalCategory == .control
                || scalar.properties.isWhitespace {
                return .failure(.forbiddenCharacter(Character(scalar)))
            }
            guard let encoded = Punycode.encode(Array(mapped.unicodeScalars)) else {
                return .failure(.labelTooLong)
            }
            labels.append("xn--" + encoded)
        }
        return .success(labels.joined(separator: "."))
    }
}

/// Why a host is not acceptable.
enum HostProblem: Error, Equatable {
    case empty
    case emptyLabel
    case labelTooLong
    case hostTooLong
    case forbiddenCharacter(Character)
    case invalidIPv4
    case invalidIPv6
    case invalidPercentEncoding

    var message: String {
        switch self {
        case .empty: return "the host is empty"
        case .emptyLabel: return "the host has an empty label (two dots in a row, or a leading dot)"
        case .labelTooLong: return "a host label is longer than 63 characters"
        case .hostTooLong: return "the host is longer than 253 characters"
        case .forbiddenCharacter(let character):
            let shown = character.unicodeScalars.first.map { $0.value < 0x20 || $0.value == 0x7F ? "U+00" + String($0.value, radix: 16, uppercase: true) : String(character) } ?? "?"
            return "the host contains '\(shown)', which no host name may hold"
        case .invalidIPv4: return "the host looks like an IPv4 address but is not a valid one"
        case .invalidIPv6: return "the IPv6 address in brackets is not valid"
        case .invalidPercentEncoding: return "the host has a broken percent-escape"
        }
    }
}
