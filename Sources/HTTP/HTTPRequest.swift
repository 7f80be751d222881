/// A parsed request.
public struct HTTPRequest: Sendable, Equatable {
    public var method: String
    /// The request target as sent (origin form: path and query).
    public var target: String
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    public var minorVersion: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(
        method: String, target: String, minorVersion: Int = 1, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []
    ) {
        self.method = method
        self.target = target
        self.minorVersion = minorVersion
        self.headers = headers
        self.body = body
    }

    /// Whether the connection stays open after the response (RFC 9112 §9.3).
    public var keepAlive: Bool {
        if headers.contains("Connection", token: "close") { return false }
        return minorVersion >= 1 || headers.contains("Connection", token: "keep-alive")
    }

    /// The target's path, without the query.
    public var path: Substring {
        target.utf8.firstIndex(of: UInt8(ascii: "?")).map { target[..<$0] } ?? target[...]
    }

    /// The target's query parameters, percent-decoded (`+` is a space).
    /// - Throws: ``QueryError`` for a name or value whose percent-encoding
    ///   is broken or does not decode to UTF-8, and for a name given twice:
    ///   a request that cannot be read one way only is refused, never read
    ///   with the item left out or with one of its values.
    public func queryItems() throws(QueryError) -> [String: String] {
        guard let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")),
            target.utf8.index(after: mark) < target.utf8.endIndex
        else { return [:] }
        let query = target[target.utf8.index(after: mark)...]
        var items: [String: String] = [:]
        let ascii = query.utf8.allSatisfy { $0 < 0x80 }
        func take(_ pair: Substring) throws(QueryError) {
            // name=value, or a name alone (its value empty). In ASCII a byte
            // is a character: found without grapheme breaking.
            let equals = ascii ? pair.utf8.firstIndex(of: UInt8(ascii: "=")) : pair.firstIndex(of: "=")
            let nameText = equals.map { pair[..<$0] } ?? pair
            let valueText = equals.map { pair[pair.utf8.index(after: $0)...] } ?? ""
            guard let name = percentDecoded(nameText), let value = percentDecoded(valueText) else {
                throw QueryError(
                    message: "the query item '\(nameText.prefix(40))' is not percent-encoded UTF-8")
            }
            guard items.updateValue(value, forKey: name) == nil else {
                throw QueryError(message: "the query item '\(name.prefix(40))' is given twice")
            }
        }
        let bytes = query.utf8
        if ascii { // every target read from the wire
            var start = bytes.startIndex
            while start < bytes.endIndex {
                let end = bytes[start...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.endIndex
                if start < end { try take(query[start..<end]) }
                start = end < bytes.endIndex ? bytes.index(after: end) : end
            }
        } else {
            for pair in query.split(separator: "&") { try take(pair) }
        }
        return items
    }

    /// Why a request's query cannot be read (``queryItems()``).
    public struct QueryError: Error, Sendable {
        public let message: String
    }

    private func percentDecoded(_ text: Substring) -> String? {
        // Most names and values need no decoding: taken as they are.
        if !text.utf8.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") }) { return String(text) }
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    return nil
                }
                bytes.append(high << 4 | low)
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
    default: return nil
    }
}
