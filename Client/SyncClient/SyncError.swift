import SyncCore

/// Why a sync did not finish; each maps to one exit code.
public enum SyncError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Bad input (exit 2).
    case usage(String)
    /// The server could not be reached, or is not the server it claims to be
    /// (exit 4); the replica is unchanged and fully usable offline.
    case unreachable(String)
    /// The server refused: bad or revoked token, a change it will not take
    /// (exit 5), with its message.
    case refused(code: WireError.Code, message: String)
    /// The server answered something that is not the protocol (exit 6).
    case badAnswer(String)

    public var description: String {
        switch self {
        case .usage(let message): return message
        case .unreachable(let message): return "cannot reach the server: \(message)"
        case .refused(let code, let message): return "the server refused (\(code)): \(message)"
        case .badAnswer(let message): return "the server's answer is not brsync's protocol: \(message)"
        }
    }
}
