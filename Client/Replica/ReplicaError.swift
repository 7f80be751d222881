import Storage

/// Everything that can go wrong with a replica, with what the user should know.
public enum ReplicaError: Error, Sendable, CustomStringConvertible {
    case notInitialized(home: String)
    case notAReplica(path: String, reason: String)
    case newerSchema(path: String, found: Int, supported: Int)
    case locked(path: String, waitedMilliseconds: Int32)
    case unreadable(path: String, reason: String)
    case invalidInput(String)
    case notFound(String)
    case database(DatabaseError)

    public var description: String {
        switch self {
        case .notInitialized(let home):
            return "no replica in \(home): run 'brsync init' first"
        case .notAReplica(let path, let reason):
            return "\(path) is not a brsync replica (\(reason)); it was left untouched"
        case .newerSchema(let path, let found, let supported):
            return "\(path) has schema version \(found), newer than this brsync supports (\(supported)); upgrade brsync. The file was left untouched"
        case .locked(let path, let waited):
            return "\(path) is locked by another process (waited \(Double(waited) / 1000) s); try again when it has finished"
        case .unreadable(let path, let reason):
            return "cannot open \(path): \(reason)"
        case .invalidInput(let message), .notFound(let message):
            return message
        case .database(let error):
            return "database error: \(error)"
        }
    }
}
