/// A small, fast JSON reader and writer for ``JSONValue`` (RFC 8259), used where
/// records are read and written in bulk: no reflection, no dynamic casts.
/// https://www.rfc-editor.org/rfc/rfc8259
extension JSONValue {
    /// Why text is not JSON, with the byte offset where reading stopped.
    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public let offset: Int
        public let reason: String
        public var description: String { "invalid JSON at byte \(offset): \(reason)" }
    }

    /// Parses one JSON document (surrounding white space allowed).
    /// Nesting deeper than 64 levels is refused, so no input can exhaust a
    /// thread's stack when the value is later walked (compared, hashed,
    /// written, freed): every walk of a parsed value is bounded by this.
    public static func parse(_ text: some StringProtocol) throws(ParseError) -> JSONValue {
        var string = String(text)
        let result = string.withUTF8 { buffer in
            Result<JSONValue, ParseError> { () throws(ParseError) in try parse(utf8: buffer) }
        }
        return try result.get()
    }

    public static func parse(utf8 buffer: UnsafeBufferPointer<UInt8>) throws(ParseError) -> JSONValue {
        var reader = JSONReader(bytes: buffer)
        reader.skipWhitespace()
        let value = try reader.readValue(depth: 0)
        reader.skipWhitespace()
        guard reader.index == buffer.count else {
            throw ParseError(offset: reader.index, reason: "unexpected text after the value")
        }
        return value
    }

    /// Compact JSON text; object keys sorted by their bytes, so equal values give equal text.
    public var jsonText: String {
        var output: [UInt8] = []
        output.reserveCapacity(64)
        write(into: &output)
        return String(decoding: output, as: UTF8.self)
    }

    public func write(into output: inout [UInt8]) {
        switch self {
        case .null: output += "null".utf8
        case .bool(let flag): output += (flag ? "true" : "false").utf8
        case .int(let number): output += String(number).utf8
        case .double(let number):
            if number.isFinite { output += "\(number)".utf8 } else { output += "null".utf8 }
        case .string(let text): Self.writeString(text, into: &output)
        case .array(let items):
            output.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                item.write(into: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            // By the names' UTF-8 bytes (docs/protocol.md, "Canonical JSON"):
            // `String`'s own order puts a name not in NFC elsewhere.
            for (index, key) in members.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                Self.writeString(key, into: &output)
                output.append(UInt8(ascii: ":"))
                members[key]!.write(into: &output) // key comes from members.keys
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// Writes `text` as a JSON string: quotes, backslashes and control
    /// characters escaped, and also DEL, the C1 controls and the bidirectional
    /// controls (``Swift/Unicode/Scalar/isUnsafeToDisplay``), so JSON printed on a terminal cannot carry
    /// an escape sequence or reorder what is shown; the value is unchanged.
    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Whether `byte` may lead a scalar ``Unicode/Scalar/isUnsafeToDisplay``
    /// takes above U+007E: C2 (C1 controls), D8 (U+061C), E1 (U+180E), E2
    /// (U+200B…U+2069) and EF (U+FEFF).
    private static func mayLead(_ byte: UInt8) -> Bool {
        byte == 0xC2 || byte == 0xD8 || byte == 0xE1 || byte == 0xE2 || byte == 0xEF
    }

    public static func writeString(_ text: String, into output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        // Most strings need no escape at all (keys, ids, base64): copied in one go.
        let copied = text.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            for byte in bytes
            where byte < 0x20 || byte == 0x22 || byte == 0x5C || byte == 0x7F || byte >= 0xC2 && Self.mayLead(byte) {
                return false
            }
            output.append(contentsOf: bytes)
            return true
        }
        if copied == true {
            output.append(UInt8(ascii: "\""))
            return
        }
        let hex = hexDigits
        let utf8 = text.utf8
        // Most strings have none of the escaped scalars above U+007E: one pass of bytes.
        if utf8.contains(where: { $0 == 0x7F || Self.mayLead($0) }) {
            for scalar in text.unicodeScalars {
                if scalar.value >= 0x7F && scalar.isUnsafeToDisplay {
                    let value = Int(scalar.value)
                    output += [
                        UInt8(ascii: "\\"), UInt8(ascii: "u"), hex[value >> 12 & 15], hex[value >> 8 & 15],
                        hex[value >> 4 & 15], hex[value & 15],
                    ]
                } else {
                    writeString(scalar: scalar, hex: hex, into: &output)
                }
            }
            output.append(UInt8(ascii: "\""))
            return
        }
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "\""): output += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): output += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: output += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: output += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: output += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20:
                output += [
                    UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)],
                    hex[Int(byte & 15)],
                ]
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }

    private static func writeString(scalar: Unicode.Scalar, hex: [UInt8], into output: inout [UInt8]) {
        switch scalar {
        case "\"": output += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
        case "\\": output += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
        case "\n": output += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
        case "\r": output += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
        case "\t": output += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
        case _ where scalar.value < 0x20:
            output += [
                UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                hex[Int(scalar.value >> 4)], hex[Int(scalar.value & 15)],
            ]
        default: output += Array(String(scalar).utf8)
        }
    }
}

struct JSONReader {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    static let maximumDepth = 64

    typealias ParseError = JSONValue.ParseError

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    func fail(_ reason: String) -> ParseError { ParseError(offset: index, reason: reason) }

    mutating func readValue(depth: Int) throws(ParseError) -> JSONValue {
        guard depth < Self.maximumDepth else { throw fail("nested deeper than \(Self.maximumDepth) levels") }
        guard index < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try readObject(depth: depth)
        case UInt8(ascii: "["): return try readArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try readString())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try readNumber()
        default: throw fail("unexpected character")
        }
    }

    /// Passes over one value as ``readValue(depth:)`` would read it, keeping
    /// nothing: its structure is checked, a string's bytes are not decoded.
    mutating func skipValue(depth: Int) throws(ParseError) {
        guard depth < Self.maximumDepth else { throw fail("nested deeper than \(Self.maximumDepth) levels") }
        guard index < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            let closing = bytes[index] == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
            let isObject = closing == UInt8(ascii: "}")
            index += 1
            skipWhitespace()
            if index < bytes.count, bytes[index] == closing {
                index += 1
                return
            }
            while true {
                skipWhitespace()
                if isObject {
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                        throw fail("expected a string key")
                    }
                    try skipString()
                    skipWhitespace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                    index += 1
                    skipWhitespace()
                }
                try skipValue(depth: depth + 1)
                skipWhitespace()
                guard index < bytes.count else { throw fail("unexpected end of input") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                if bytes[index] == closing {
                    index += 1
                    return
                }
                throw fail(isObject ? "expected ',' or '}'" : "expected ',' or ']'")
            }
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "t"): try expect("true")
        case UInt8(ascii: "f"): try expect("false")
        case UInt8(ascii: "n"): try expect("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): _ = try readNumber()
        default: throw fail("unexpected character")
        }
    }

    /// Passes over a string: to its closing quote, past escapes; no control character inside.
    mutating func skipString() throws(ParseError) {
        index += 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\""):
                index += 1
                return
            case UInt8(ascii: "\\"): index += 2
            case 0..<0x20: throw fail("a control character in a string")
            default: index += 1
            }
        }
        throw fail("unexpected end of input")
    }

    mutating func expect(_ word: StaticString) throws(ParseError) {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw fail("unexpected end of input") }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw fail("unexpected character")
        }
        index += count
    }

    mutating func readObject(depth: Int) throws(ParseError) -> JSONValue {
        index += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
            let key = try readString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            skipWhitespace()
            members[key] = try readValue(depth: depth + 1)
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
            throw fail("expected ',' or '}'")
        }
    }

    mutating func readArray(depth: Int) throws(ParseError) -> JSONValue {
        index += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            items.append(try readValue(depth: depth + 1))
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
            throw fail("expected ',' or ']'")
        }
    }

    mutating func readString() throws(ParseError) -> String {
        index += 1
        let start = index
        // Fast path: no escapes.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                guard let text = String(validUTF8: slice) else { throw fail("a string is not valid UTF-8") }
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw fail("a control character inside a string") }
            index += 1
        }
        var output = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let text = String(validUTF8: output) else { throw fail("a string is not valid UTF-8") }
                return text
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw fail("unexpected end of input") }
                let escaped = bytes[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "\""): output.append(UInt8(ascii: "\""))
                case UInt8(ascii: "\\"): output.append(UInt8(ascii: "\\"))
                case UInt8(ascii: "/"): output.append(UInt8(ascii: "/"))
                case UInt8(ascii: "b"): output.append(0x08)
                case UInt8(ascii: "f"): output.append(0x0C)
                case UInt8(ascii: "n"): output.append(0x0A)
                case UInt8(ascii: "r"): output.append(0x0D)
                case UInt8(ascii: "t"): output.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try readHex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                            bytes[index + 1] == UInt8(ascii: "u")
                        else {
                            throw fail("a lone UTF-16 surrogate")
                        }
                        index += 2
                        let low = try readHex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw fail("a lone UTF-16 surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(scalar) {
                        throw fail("a lone UTF-16 surrogate")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw fail("an invalid \\u escape") }
                    output += Array(String(Character(unicode)).utf8)
                default:
                    throw fail("an invalid escape")
                }
            default:
                if byte < 0x20 { throw fail("a control character inside a string") }
                output.append(byte)
                index += 1
            }
        }
        throw fail("unterminated string")
    }

    mutating func readHex4() throws(ParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail("unexpected end of input") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw fail("an invalid \\u escape")
            }
            value = value * 16 + digit
            index += 1
        }
        return value
    }

    mutating func readNumber() throws(ParseError) -> JSONValue {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else {
            throw fail("a number needs digits")
        }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        }
        var isInteger = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            let digits = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            guard index > digits else { throw fail("a number needs digits after '.'") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            let digits = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            guard index > digits else { throw fail("a number needs digits in its exponent") }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        if isInteger, let integer = Int64(text) { return .int(integer) }
        // Double("1E616") is infinity, which JSON cannot write back: refuse it.
        guard let number = Double(text), number.isFinite else {
            throw ParseError(offset: start, reason: "a number out of range")
        }
        return .double(number)
    }
}

extension Unicode.Scalar {
    /// Whether showing this scalar on a terminal or in another program's
    /// window could change what is shown: a control character (which can move
    /// the cursor, retitle the terminal or hide text through escape sequences)
    /// or a bidirectional control (which reorders the text around it), or an
    /// invisible character that hides where one name ends (zero width
    /// space, word joiner, byte order mark). JSON
    /// text escapes these, and Model's `DisplayText` replaces them.
    public var isUnsafeToDisplay: Bool {
        switch value {
        case 0..<0x20, 0x7F...0x9F: return true
        case 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069, 0x061C: return true
        // Invisible characters that join or hide nothing a reader needs (zero
        // width joiners and non-joiners stay: scripts and emoji need them).
        case 0x200B, 0x2060...0x2064, 0xFEFF, 0x180E: return true
        // Line and paragraph separators: a line break to some terminals and viewers.
        case 0x2028, 0x2029: return true
        default: return false
        }
    }
}
