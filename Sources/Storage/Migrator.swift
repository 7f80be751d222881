/// Schema migrations by version, recorded in `PRAGMA user_version`.
public struct Migrator: Sendable {
    public struct Migration: Sendable {
        public let version: Int
        public let sql: String
        /// Work SQL cannot do (values computed by the program), run after
        /// `sql` in the same transaction: a migration is applied whole or
        /// not at all.
        public let fill: (@Sendable (Database) throws -> Void)?
        public init(version: Int, sql: String, fill: (@Sendable (Database) throws -> Void)? = nil) {
            self.version = version
            self.sql = sql
            self.fill = fill
        }
    }

    public let migrations: [Migration]

    public init(_ migrations: [Migration]) {
        self.migrations = migrations.sorted { $0.version < $1.version }
    }

    /// The newest schema version this code knows.
    public var latestVersion: Int { migrations.last?.version ?? 0 }

    public enum Problem: Error, Sendable, Equatable {
        /// The database was written by newer code; it is left untouched.
        case newerSchema(found: Int, supported: Int)
    }

    /// Applies every migration above the database's version, each in its own
    /// transaction together with the version bump; one that another
    /// connection applied meanwhile is skipped.
    /// - Throws: ``Problem/newerSchema(found:supported:)`` before changing
    ///   anything when the database is newer; ``DatabaseError`` from SQLite.
    public func migrate(_ database: Database) throws {
        let current = try database.userVersion
        guard current <= latestVersion else { throw Problem.newerSchema(found: current, supported: latestVersion) }
        for migration in migrations where migration.version > current {
            try database.transaction(.exclusive) {
                // Read again under the lock: another process opening the same
                // old file may have applied it since (a second `CREATE TABLE`
                // or `ADD COLUMN` would fail).
                let found = try database.userVersion
                guard found <= latestVersion else { throw Problem.newerSchema(found: found, supported: latestVersion) }
                guard found < migration.version else { return }
                try database.execute(migration.sql)
                try migration.fill?(database)
                try database.execute("PRAGMA user_version = \(migration.version)")
            }
        }
    }
}
