import CPostgres
import Glibc

/// A value bound to a statement parameter or read from a row.
public enum PostgresValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case text(String)
    case bytes([UInt8])
    case bool(Bool)
}

/// One row of a result, valid only inside the closure that receives it.
public struct PostgresRow {
    // Points into a result that is cleared when the closure returns: a row
    // must not be kept (the row readers copy what they return).
    let result: OpaquePointer
    let index: Int32

    public var columnCount: Int { Int(PQnfields(result)) }

    public func isNull(_ column: Int) -> Bool { PQgetisnull(result, index, Int32(column)) == 1 }

    public func string(_ column: Int) -> String? {
        guard !isNull(column), let value = PQgetvalue(result, index, Int32(column)) else { return nil }
        let length = Int(PQgetlength(result, index, Int32(column)))
        return value.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }

    public func int64(_ column: Int) -> Int64? { string(column).flatMap { Int64($0) } }

    public func int(_ column: Int) -> Int? { string(column).flatMap { Int($0) } }

    public func bool(_ column: Int) -> Bool? {
        switch string(column) {
        case "t"?: return true
        case "f"?: return false
        default: return nil
        }
    }

    /// A `bytea` column (PostgreSQL's text form: `\x` and hex digits).
    public func bytes(_ column: Int) -> [UInt8]? {
        guard let text = string(column) else { return nil }
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x"), utf8.count % 2 == 0 else {
            return nil
        }
        var output: [UInt8] = []
        output.reserveCapacity((utf8.count - 2) / 2)
        var position = 2
        while position < utf8.count {
            guard let high = Self.hex(utf8[position]), let low = Self.hex(utf8[position + 1]) else { return nil }
            output.append(high << 4 | low)
            position += 2
        }
        return output
    }

    static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// One connection to PostgreSQL through libpq. Statements with parameters
/// are prepared once per connection and reused; values are bound, never
/// spliced into SQL. Not for two threads at once: ``PostgresPool`` lends
/// each connection to one borrower at a time.
public final class PostgresConnection: @unchecked Sendable {
    // @unchecked: used by one thread at a time (the pool's borrower).
    private let handle: OpaquePointer
    private var prepared: [String: String] = [:]
    private var nextStatement = 0

    /// Connects, or throws why not (no server, wrong password, TLS refused…).
    /// - Parameter applicationName: shown in `pg_stat_activity`.
    public init(
        _ configuration: PostgresConfiguration, applicationName: String = "brsyncd", connectTimeoutSeconds: Int = 10
    ) throws {
        var keywords = ["dbname", "application_name", "connect_timeout", "client_encoding"]
        var values = [configuration.url, applicationName, String(connectTimeoutSeconds), "UTF8"]
        if let password = configuration.password {
            keywords.append("password")
            values.append(password)
        }
        let connection: OpaquePointer? = Self.withCStrings(keywords) { keywordPointers in
            Self.withCStrings(values) { valuePointers in
                // expand_dbname = 1: the URL in "dbname" is read as a URL; the
                // keywords after it (the password) are added to it.
                PQconnectdbParams(keywordPointers, valuePointers, 1)
            }
        }
        guard let connection else { throw PostgresError(message: "out of memory while connecting") }
        guard PQstatus(connection) == CONNECTION_OK else {
            // libpq's message may run over lines ("\n\tIs the server running…"): one line.
            let message = String(cString: PQerrorMessage(connection)).trimmingTrailingNewlines()
                .split(whereSeparator: \.isNewline).map { $0.drop { $0 == " " || $0 == "\t" } }.joined(separator: " ")
            PQfinish(connection)
            // libpq gives no SQLSTATE for a failed connection; the message
            // says what the server or the network answered.
            var error = PostgresError(
                sqlState: message.contains("password authentication failed") ? "28P01" : nil,
                message: "cannot connect to \(configuration.url): \(message)")
            error.connectionLost = true
            throw error
        }
        brsync_pq_quiet(connection)
        handle = connection
    }

    deinit { PQfinish(handle) }

    /// Whether the connection still works (the server did not go away).
    public var isUsable: Bool { PQstatus(handle) == CONNECTION_OK }

    /// Whether a transaction is open (or failed and not rolled back yet).
    public var isInTransaction: Bool { PQtransactionStatus(handle) != PQTRANS_IDLE }

    /// The server's major version (150000 for 15.0).
    public var serverVersion: Int { Int(PQserverVersion(handle)) }

    /// Runs SQL with no parameters (several statements may be given).
    public func execute(_ sql: String) throws {
        guard let result = PQexec(handle, sql) else { throw connectionError() }
        defer { PQclear(result) }
        try check(result)
    }

    /// Runs a statement and returns how many rows it changed.
    @discardableResult
    public func run(_ sql: String, _ parameters: [PostgresValue] = []) throws -> Int {
        try withResult(sql, parameters) { result in Int(String(cString: PQcmdTuples(result))) ?? 0 }
    }

    /// Runs a query and maps each row.
    public func query<T>(
        _ sql: String, _ parameters: [PostgresValue] = [], _ transform: (PostgresRow) throws -> T
    ) throws -> [T] {
        try withResult(sql, parameters) { result in
            let count = PQntuples(result)
            var rows: [T] = []
            rows.reserveCapacity(Int(count))
            for index in 0..<count {
                rows.append(try transform(PostgresRow(result: result, index: index)))
            }
            return rows
        }
    }

    /// The first row's mapping, or nil when there is no row.
    public func queryFirst<T>(
        _ sql: String, _ parameters: [PostgresValue] = [], _ transform: (PostgresRow) throws -> T
    ) throws -> T? {
        try withResult(sql, parameters) { result in
            PQntuples(result) > 0 ? try transform(PostgresRow(result: result, index: 0)) : nil
        }
    }

    /// The first column of the first row.
    public func scalar(_ sql: String, _ parameters: [PostgresValue] = []) throws -> PostgresValue {
        try queryFirst(sql, parameters) { row -> PostgresValue in
            if row.isNull(0) { return .null }
            return .text(row.string(0) ?? "")
        } ?? .null
    }

    public enum Isolation: String, Sendable {
        case readCommitted = "READ COMMITTED"
        case repeatableRead = "REPEATABLE READ"
        case serializable = "SERIALIZABLE"
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back
    /// when it throws (the error is rethrown).
    public func transaction<T>(_ isolation: Isolation = .readCommitted, _ body: () throws -> T) throws -> T {
        try execute("BEGIN ISOLATION LEVEL \(isolation.rawValue)")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            if isUsable { try? execute("ROLLBACK") }
            throw error
        }
    }

    /// The payloads of notifications on channels this connection listens
    /// to (`LISTEN`), waiting up to `milliseconds` when none has come yet.
    /// - Throws: when the connection is lost.
    public func notifications(waitingMilliseconds milliseconds: Int32) throws -> [String] {
        var payloads = drainNotifications()
        if !payloads.isEmpty { return payloads }
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        guard descriptor.fd >= 0 else { throw connectionError() }
        if poll(&descriptor, 1, milliseconds) > 0 {
            guard PQconsumeInput(handle) == 1 else { throw connectionError() }
            payloads = drainNotifications()
        }
        if PQstatus(handle) != CONNECTION_OK { throw connectionError() }
        return payloads
    }

    private func drainNotifications() -> [String] {
        var payloads: [String] = []
        while let notification = PQnotifies(handle) {
            payloads.append(String(cString: notification.pointee.extra))
            PQfreemem(notification)
        }
        return payloads
    }

    // MARK: - Internals

    private func withResult<T>(
        _ sql: String, _ parameters: [PostgresValue], _ body: (OpaquePointer) throws -> T
    ) throws -> T {
        let name = try statementName(for: sql, parameterCount: parameters.count)
        let result: OpaquePointer? = try Self.withParameters(parameters) { values, lengths, formats in
            PQexecPrepared(handle, name, Int32(parameters.count), values, lengths, formats, 0)
        }
        guard let result else { throw connectionError() }
        defer { PQclear(result) }
        do {
            try check(result)
        } catch let error as PostgresError where error.sqlState == "26000" {
            // The server forgot the statement (a DISCARD ALL, say): prepare again.
            prepared[sql] = nil
            throw error
        }
        return try body(result)
    }

    private func statementName(for sql: String, parameterCount: Int) throws -> String {
        if let name = prepared[sql] { return name }
        nextStatement += 1
        let name = "brsync_\(nextStatement)"
        guard let result = PQprepare(handle, name, sql, Int32(parameterCount), nil) else { throw connectionError() }
        defer { PQclear(result) }
        try check(result)
        prepared[sql] = name
        return name
    }

    private func check(_ result: OpaquePointer) throws {
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return
        default:
            func field(_ code: Character) -> String? {
                guard let value = PQresultErrorField(result, Int32(code.asciiValue ?? 0)) else { return nil }
                return String(cString: value)
            }
            var error = PostgresError(
                sqlState: field("C"),
                message: field("M") ?? String(cString: PQresultErrorMessage(result)).trimmingTrailingNewlines(),
                detail: field("D"))
            if !isUsable { error.connectionLost = true }
            throw error
        }
    }

    private func connectionError() -> PostgresError {
        PostgresError(message: String(cString: PQerrorMessage(handle)).trimmingTrailingNewlines()).lost()
    }

    /// C strings for `strings`, alive while `body` runs, as a NULL-terminated array.
    private static func withCStrings<T>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> T) -> T {
        let copies = strings.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        var pointers: [UnsafePointer<CChar>?] = copies.map { UnsafePointer($0) }
        pointers.append(nil)
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }

    /// libpq's three parallel arrays for `parameters`: text values as C
    /// strings (format 0), bytes as binary (format 1), NULL as a null pointer.
    private static func withParameters<T>(
        _ parameters: [PostgresValue],
        _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) throws -> T
    ) throws -> T {
        var buffers: [UnsafeMutablePointer<CChar>?] = []
        defer { buffers.forEach { $0?.deallocate() } }
        var lengths: [Int32] = []
        var formats: [Int32] = []
        for (index, parameter) in parameters.enumerated() {
            var bytes: [UInt8]
            var format: Int32 = 0
            switch parameter {
            case .null:
                buffers.append(nil)
                lengths.append(0)
                formats.append(0)
                continue
            case .integer(let value): bytes = Array(String(value).utf8)
            case .bool(let value): bytes = Array((value ? "t" : "f").utf8)
            case .text(let value):
                bytes = Array(value.utf8)
                // A text value is passed as a C string: a NUL would cut it
                // short without a word, and PostgreSQL's text cannot hold one.
                if bytes.contains(0) {
                    throw PostgresError(
                        message: "parameter \(index + 1) holds a NUL character, which PostgreSQL text cannot store")
                }
            case .bytes(let value):
                bytes = value
                format = 1
            }
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            bytes.withUnsafeBufferPointer { source in
                buffer.withMemoryRebound(to: UInt8.self, capacity: bytes.count + 1) { target in
                    if let base = source.baseAddress { target.update(from: base, count: bytes.count) }
                    target[bytes.count] = 0
                }
            }
            buffers.append(buffer)
            lengths.append(Int32(bytes.count))
            formats.append(format)
        }
        let values: [UnsafePointer<CChar>?] = buffers.map { $0.map { UnsafePointer($0) } }
        return try values.withUnsafeBufferPointer { valuePointer in
            try lengths.withUnsafeBufferPointer { lengthPointer in
                try formats.withUnsafeBufferPointer { formatPointer in
                    try body(valuePointer.baseAddress, lengthPointer.baseAddress, formatPointer.baseAddress)
                }
            }
        }
    }
}
