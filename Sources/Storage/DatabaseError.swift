import CSQLite

/// An SQLite failure with its codes, message and the statement that failed.
public struct DatabaseError: Error, Sendable, CustomStringConvertible {
    /// The primary result code (`SQLITE_BUSY`, …).
    public let code: Int32
    /// The extended result code (`SQLITE_CONSTRAINT_UNIQUE`, …).
    public let extendedCode: Int32
    public let message: String
    public let sql: String?

    public var description: String {
        var text = "SQLite error \(extendedCode) (\(String(cString: sqlite3_errstr(extendedCode)))): \(message)"
        if let sql { text += " [\(sql)]" }
        return text
    }

    public var isBusy: Bool { code == SQLITE_BUSY || code == SQLITE_LOCKED }
    public var isNotADatabase: Bool { code == SQLITE_NOTADB }
    public var isCorrupt: Bool { code == SQLITE_CORRUPT }
    public var isReadOnly: Bool { code == SQLITE_READONLY }
    public var isCantOpen: Bool { code == SQLITE_CANTOPEN }

    init(connection: OpaquePointer?, code: Int32, sql: String? = nil) {
        self.code = code & 0xFF
        extendedCode = connection.map { sqlite3_extended_errcode($0) } ?? code
        message = connection.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
        self.sql = sql
    }

    public init(code: Int32, message: String, sql: String? = nil) {
        self.code = code & 0xFF
        extendedCode = code
        self.message = message
        self.sql = sql
    }
}
