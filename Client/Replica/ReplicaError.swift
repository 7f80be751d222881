import Storage

/// Everything that can go wrong with a replica, with what the user should know.
public enum ReplicaError: Error, Sendable, CustomStringConvertible {
    case notInitialized(home: String)
    case notAReplica(path: String, reason: String)
    /// The replica's file is there but cannot be read as one: empty, not
    /// SQLite, or corrupt. What happened, and how to start again.
    case damaged(path: String, reason: String)
    /// The replica's file has 0 bytes and no write-ahead log: its creation
    /// was interrupted before anything was written.
    case empty(path: String)
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
        case .empty(let path):
            return
                "\(path) is empty (0 bytes): its creation was interrupted before anything was written. 'brsync init' makes it again"
        case .damaged(let path, let reason):
            return """
                \(path) is damaged (\(reason)); it was left untouched. To start again from the server's copy: \
                'mv \(path) \(path).damaged', then 'brsync init', connect it to the server again ('brsync join' with a \
                new join code, or 'brsync remote set'), and 'brsync sync' brings every synced rule back. Edits never \
                pushed are only in the damaged file; browsers' launch commands come back with 'brsync browsers detect'
                """
        case .newerSchema(let path, let found, let supported):
            return
                "\(path) has schema version \(found), newer than this brsync supports (\(supported)); upgrade brsync. The file was left untouched"
        case .locked(let path, let waited):
            return
                "\(path) is locked by another process (waited \(Double(waited) / 1000) s); try again when it has finished"
        case .unreadable(let path, let reason):
            return "cannot open \(path): \(reason)"
        case .invalidInput(let message), .notFound(let message):
            return message
        case .database(let error):
            return "database error: \(error)"
        }
    }
}
