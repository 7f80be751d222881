import Glibc
import SystemServices

/// A network failure, with what the user or operator should know.
public enum NetError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A system call failed: its name and errno.
    case system(String, Int32)
    /// The deadline passed.
    case timeout(String)
    /// The peer closed the connection.
    case closed
    /// An address that cannot be used.
    case badAddress(String)
    /// OpenSSL refused: its error queue, in words.
    case tls(String)
    /// The wait was ended from outside (the `wakeup` descriptor became readable).
    case interrupted

    public var description: String {
        switch self {
        case .system(let call, let code): return "\(call): \(SystemError.text(code))"
        case .timeout(let what): return "timed out \(what)"
        case .closed: return "the connection was closed"
        case .badAddress(let message): return message
        case .tls(let message): return "TLS: \(message)"
        case .interrupted: return "interrupted"
        }
    }

    public var errnoCode: Int32? {
        if case .system(_, let code) = self { return code }
        return nil
    }

    static func lastSystem(_ call: String) -> NetError { .system(call, errno) }
}

extension String {
    /// The text of a C buffer up to its first NUL.
    init(nullTerminated buffer: [CChar]) {
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        self.init(decoding: bytes, as: UTF8.self)
    }
}
