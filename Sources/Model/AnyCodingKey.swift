import JSON

/// A coding key for any string, used to walk objects with unknown keys.
struct AnyCodingKey: CodingKey, Hashable {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { return nil }
}

extension KeyedDecodingContainer where K == AnyCodingKey {
    /// Every key of the object that is not in `known`, with its value.
    func unknownFields(excluding known: Set<String>) throws -> [String: JSONValue] {
        var extra: [String: JSONValue] = [:]
        for key in allKeys where !known.contains(key.stringValue) {
            extra[key.stringValue] = try decode(JSONValue.self, forKey: key)
        }
        return extra
    }
}

extension KeyedEncodingContainer where K == AnyCodingKey {
    /// Writes `members` in their order.
    mutating func encode(members: [(name: String, value: JSONValue)]) throws {
        for member in members { try encode(member.value, forKey: AnyCodingKey(member.name)) }
    }
}

extension JSONValue {
    /// The object of `members` (a later one of the same name wins).
    static func object(members: [(name: String, value: JSONValue)]) -> JSONValue {
        var object: [String: JSONValue] = [:]
        object.reserveCapacity(members.count)
        for member in members { object[member.name] = member.value }
        return .object(object)
    }
}

/// A synced type written the same way everywhere: its known members in a
/// fixed order, then those newer clients wrote that this version keeps
/// (`extra`, never a known name).
public protocol ExtensibleJSON: JSONRepresentable {
    /// The members this version knows, in the order they are written.
    var knownMembers: [(name: String, value: JSONValue)] { get }
    /// Members this version does not know, kept as they came.
    var extra: [String: JSONValue] { get }
    /// The names ``knownMembers`` may use.
    static var knownKeys: Set<String> { get }
}

extension ExtensibleJSON {
    /// The known members, then those kept from newer clients.
    var jsonMembers: [(name: String, value: JSONValue)] {
        var members = knownMembers
        for (key, value) in extra where !Self.knownKeys.contains(key) { members.append((key, value)) }
        return members
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: AnyCodingKey.self)
        try container.encode(members: jsonMembers)
    }

    public var jsonValue: JSONValue { .object(members: jsonMembers) }
}
