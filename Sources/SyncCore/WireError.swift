import JSON
import Model

/// An error answer: `{"error": CODE, "message": TEXT}`; codes are stable.
public struct WireError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: String
    public var message: String
    /// With `gap` and `diverged`: the last device sequence the server applied
    /// for this device, and that change's digest ("" when unknown).
    public var acknowledged: Int64?
    public var digest: String?

    public init(code: String, message: String, acknowledged: Int64? = nil, digest: String? = nil) {
        self.code = code
        self.message = message
        self.acknowledged = acknowledged
        self.digest = digest
    }

    public var json: JSONValue {
        var object: [String: JSONValue] = ["error": .string(code), "message": .string(message)]
        if let acknowledged { object["acknowledged"] = .int(acknowledged) }
        if let digest { object["digest"] = .string(digest) }
        return .object(object)
    }

    public var description: String { "\(code): \(message)" }

    public init?(json: JSONValue) {
        guard case .object(let object) = json, let code = object["error"]?.stringValue else { return nil }
        self.init(code: code, message: object["message"]?.stringValue ?? "", acknowledged: object["acknowledged"]?.intValue,
                  digest: object["digest"]?.stringValue)
    }
}
