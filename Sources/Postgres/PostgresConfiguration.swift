import CPostgres
import Glibc
import SystemServices

/// Where a PostgreSQL store is: a `postgres://` URL as libpq reads it
/// (`postgres://USER@HOST:PORT/DATABASE?sslmode=verify-full&sslrootcert=FILE`),
/// and the password, which is never part of the URL: a URL is a command-line
/// argument, and every user of the machine can read arguments (`ps`).
public struct PostgresConfiguration: Sendable, CustomStringConvertible {
    /// The URL, without a password.
    public let url: String
    /// The password, when one is needed and not in libpq's password file.
    let password: String?

    /// - Throws: ``PostgresError`` when `url` is not a PostgreSQL URL libpq
    ///   can read, or holds a password.
    public init(url: String, password: String? = nil) throws {
        guard url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") else {
            throw PostgresError(message: "'\(url)' is not a PostgreSQL URL (postgres://USER@HOST:PORT/DATABASE)")
        }
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(url, &error) else {
            let reason = error.map { String(cString: $0).trimmingTrailingNewlines() } ?? "it cannot be read"
            if let error { PQfreemem(error) }
            throw PostgresError(message: "the PostgreSQL URL is not valid: \(reason)")
        }
        defer { PQconninfoFree(options) }
        var option = options
        // libpq reads these values only when it connects; a typo should be
        // told when the server starts, not as a connection failure later.
        let sslModes: Set<String> = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"]
        while let keyword = option.pointee.keyword {
            let name = String(cString: keyword)
            let value = option.pointee.val.map { String(cString: $0) } ?? ""
            if name == "password", !value.isEmpty {
                throw PostgresError(
                    message:
                        "the PostgreSQL URL holds a password, which anyone on this machine could read in the process list; "
                        + "give it in BRSYNCD_STORE_PASSWORD_FILE (a file only you can read) or in ~/.pgpass")
            }
            if name == "port", !value.isEmpty,
                !value.split(separator: ",", omittingEmptySubsequences: false).allSatisfy({
                    Int($0).map { (1...65535).contains($0) } ?? false
                })
            {
                throw PostgresError(
                    message: "the PostgreSQL URL is not valid: the port '\(value)' is not a number from 1 to 65535")
            }
            if name == "sslmode", !value.isEmpty, !sslModes.contains(value) {
                throw PostgresError(
                    message:
                        "the PostgreSQL URL is not valid: sslmode '\(value)' is none of \(sslModes.sorted().joined(separator: ", "))"
                )
            }
            option += 1
        }
        self.url = url
        self.password = password
    }

    /// The URL with the password on the first line of `passwordFile`, a
    /// regular file that its owner alone can read (as libpq asks of `~/.pgpass`).
    public init(url: String, passwordFile: String) throws {
        try self.init(url: url, password: try Self.readPasswordFile(passwordFile))
    }

    /// The first line of `path`, which must be a regular file that its owner
    /// alone can read (as libpq asks of `~/.pgpass`).
    static func readPasswordFile(_ path: String) throws -> String {
        let read: [UInt8]?
        do throws(SecretFile.Failure) {
            read = try SecretFile.read(path, what: "the password file")
        } catch {
            throw PostgresError(message: error.message)
        }
        guard let contents = read else {
            throw PostgresError(message: "cannot read the password file at \(path): \(SystemError.text(ENOENT))")
        }
        var bytes = Array(contents.prefix { $0 != 0x0A })
        if bytes.last == 0x0D { bytes.removeLast() }
        guard !bytes.isEmpty, !bytes.contains(0) else {
            throw PostgresError(message: "the password file \(path) holds no password on its first line")
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The URL without anything secret (there is nothing secret in it).
    public var description: String { url }
}

extension String {
    func trimmingTrailingNewlines() -> String {
        var text = self
        while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
        return text
    }
}
