/// Header fields in the order received; names compare case-insensitively.
public struct HTTPHeaders: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var fields: [(name: String, value: String)] = []

    public init() {}

    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { add(name, value) }
    }

    public mutating func add(_ name: String, _ value: String) {
        fields.append((name, value))
    }

    /// Replaces every field named `name` with one.
    public mutating func set(_ name: String, _ value: String) {
        fields.removeAll { $0.name.equalsIgnoringASCIICase(name) }
        fields.append((name, value))
    }

    /// Removes every field named `name`.
    public mutating func remove(_ name: String) {
        fields.removeAll { $0.name.equalsIgnoringASCIICase(name) }
    }

    /// Every value of the fields named `name`.
    public func values(_ name: String) -> [String] {
        fields.filter { $0.name.equalsIgnoringASCIICase(name) }.map(\.value)
    }

    /// How many fields are named `name`.
    public func count(_ name: String) -> Int {
        var count = 0
        for field in fields where field.name.equalsIgnoringASCIICase(name) { count += 1 }
        return count
    }

    /// The first value of the field named `name`.
    public subscript(name: String) -> String? { fields.first { $0.name.equalsIgnoringASCIICase(name) }?.value }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
    }

    /// Whether a comma-separated field (like `Connection`) holds `token`.
    public func contains(_ name: String, token: String) -> Bool {
        values(name).contains { value in
            value.split(separator: ",").contains { $0.trimmingASCIIWhitespace().equalsIgnoringASCIICase(token) }
        }
    }
}

extension StringProtocol {
    /// Whether the two are equal when ASCII letters are compared without case
    /// (HTTP field names and tokens), without allocating.
    @inlinable
    public func equalsIgnoringASCIICase(_ other: some StringProtocol) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        var mine = utf8.makeIterator()
        var theirs = other.utf8.makeIterator()
        while true {
            switch (mine.next(), theirs.next()) {
            case (nil, nil): return true
            case (let a?, let b?):
                if a != b && (a | 0x20 != b | 0x20 || !((a | 0x20) >= 0x61 && (a | 0x20) <= 0x7A)) { return false }
            default: return false
            }
        }
    }

    /// Lower case for ASCII letters only: HTTP tokens are ASCII, and Unicode
    /// case mapping would take `\u{212A}` (Kelvin sign) for `k`.
    @inlinable
    public func asciiLowercased() -> String {
        String(decoding: utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    func trimmingASCIIWhitespace() -> Substring {
        let text = Substring(self)
        let start = text.firstIndex { $0 != " " && $0 != "\t" } ?? text.endIndex
        let end = text.lastIndex { $0 != " " && $0 != "\t" }.map { text.index(after: $0) } ?? start
        return start < end ? text[start..<end] : ""
    }
}
