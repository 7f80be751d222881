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
        fields.removeAll { $0.name.lowercased() == name.lowercased() }
        fields.append((name, value))
    }

    /// Every value of the fields named `name`.
    public func values(_ name: String) -> [String] {
        let lower = name.lowercased()
        return fields.filter { $0.name.lowercased() == lower }.map(\.value)
    }

    /// The first value of the field named `name`.
    public subscript(name: String) -> String? { values(name).first }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
    }

    /// Whether a comma-separated field (like `Connection`) holds `token`.
    public func contains(_ name: String, token: String) -> Bool {
        values(name).contains { value in
            value.split(separator: ",").contains { $0.trimmingASCIIWhitespace().lowercased() == token }
        }
    }
}

extension StringProtocol {
    func trimmingASCIIWhitespace() -> Substring {
        let text = Substring(self)
        let start = text.firstIndex { $0 != " " && $0 != "\t" } ?? text.endIndex
        let end = text.lastIndex { $0 != " " && $0 != "\t" }.map { text.index(after: $0) } ?? start
        return start < end ? text[start..<end] : ""
    }
}
