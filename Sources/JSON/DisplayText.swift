/// Text from elsewhere (synced names, patterns, server messages) made safe to
/// show on a terminal or in another program's window: control characters,
/// which could move the cursor, retitle the terminal or hide text (escape
/// sequences), and bidirectional overrides, which reorder what is shown, are
/// each replaced by `�`.
public enum DisplayText {
    public static func printable(_ text: some StringProtocol) -> String {
        var output = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            output.append(scalar.isUnsafeToDisplay ? "\u{FFFD}" : scalar)
        }
        return String(output)
    }

    /// ``printable(_:)`` for text of several lines: line feeds and tabs stay.
    public static func printableLines(_ text: some StringProtocol) -> String {
        var output = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            output.append(scalar != "\n" && scalar != "\t" && scalar.isUnsafeToDisplay ? "\u{FFFD}" : scalar)
        }
        return String(output)
    }
}
