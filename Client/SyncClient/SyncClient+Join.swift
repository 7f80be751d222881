import Cryptography
import SyncCore

/// Joining with a join code (`brsync join`).
extension SyncClient {
    /// Whether `token` is a join code's enrollment secret, which reads until
    /// it is exchanged (``exchangeJoinSecret(for:)``), rather than a device token.
    public static func isJoinSecret(_ token: String) -> Bool { token.hasPrefix(JoinRequest.secretPrefix) }

    /// A new device token: `brs_` and 256 random bits in base64url.
    public static func makeDeviceToken() -> String { Crypto.token(prefix: JoinRequest.tokenPrefix) }

    /// Exchanges this client's token, a join code's secret, for `token`
    /// (made here): the device's token from now on; the secret stops working.
    /// Retried after a lost answer with the same token, the server answers
    /// the same.
    /// - Returns: the account's identity and the device's name on the server.
    @discardableResult
    public func exchangeJoinSecret(for token: String) throws -> JoinResponse {
        let answer = try send(method: "POST", target: "/v1/join", body: JoinRequest(token: token).body)
        do { return try JoinResponse(json: answer) } catch { throw SyncError.badAnswer(error.message) }
    }
}
