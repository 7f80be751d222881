import CSQLite

/// A value bound to or read from SQLite.
public enum DatabaseValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    public var intValue: Int? {
        if case .integer(let value) = self { return Int(value) }
        return nil
    }

    public var int64Value: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    public var stringValue: String? {
        if case .text(let value) = self { return value }
        return nil
    }
}

extension DatabaseValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(nilLiteral: ()) { self = .null }
}

extension DatabaseValue {
    public init(_ value: String?) { self = value.map { .text($0) } ?? .null }
    public init(_ value: Int) { self = .integer(Int64(value)) }
    public init(_ value: Int64) { self = .integer(value) }
    public init(_ value: Bool) { self = .integer(value ? 1 : 0) }
}

/// A prepared statement. Owned by its ``Database``'s cache.
public final class Statement {
    let handle: OpaquePointer
    unowned let database: Database
    public let sql: String

    init(database: Database, sql: String) throws(DatabaseError) {
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v3(database.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard status == SQLITE_OK, let statement else {
            throw DatabaseError(connection: database.handle, code: status, sql: sql)
        }
        handle = statement
        self.database = database
        self.sql = sql
    }

    deinit {
        sqlite3_finalize(handle)
    }

    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Binds `values` to the parameters `?1…?n`.
    public func bind(_ values: [DatabaseValue]) throws(DatabaseError) {
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard expected == values.count else {
            throw DatabaseError(
                code: SQLITE_RANGE, message: "\(values.count) arguments for \(expected) parameters", sql: sql)
        }
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let status: Int32
            switch value {
            case .null: status = sqlite3_bind_null(handle, index)
            case .integer(let number): status = sqlite3_bind_int64(handle, index, number)
            case .real(let number): status = sqlite3_bind_double(handle, index, number)
            case .text(let text): status = sqlite3_bind_text(handle, index, text, -1, brsync_sqlite_transient())
            case .blob(let bytes):
                status = bytes.withUnsafeBytes {
                    sqlite3_bind_blob(handle, index, $0.baseAddress, Int32($0.count), brsync_sqlite_transient())
                }
            }
            guard status == SQLITE_OK else { throw DatabaseError(connection: database.handle, code: status, sql: sql) }
        }
    }

    /// Advances to the next row: true when there is one, false when done.
    public func step() throws(DatabaseError) -> Bool {
        let status = sqlite3_step(handle)
        switch status {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = DatabaseError(connection: database.handle, code: status, sql: sql)
            sqlite3_reset(handle)
            throw error
        }
    }

    func column(_ index: Int32) -> DatabaseValue {
        switch sqlite3_column_type(handle, index) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, index))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, index))
        case SQLITE_TEXT:
            guard let text = sqlite3_column_text(handle, index) else { return .text("") }
            return .text(String(cString: text))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(handle, index))
            guard count > 0, let bytes = sqlite3_column_blob(handle, index) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: bytes, count: count)))
        default: return .null
        }
    }
}

/// The current row of a statement, valid until the next step.
public struct Row {
    let statement: Statement

    public subscript(index: Int) -> DatabaseValue { statement.column(Int32(index)) }

    public func string(_ index: Int) -> String? { self[index].stringValue }
    /// A column's text as UTF-8 bytes where SQLite keeps them (no copy, no
    /// check that they are UTF-8: the reader must check), valid only inside
    /// `body`; empty for NULL.
    public func withText<Result>(_ index: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result
    {
        // sqlite3_column_text first: it converts the value, then sqlite3_column_bytes counts the text.
        let text = sqlite3_column_text(statement.handle, Int32(index))
        let count = Int(sqlite3_column_bytes(statement.handle, Int32(index)))
        return try body(UnsafeBufferPointer(start: text, count: text == nil ? 0 : count))
    }
    public func int(_ index: Int) -> Int? { self[index].intValue }
    public func int64(_ index: Int) -> Int64? { self[index].int64Value }
    /// The size in bytes of a text or blob column, without copying it.
    public func byteCount(_ index: Int) -> Int { Int(sqlite3_column_bytes(statement.handle, Int32(index))) }
}
