import JSON

/// `POST /v1/join`, with a join code's enrollment secret as the bearer
/// token: the joining machine's own device token, which the server takes in
/// the secret's place, once (docs/protocol.md). The token is made by the
/// machine, so a retry after a lost answer names the same one and gets the
/// same answer.
public struct JoinRequest: Sendable, Equatable {
    /// A device token starts with this; 43 characters of base64url follow.
    public static let tokenPrefix = "brs_"
    /// A join code's enrollment secret starts with this (it is not a device token).
    public static let secretPrefix = "brj_"

    /// `brs_` and 43 characters of base64url (256 random bits).
    public var token: String

    public init(token: String) {
        self.token = token
    }

    public var body: [UInt8] { Array(JSONValue.object(["token": .string(token)]).jsonText.utf8) }

    private static let needsToken =
        #"the body must be {"token": TOKEN} (a device token the joining machine made: "brs_" and 43 characters of base64url)"#

    public init(reading bytes: UnsafeBufferPointer<UInt8>) throws(Wire.ReadError) {
        let object = try Wire.object(bytes, else: Self.needsToken)
        guard let token = object["token"]?.stringValue, Self.isWellFormed(token) else {
            throw .invalid(Wire.Problem(Self.needsToken))
        }
        self.init(token: token)
    }

    /// Whether `token` has a device token's form: `brs_` and 43 characters of base64url.
    public static func isWellFormed(_ token: String) -> Bool {
        let bytes = Array(token.utf8)
        guard bytes.count == 47, token.hasPrefix(tokenPrefix) else { return false }
        return bytes[4...].allSatisfy {
            ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D
                || $0 == 0x5F
        }
    }
}

/// The answer to ``JoinRequest``: the account and the device joined.
public struct JoinResponse: Sendable, Equatable {
    public var account: String
    public var device: String

    public init(account: String, device: String) {
        self.account = account
        self.device = device
    }

    public var json: JSONValue { .object(["account": .string(account), "device": .string(device)]) }

    public init(json: JSONValue) throws(Wire.Problem) {
        guard case .object(let object) = json, let account = object["account"]?.stringValue,
            let device = object["device"]?.stringValue
        else {
            throw Wire.Problem("the answer to the join request has no 'account' and 'device'")
        }
        self.init(account: account, device: device)
    }
}
