import Postgres

/// Which PostgreSQL database a store is: the cluster's system identifier, its
/// current WAL timeline, and the database's oid. The SQLite store's file
/// identity does the same job. A database restored from a dump (a new oid),
/// a cluster restored from a base backup to a point in time or a standby
/// promoted after a failover (a new timeline; an asynchronous standby may
/// have lost the last commits), or a copy made with `CREATE DATABASE …
/// TEMPLATE` (a new oid) may already have handed out its change numbers with
/// other content: it starts a new epoch, and every client re-syncs fully and
/// relays what it holds. What no identity can tell is a restore into the same
/// database in place (`pg_restore --clean`); then the first client whose
/// change numbers run ahead of the database starts the new epoch.
enum DatabaseIdentity {
    /// The parts this connection can read (a server that hides
    /// `pg_control_system()`, such as a managed service or CockroachDB, gives
    /// fewer), as `name=value` joined by `/`.
    static func current(_ connection: PostgresConnection) -> String {
        var parts: [String] = []
        if let system = try? connection.queryFirst(
            "SELECT system_identifier::text FROM pg_control_system()", [], { $0.string(0) }) ?? nil
        {
            parts.append("system=" + system)
        }
        if let timeline = try? connection.queryFirst(
            "SELECT substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)", [], { $0.string(0) }) ?? nil
        {
            parts.append("timeline=" + timeline)
        }
        if let oid = try? connection.queryFirst(
            "SELECT oid::text FROM pg_database WHERE datname = current_database()", [], { $0.string(0) }) ?? nil
        {
            parts.append("database=" + oid)
        }
        return parts.joined(separator: "/")
    }

    /// Whether two identities differ in a part both have.
    static func differ(_ stored: String, _ current: String) -> Bool {
        func parts(_ text: String) -> [Substring: Substring] {
            var result: [Substring: Substring] = [:]
            for part in text.split(separator: "/") {
                guard let equals = part.firstIndex(of: "=") else { continue }
                result[part[..<equals]] = part[part.index(after: equals)...]
            }
            return result
        }
        let old = parts(stored)
        return parts(current).contains { name, value in old[name].map { $0 != value } ?? false }
    }

    /// Records the identity of the database behind `connection`, starting a
    /// new epoch when it changed.
    /// - Returns: the new epoch, or nil when the database is the one that served last.
    static func check(_ connection: PostgresConnection) throws -> String? {
        let current = current(connection)
        let read = "SELECT value FROM brsync_meta WHERE key = 'identity'"
        let stored = try connection.queryFirst(read, [], { $0.string(0) }) ?? nil
        if stored == current { return nil }
        return try connection.transaction { () -> String? in
            // Every process that notices it races here: one starts the epoch.
            _ = try connection.query("SELECT value FROM brsync_meta WHERE key = 'epoch' FOR UPDATE") { $0.string(0) }
            let stored = try connection.queryFirst(read, [], { $0.string(0) }) ?? nil
            if stored == current { return nil }
            try connection.run(
                "INSERT INTO brsync_meta (key, value) VALUES ('identity', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [.text(current)])
            guard let stored, differ(stored, current) else { return nil }
            return try PostgresTransaction(connection: connection).startNewEpoch()
        }
    }
}
