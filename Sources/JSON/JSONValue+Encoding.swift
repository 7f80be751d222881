/// Encoding a value with a `Codable` form (a rule, a browser, an export)
/// straight into a ``JSONValue``: the same tree a JSON encoder's text would
/// parse back to, without writing and reading the text in between.
extension JSONValue {
    /// The value `encodable` encodes to. Optionals left out by
    /// `encodeIfPresent` are absent, as in any JSON encoder; an unsigned
    /// integer past `Int64` or a non-finite number is refused (JSON has none).
    public init(encoding encodable: some Encodable) throws {
        let root = EncodingNode()
        try encodable.encode(to: ValueEncoder(node: root, codingPath: []))
        self = root.value
    }
}

/// A value whose JSON form is a ``JSONValue`` it makes itself (a rule, a
/// browser): ``JSONValue/init(encoding:)`` takes that value as it is, without
/// a container a member (20,000 rules through containers cost more than
/// reading them from the database). Its `encode(to:)` must write the same
/// members, as other encoders use that.
public protocol JSONRepresentable: Encodable {
    var jsonValue: JSONValue { get }
}

/// A value being built: filled by exactly one container.
private final class EncodingNode {
    enum Content {
        case empty
        case value(JSONValue)
        case object([String: EncodingNode])
        case array([EncodingNode])
    }

    var content: Content = .empty

    var value: JSONValue {
        switch content {
        case .empty: return .object([:])
        case .value(let value): return value
        case .object(let members): return .object(members.mapValues(\.value))
        case .array(let items): return .array(items.map(\.value))
        }
    }

    func member(_ key: String) -> EncodingNode {
        var members: [String: EncodingNode] = [:]
        if case .object(let existing) = content {
            if let node = existing[key] { return node }
            members = existing
        }
        // Let go of the stored copy first, so the dictionary grows in place
        // (no copy of every member per new member).
        content = .empty
        let node = EncodingNode()
        members[key] = node
        content = .object(members)
        return node
    }

    func append() -> EncodingNode {
        var items: [EncodingNode] = []
        if case .array(let existing) = content { items = existing }
        // As in `member`: the array stays uniquely held while it grows.
        content = .empty
        let node = EncodingNode()
        items.append(node)
        content = .array(items)
        return node
    }

    var count: Int {
        if case .array(let items) = content { return items.count }
        return 0
    }
}

private struct IndexKey: CodingKey {
    let intValue: Int?
    let stringValue: String
    init(intValue: Int) { self.intValue = intValue; stringValue = String(intValue) }
    init?(stringValue: String) { return nil }
}

private struct ValueEncoder: Encoder {
    let node: EncodingNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .empty = node.content { node.content = .object([:]) }
        return KeyedEncodingContainer(KeyedContainer<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .empty = node.content { node.content = .array([]) }
        return UnkeyedContainer(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleContainer(node: node, codingPath: codingPath)
    }
}

/// What a primitive is as a JSON value, or the error for one JSON cannot hold.
private func primitive(_ value: some Encodable, at path: [any CodingKey]) throws -> JSONValue? {
    func refuse(_ what: String) -> EncodingError {
        EncodingError.invalidValue(value, EncodingError.Context(codingPath: path, debugDescription: what))
    }
    if let value = value as? any JSONRepresentable { return value.jsonValue }
    switch value {
    case let value as JSONValue: return value
    case let value as String: return .string(value)
    case let value as Bool: return .bool(value)
    case let value as Int: return .int(Int64(value))
    case let value as Int8: return .int(Int64(value))
    case let value as Int16: return .int(Int64(value))
    case let value as Int32: return .int(Int64(value))
    case let value as Int64: return .int(value)
    case let value as UInt:
        guard let number = Int64(exactly: value) else { throw refuse("\(value) is past what JSON numbers hold here") };
        return .int(number)
    case let value as UInt8: return .int(Int64(value))
    case let value as UInt16: return .int(Int64(value))
    case let value as UInt32: return .int(Int64(value))
    case let value as UInt64:
        guard let number = Int64(exactly: value) else { throw refuse("\(value) is past what JSON numbers hold here") };
        return .int(number)
    case let value as Double: guard value.isFinite else { throw refuse("JSON has no \(value)") }; return .double(value)
    case let value as Float:
        guard value.isFinite else { throw refuse("JSON has no \(value)") }; return .double(Double(value))
    default: return nil
    }
}

private func encodeValue(_ value: some Encodable, into node: EncodingNode, at path: [any CodingKey]) throws {
    if let simple = try primitive(value, at: path) {
        node.content = .value(simple)
    } else {
        try value.encode(to: ValueEncoder(node: node, codingPath: path))
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: EncodingNode
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws { node.member(key.stringValue).content = .value(.null) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try encodeValue(value, into: node.member(key.stringValue), at: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        ValueEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        ValueEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        ValueEncoder(node: node.member("super"), codingPath: codingPath)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        ValueEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key])
    }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let node: EncodingNode
    let codingPath: [any CodingKey]
    var count: Int { node.count }

    private var nextPath: [any CodingKey] { codingPath + [IndexKey(intValue: node.count)] }

    mutating func encodeNil() throws { node.append().content = .value(.null) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let path = nextPath
        try encodeValue(value, into: node.append(), at: path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<NestedKey> {
        let path = nextPath
        return ValueEncoder(node: node.append(), codingPath: path).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = nextPath
        return ValueEncoder(node: node.append(), codingPath: path).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        let path = nextPath
        return ValueEncoder(node: node.append(), codingPath: path)
    }
}

private struct SingleContainer: SingleValueEncodingContainer {
    let node: EncodingNode
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { node.content = .value(.null) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try encodeValue(value, into: node, at: codingPath)
    }
}
