import SyncCore

/// Why a sync did not finish; each maps to one exit code.
public enum SyncError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Bad input (exit 2).
    case usage(String)
    /// The server could not be reached, or is not the server it claims to be
    /// (exit 4); the replica is unchanged and fully usable offline.
    case unreachable(String)
    /// The server answered, and kept answering that it is busy or limits
    /// this account for now (429 or 503) until the tries ran out (exit 4,
    /// as a server out of reach); the replica is unchanged.
    case busy(String)
    /// The server refused: bad or revoked token, a change it will not take
    /// (exit 5), with its message.
    case refused(code: WireError.Code, message: String)
    /// This client stopped on its own judgement of what the server said (a
    /// key of another account, acknowledgements that keep naming changes it
    /// did not make): exit 5, as a refusal, but not worded as the server's.
    case stopped(code: WireError.Code, message: String)
    /// The server answered something that is not the protocol (exit 6).
    case badAnswer(String)
    /// Another sync of this replica held it past the wait
    /// (``SyncClient/Options/lockWaitMilliseconds``): exit 4, as a server out
    /// of reach, for the timer to try again; nothing was done.
    case replicaBusy(String)
    /// Whoever started the sync stopped it (a window's Stop), between two
    /// requests: what came before is kept, and the next sync goes on from
    /// there (exit 1).
    case cancelled

    /// The stop after `refusal`: the server's own (`server`, its last
    /// refusal) is ``refused(code:message:)``; one this client made up from
    /// what the server answered is ``stopped(code:message:)``.
    public static func stop(_ refusal: WireError, server: WireError?) -> SyncError {
        refusal == server
            ? .refused(code: refusal.code, message: refusal.message)
            : .stopped(code: refusal.code, message: refusal.message)
    }

    /// Whether it is a stop that waits for the user (exit 5): the server
    /// refused, or this client stopped.
    public var waitsForTheUser: Bool {
        switch self {
        case .refused, .stopped: return true
        case .usage, .unreachable, .busy, .replicaBusy, .badAnswer, .cancelled: return false
        }
    }

    /// The stable code of a refusal or stop (nil for the others).
    public var code: WireError.Code? {
        switch self {
        case .refused(let code, _), .stopped(let code, _): return code
        case .usage, .unreachable, .busy, .replicaBusy, .badAnswer, .cancelled: return nil
        }
    }

    public var description: String {
        switch self {
        case .usage(let message): return message
        case .unreachable(let message): return "cannot reach the server: \(message)"
        case .busy(let message):
            return "the server is busy: \(message); what did not go through waits for the next sync"
        case .refused(let code, let message) where code == .unauthorized:
            return
                "the server refused (\(code)): \(message). This machine's token is not one the server knows (issued again, or the "
                + "server set up anew): ask its operator for a join code and run 'brsync join --replace' (local edits are kept), "
                + "or set a new token with 'brsync remote set URL --token-file FILE' (the token in a file, out of the shell's history)"
        case .refused(let code, let message) where code == .revoked:
            return
                "the server refused (\(code)): \(message). This machine was removed from the account; its rules and edits stay "
                + "here: ask the server's operator to add it again ('brsyncd device token'), then 'brsync remote set URL --token-file FILE'"
        case .refused(let code, let message) where code == .clockSkew:
            return
                "the server refused (\(code)): \(message). Compare this machine's clock with the time ('date'): if it is right, the "
                + "server's clock is off, and its operator should set it; 'brsync status' shows the offset to the server's clock"
        case .refused(let code, let message): return "the server refused (\(code)): \(message)"
        case .stopped(let code, let message): return "sync stopped (\(code)): \(message)"
        case .badAnswer(let message): return "the server's answer is not brsync's protocol: \(message)"
        case .replicaBusy(let message): return message
        case .cancelled: return "stopped before the sync was done; what came before is kept, and the next sync goes on"
        }
    }
}
