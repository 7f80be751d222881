import JSON

/// An error answer: `{"error": CODE, "message": TEXT}`; codes are stable.
public struct WireError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable error code (docs/protocol.md), the same for the server that
    /// sends it and the client that acts on it. A code this build does not
    /// know is kept as it came.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let unauthorized = Code(rawValue: "unauthorized")
        public static let revoked = Code(rawValue: "revoked")
        public static let badRequest = Code(rawValue: "bad_request")
        public static let notFound = Code(rawValue: "not_found")
        public static let methodNotAllowed = Code(rawValue: "method_not_allowed")
        /// A push that does not continue what the server has of the device.
        public static let gap = Code(rawValue: "gap")
        /// The device's change numbers were reused for other content.
        public static let diverged = Code(rawValue: "diverged")
        public static let clockSkew = Code(rawValue: "clock_skew")
        public static let foreignStamp = Code(rawValue: "foreign_stamp")
        public static let conflict = Code(rawValue: "conflict")
        public static let encryptionRequired = Code(rawValue: "encryption_required")
        public static let notEncrypted = Code(rawValue: "not_encrypted")
        public static let upgradeRequired = Code(rawValue: "upgrade_required")
        public static let keyRotated = Code(rawValue: "key_rotated")
        public static let accountMoved = Code(rawValue: "account_moved")
        public static let otherAccount = Code(rawValue: "other_account")
        /// A write to an encrypted account without a ``WriteSignature``.
        public static let signatureRequired = Code(rawValue: "signature_required")
        /// A signature that does not verify, or a certificate that does not.
        public static let badSignature = Code(rawValue: "bad_signature")
        /// Signed with another key than the one the server keeps for the
        /// account: someone registered another key, or the server lies.
        public static let signingKeyMismatch = Code(rawValue: "signing_key_mismatch")
        /// A push or relay that would take the account past one of its
        /// limits (its records, their bytes): nothing of it was applied.
        public static let quotaExceeded = Code(rawValue: "quota_exceeded")
        /// A key change to a key the account was rotated away from.
        public static let keyRetired = Code(rawValue: "key_retired")
        /// A pull whose cursor is past the account's latest record, from a
        /// credential that may not start a new timeline on its own (any in an
        /// encrypted account: a key holder confirms, signed; a join code's
        /// secret anywhere). Nothing changed.
        public static let rollbackUnconfirmed = Code(rawValue: "rollback_unconfirmed")
        /// A readable account's timeline was started anew moments ago: the
        /// next one waits (`Retry-After`).
        public static let timelineLimited = Code(rawValue: "timeline_limited")
        public static let unavailable = Code(rawValue: "unavailable")
        public static let busy = Code(rawValue: "busy")
        public static let timeout = Code(rawValue: "timeout")
        public static let `internal` = Code(rawValue: "internal")
        /// Said by the client itself, never by a server: the account is
        /// encrypted and this machine has no key.
        public static let noAccountKey = Code(rawValue: "encrypted")
        /// The operator reset the account's encryption and this machine
        /// holds a key (said by the server to a request naming a key, and by
        /// the client when a page says so).
        public static let encryptionReset = Code(rawValue: "encryption_reset")
    }

    public var code: Code
    public var message: String
    /// With `gap` and `diverged`: the last device sequence the server applied
    /// for this device, and that change's digest ("" when unknown).
    public var acknowledged: Int64?
    public var digest: String?
    /// With `key_rotated`: the key the request named is one the account
    /// was rotated away from (not merely another key, as a server restored
    /// from before a rotation this machine made would hold).
    public var retired: Bool

    public init(code: Code, message: String, acknowledged: Int64? = nil, digest: String? = nil, retired: Bool = false) {
        self.code = code
        self.message = message
        self.acknowledged = acknowledged
        self.digest = digest
        self.retired = retired
    }

    public var json: JSONValue {
        var object: [String: JSONValue] = ["error": .string(code.rawValue), "message": .string(message)]
        if let acknowledged { object["acknowledged"] = .int(acknowledged) }
        if let digest { object["digest"] = .string(digest) }
        if retired { object["retired"] = .bool(true) }
        return .object(object)
    }

    public var description: String { "\(code): \(message)" }

    public init?(json: JSONValue) {
        guard case .object(let object) = json, let code = object["error"]?.stringValue else { return nil }
        self.init(
            code: Code(rawValue: code), message: object["message"]?.stringValue ?? "",
            acknowledged: object["acknowledged"]?.intValue,
            digest: object["digest"]?.stringValue, retired: object["retired"] == .bool(true))
    }
}
