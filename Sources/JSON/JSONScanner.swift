/// Reads one JSON document piece by piece, for decoders that build their own
/// types without the ``JSONValue`` tree (a push or a pull carries thousands
/// of records, and the tree's dictionaries cost more than the reading).
///
/// It reads exactly what ``JSONValue/parse(utf8:)`` reads, with the same
/// nesting limit and the same errors. A decoder built on it looks at the
/// next value (``peek()``) before it takes a shape, and reads what it does
/// not expect as a ``value()``: text that is JSON is read to its end, so an
/// error in the JSON always wins over what the document means.
public struct JSONScanner {
    private var reader: JSONReader
    private var depth = 0

    public typealias ParseError = JSONValue.ParseError

    public init(_ bytes: UnsafeBufferPointer<UInt8>) {
        reader = JSONReader(bytes: bytes)
    }

    /// Reads the next value with `read` and returns, beside what it made, the
    /// value's text as it stood (from its first byte to its last, no white
    /// space around it): a decoder that keeps the text need not write it again.
    public mutating func withText<Result>(
        _ read: (inout JSONScanner) throws(ParseError) -> Result
    ) throws(ParseError) -> (Result, String) {
        reader.skipWhitespace()
        let start = reader.index
        let result = try read(&self)
        let text = String(decoding: UnsafeBufferPointer(rebasing: reader.bytes[start..<reader.index]), as: UTF8.self)
        return (result, text)
    }

    /// Whether the next byte (after white space) is `byte`; consumes it if so.
    private mutating func take(_ byte: UInt8) -> Bool {
        reader.skipWhitespace()
        guard reader.index < reader.bytes.count, reader.bytes[reader.index] == byte else { return false }
        reader.index += 1
        return true
    }

    /// The first byte of the next value (after white space), without reading
    /// it: `{` for an object, `[` for an array, `"` for a string; nil at the end.
    public mutating func peek() -> UInt8? {
        reader.skipWhitespace()
        return reader.index < reader.bytes.count ? reader.bytes[reader.index] : nil
    }

    /// Reads `{`; false when the object is empty (its `}` read too).
    public mutating func beginObject() throws(ParseError) -> Bool {
        try begin(UInt8(ascii: "{"), UInt8(ascii: "}"), "an object")
    }

    /// Reads a member's name and its `:`.
    public mutating func name() throws(ParseError) -> String {
        reader.skipWhitespace()
        guard reader.index < reader.bytes.count, reader.bytes[reader.index] == UInt8(ascii: "\"") else {
            throw reader.fail("expected a string key")
        }
        let name = try reader.readString()
        guard take(UInt8(ascii: ":")) else { throw reader.fail("expected ':'") }
        return name
    }

    /// After a member's value: true when another member follows (`,`), false
    /// at the object's end (`}`).
    public mutating func nextMember() throws(ParseError) -> Bool {
        try next(UInt8(ascii: "}"), "expected ',' or '}'")
    }

    /// Reads `[`; false when the array is empty (its `]` read too).
    public mutating func beginArray() throws(ParseError) -> Bool {
        try begin(UInt8(ascii: "["), UInt8(ascii: "]"), "an array")
    }

    /// After an element: true when another follows (`,`), false at the array's end (`]`).
    public mutating func nextElement() throws(ParseError) -> Bool {
        try next(UInt8(ascii: "]"), "expected ',' or ']'")
    }

    /// Opens a container; false when it is empty (its `closing` read too).
    private mutating func begin(_ opening: UInt8, _ closing: UInt8, _ what: String) throws(ParseError) -> Bool {
        reader.skipWhitespace()
        guard reader.index < reader.bytes.count, reader.bytes[reader.index] == opening else {
            throw reader.fail("expected \(what)")
        }
        guard depth < JSONReader.maximumDepth else {
            throw reader.fail("nested deeper than \(JSONReader.maximumDepth) levels")
        }
        reader.index += 1
        if take(closing) { return false }
        depth += 1
        return true
    }

    /// After an item: true at `,`, false at `closing` (the container ends).
    private mutating func next(_ closing: UInt8, _ expected: String) throws(ParseError) -> Bool {
        if take(UInt8(ascii: ",")) { return true }
        guard take(closing) else { throw reader.fail(expected) }
        depth -= 1
        return false
    }

    /// Any value, as ``JSONValue/parse(utf8:)`` would read it at this depth.
    public mutating func value() throws(ParseError) -> JSONValue {
        reader.skipWhitespace()
        return try reader.readValue(depth: depth)
    }

    /// Passes over any value, keeping nothing (its structure is checked as
    /// ``value()`` checks it; a string's contents are not).
    public mutating func skipValue() throws(ParseError) {
        reader.skipWhitespace()
        try reader.skipValue(depth: depth)
    }

    /// A string value.
    public mutating func string() throws(ParseError) -> String {
        reader.skipWhitespace()
        guard reader.index < reader.bytes.count, reader.bytes[reader.index] == UInt8(ascii: "\"") else {
            throw reader.fail("expected a string")
        }
        return try reader.readString()
    }

    /// A string value's UTF-8 bytes handed to `body`, in place when the
    /// string has no escapes (no copy): for short strings a reader parses
    /// at once (a stamp on every field of every record). Checked as
    /// ``string()`` checks them, so a string that is not UTF-8 is the same error.
    public mutating func withStringBytes<Result>(
        _ body: (UnsafeBufferPointer<UInt8>) -> Result
    ) throws(ParseError) -> Result {
        reader.skipWhitespace()
        guard reader.index < reader.bytes.count, reader.bytes[reader.index] == UInt8(ascii: "\"") else {
            throw reader.fail("expected a string")
        }
        let bytes = reader.bytes
        let start = reader.index + 1
        var end = start
        while end < bytes.count {
            let byte = bytes[end]
            if byte == UInt8(ascii: "\"") {
                reader.index = end + 1
                return body(UnsafeBufferPointer(rebasing: bytes[start..<end]))
            }
            // ASCII needs no further check; an escape, a control character or anything
            // past ASCII is read (and checked) as `string()` reads it.
            if byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { break }
            end += 1
        }
        var text = try reader.readString()
        return text.withUTF8 { body($0) }
    }

    /// The end of the document: nothing but white space is left.
    public mutating func end() throws(ParseError) {
        reader.skipWhitespace()
        guard reader.index == reader.bytes.count, depth == 0 else {
            throw reader.fail("unexpected text after the value")
        }
    }
}
