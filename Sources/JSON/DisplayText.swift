/// Text from elsewhere (synced names, patterns, server messages) made safe to
/// show on a terminal or in another program's window: control characters,
/// which could move the cursor, retitle the terminal or hide text (escape
/// sequences), and bidirectional overrides, which reorder what is shown, are
/// each replaced by `�`.
public enum DisplayText {
    public static func printable(_ text: some StringProtocol) -> String {
        if isPrintableASCII(text, allowingLines: false) { return String(text) }
        var output = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            output.append(scalar.isUnsafeToDisplay ? "\u{FFFD}" : scalar)
        }
        return String(output)
    }

    /// ``printable(_:)`` for text of several lines: line feeds and tabs stay.
    public static func printableLines(_ text: some StringProtocol) -> String {
        if isPrintableASCII(text, allowingLines: true) { return String(text) }
        var output = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            output.append(scalar != "\n" && scalar != "\t" && scalar.isUnsafeToDisplay ? "\u{FFFD}" : scalar)
        }
        return String(output)
    }

    /// Whether every byte is printable ASCII (a space to '~'), or a line
    /// feed or tab when `allowingLines`: such text is shown as it is, without
    /// looking at it scalar by scalar (most text: a table of 20,000 rules).
    static func isPrintableASCII(_ text: some StringProtocol, allowingLines: Bool) -> Bool {
        var string = String(text)
        return string.withUTF8 { bytes in
            for byte in bytes where byte < 0x20 || byte > 0x7E {
                guard allowingLines, byte == 0x0A || byte == 0x09 else { return false }
            }
            return true
        }
    }
}
