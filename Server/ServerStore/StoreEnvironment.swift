import Postgres

extension PostgresConfiguration {
    /// The URL with the password brsyncd's environment gives:
    /// `BRSYNCD_STORE_PASSWORD_FILE` (the first line of a file that only its
    /// owner may read) or `BRSYNCD_STORE_PASSWORD`; with neither, libpq's own
    /// sources (`PGPASSFILE`, `~/.pgpass`, `PGPASSWORD`) still apply.
    public static func fromEnvironment(url: String, environment: [String: String]) throws -> PostgresConfiguration {
        if let path = environment["BRSYNCD_STORE_PASSWORD_FILE"], !path.isEmpty {
            return try PostgresConfiguration(url: url, passwordFile: path)
        }
        if let password = environment["BRSYNCD_STORE_PASSWORD"], !password.isEmpty {
            return try PostgresConfiguration(url: url, password: password)
        }
        return try PostgresConfiguration(url: url)
    }
}
