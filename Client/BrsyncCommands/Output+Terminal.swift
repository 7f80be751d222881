import Desktop
import JSON
import Model
import SystemServices

/// Every line a command prints for a person goes through here: names,
/// patterns and messages can come from another machine or the server, so
/// control characters (escape sequences) and bidirectional overrides are
/// shown as `�`. JSON output is already safe (``JSONValue`` escapes them).
func print(_ text: String) {
    Swift.print(DisplayText.printableLines(text))
}

/// A progress line on standard error, redrawn in place. Each draw clears the
/// whole line before writing and fits the terminal's width (a line that
/// wrapped could not be redrawn), so a shorter text leaves nothing of a longer
/// one behind; ``clear()`` empties the line for whatever is printed next (a
/// summary, or an error).
public final class ProgressLine {
    private var drawn = false

    public init() {}

    public func draw(_ text: String) {
        let fitted = String(DisplayText.printable(text).prefix(max(1, TerminalPicker.width(2) - 1)))
        writeToStandardError("\r\u{1B}[2K" + fitted)
        drawn = true
    }

    public func clear() {
        guard drawn else { return }
        writeToStandardError("\r\u{1B}[2K")
        drawn = false
    }
}
