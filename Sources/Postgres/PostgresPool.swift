import Glibc

/// A small pool of PostgreSQL connections for a server built on threads:
/// a borrower gets an idle connection, or a new one while fewer than `size`
/// are open, or waits (at most `waitSeconds`) for one to come back. A
/// connection that broke (the server restarted, the network dropped) is
/// dropped when it comes back, and the next borrower connects anew; one left
/// inside a transaction is rolled back first.
public final class PostgresPool: @unchecked Sendable {
    // @unchecked: every field below is guarded by `mutex`.
    public let configuration: PostgresConfiguration
    public let size: Int
    private let waitSeconds: Int
    private let applicationName: String
    /// Run on every new connection before its first use (a connection it
    /// throws for is closed and the borrower gets the error).
    private let onConnect: (@Sendable (PostgresConnection) throws -> Void)?
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let returned = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var idle: [PostgresConnection] = []
    private var open = 0
    private var closed = false

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
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(returned, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(returned)
        pthread_mutex_destroy(mutex)
        returned.deallocate()
        mutex.deallocate()
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
        pthread_mutex_lock(mutex)
        closed = true
        open -= idle.count
        idle.removeAll()
        pthread_cond_broadcast(returned)
        pthread_mutex_unlock(mutex)
    }

    /// How many connections are open (idle and borrowed).
    public var openConnections: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return open
    }

    private func borrow() throws -> PostgresConnection {
        pthread_mutex_lock(mutex)
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        deadline.tv_sec += waitSeconds
        while true {
            if closed {
                pthread_mutex_unlock(mutex)
                throw PostgresError(message: "the store is closed")
            }
            if let connection = idle.popLast() {
                pthread_mutex_unlock(mutex)
                return connection
            }
            if open < size {
                open += 1
                pthread_mutex_unlock(mutex)
                do {
                    let connection = try PostgresConnection(configuration, applicationName: applicationName)
                    try onConnect?(connection)
                    return connection
                } catch {
                    pthread_mutex_lock(mutex)
                    open -= 1
                    pthread_cond_signal(returned)
                    pthread_mutex_unlock(mutex)
                    throw error
                }
            }
            if pthread_cond_timedwait(returned, mutex, &deadline) == ETIMEDOUT {
                pthread_mutex_unlock(mutex)
                throw PostgresError(message: "all \(size) connections to PostgreSQL stayed busy for \(waitSeconds) s")
            }
        }
    }

    private func giveBack(_ connection: PostgresConnection) {
        if connection.isUsable && connection.isInTransaction { try? connection.execute("ROLLBACK") }
        let keep = connection.isUsable && !connection.isInTransaction
        pthread_mutex_lock(mutex)
        if keep && !closed {
            idle.append(connection)
        } else {
            open -= 1
        }
        pthread_cond_signal(returned)
        pthread_mutex_unlock(mutex)
    }
}
