/// A failure from PostgreSQL or from libpq, with the SQLSTATE when the server
/// sent one (https://www.postgresql.org/docs/current/errcodes-appendix.html).
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    /// The five-character SQLSTATE, or nil for a failure on this side (no
    /// connection, a value PostgreSQL cannot hold, a bad configuration).
    public let sqlState: String?
    public let message: String
    public let detail: String?

    public init(sqlState: String? = nil, message: String, detail: String? = nil) {
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
    }

    public var description: String {
        var text = "PostgreSQL: \(message)"
        if let detail, !detail.isEmpty { text += " (\(detail))" }
        if let sqlState { text += " [SQLSTATE \(sqlState)]" }
        return text
    }

    /// 23505: a UNIQUE or PRIMARY KEY constraint refused the row.
    public var isUniqueViolation: Bool { sqlState == "23505" }
    /// 40001 / 40P01: the transaction lost a race and may simply be retried.
    public var isRetryable: Bool { sqlState == "40001" || sqlState == "40P01" }
    /// Class 08 (connection exception), 57P01–57P03 (the server is shutting
    /// down or starting), or no SQLSTATE at all on a broken connection.
    public var isConnectionFailure: Bool {
        guard let sqlState else { return connectionLost }
        return sqlState.hasPrefix("08") || sqlState == "57P01" || sqlState == "57P02" || sqlState == "57P03"
    }
    /// 28P01 / 28000: the server refused the user or password.
    public var isAuthenticationFailure: Bool { sqlState == "28P01" || sqlState == "28000" }

    /// Set by the connection when the failure left it unusable.
    var connectionLost = false

    func lost() -> PostgresError {
        var copy = self
        copy.connectionLost = true
        return copy
    }
}
