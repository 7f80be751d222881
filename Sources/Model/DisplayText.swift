/// Text from elsewhere (synced names, patterns, server messages) made safe to
/// show on a terminal or in another program's window: control characters,
/// which could move the cursor, retitle the terminal or hide text (escape
/// sequences), and bidirectional overrides, which reorder what is shown, are
/// each replaced by `�`.
public enum DisplayText {
    public static func printable(_ text: some StringProtocol) -> String {
        var output = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            output.append(isUnsafe(scalar) ? "\u{FFFD}" : scalar)
        }
        return String(output)
    }

    /// ``printable(_:)`` for text of several lines: line feeds and tabs stay.
    public static func printableLines(_ text: some StringProtocol) -> String {
        var output = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            output.append(scalar != "\n" && scalar != "\t" && isUnsafe(scalar) ? "\u{FFFD}" : scalar)
        }
        return String(output)
    }

    public static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F: return true
        case 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }
}
