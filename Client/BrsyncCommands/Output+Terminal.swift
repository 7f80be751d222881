import Model

/// Every line a command prints for a person goes through here: names,
/// patterns and messages can come from another machine or the server, so
/// control characters (escape sequences) and bidirectional overrides are
/// shown as `�`. JSON output is already safe (``JSONValue`` escapes them).
func print(_ text: String) {
    Swift.print(DisplayText.printableLines(text))
}
