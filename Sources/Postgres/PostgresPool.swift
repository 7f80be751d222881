import SystemServices

/// A small pool of PostgreSQL connections for a server built on threads:
/// a borrower gets an idle connection, or a new one while fewer than `size`
/// are open, or waits (at most `waitSeconds`) for one to come back. A
/// connection that broke (the server restarted, the network dropped) is
/// dropped when it comes back, and the next borrower connects anew; one left
/// inside a transaction is rolled back first.
public final class PostgresPool: @unchecked Sendable {
    // @unchecked: connections are not Sendable; each is used by one borrower
    // at a time, and the idle ones only under `state`'s lock.
    public let configuration: PostgresConfiguration
    public let size: Int
    private let waitSeconds: Int
    private let applicationName: String
    /// Run on every new connection before its first use (a connection it
    /// throws for is closed and the borrower gets the error).
    private let onConnect: (@Sendable (PostgresConnection) throws -> Void)?
    private struct State {
        var idle: [PostgresConnection] = []
        var open = 0
        var closed = false
    }

    /// Woken when a connection comes back, one fails to open, or the pool closes.
    private let state = Locked(State())

    public init(
        _ configuration: PostgresConfiguration, size: Int = 8, waitSeconds: Int = 30,
        applicationName: String = "brsyncd",
        onConnect: (@Sendable (PostgresConnection) throws -> Void)? = nil
    ) {
        self.configuration = configuration
        self.onConnect = onConnect
        self.size = max(1, size)
        self.waitSeconds = waitSeconds
        self.applicationName = applicationName
    }

    /// Runs `body` with a connection of its own.
    /// - Throws: ``PostgresError`` when no connection can be made or none came
    ///   back in time, or what `body` throws.
    public func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let connection = try borrow()
        do {
            let value = try body(connection)
            giveBack(connection)
            return value
        } catch {
            giveBack(connection)
            throw error
        }
    }

    /// Closes the idle connections; borrowed ones close when they come back.
    /// Later borrowers are refused.
    public func close() {
        state.withLock { state in
            state.closed = true
            state.open -= state.idle.count
            state.idle.removeAll()
        }
        state.wakeAll()
    }

    /// How many connections are open (idle and borrowed).
    public var openConnections: Int { state.withLock { $0.open } }

    /// What a borrower gets: an idle connection, the go-ahead to open one, or a refusal.
    private enum Turn {
        case idle(PostgresConnection)
        case open
        case closed
    }

    private func borrow() throws -> PostgresConnection {
        let size = size
        let turn = state.wait(deadlineMillis: Clock.monotonicMillis() + Int64(waitSeconds) * 1000) { state -> Turn? in
            if state.closed { return .closed }
            if let connection = state.idle.popLast() { return .idle(connection) }
            guard state.open < size else { return nil }
            state.open += 1
            return .open
        }
        switch turn {
        case .closed?:
            throw PostgresError(message: "the store is closed")
        case .idle(let connection)?:
            return connection
        case .open?:
            do {
                let connection = try PostgresConnection(configuration, applicationName: applicationName)
                try onConnect?(connection)
                return connection
            } catch {
                state.withLock { $0.open -= 1 }
                state.wakeOne()
                throw error
            }
        case nil:
            throw PostgresError(message: "all \(size) connections to PostgreSQL stayed busy for \(waitSeconds) s")
        }
    }

    private func giveBack(_ connection: PostgresConnection) {
        if connection.isUsable && connection.isInTransaction { try? connection.execute("ROLLBACK") }
        let keep = connection.isUsable && !connection.isInTransaction
        state.withLock { state in
            if keep && !state.closed {
                state.idle.append(connection)
            } else {
                state.open -= 1
            }
        }
        state.wakeOne()
    }
}
