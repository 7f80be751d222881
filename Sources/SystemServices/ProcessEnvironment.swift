import Glibc

/// This process's environment variables, read in one place. (`getenv`
/// rather than `ProcessInfo.environment`, which copies the whole
/// environment into a dictionary on every read.)
public enum ProcessEnvironment {
    /// The path of the running program (`/proc/self/exe`), or its first argument when that cannot be read.
    public static func executablePath() -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return CommandLine.arguments[0] }
        return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The program `name` in the folder of `executable` (by default this
    /// program's): brsync's helpers and windows are installed beside it.
    public static func beside(_ executable: String = executablePath(), named name: String) -> String {
        let folder = executable.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(
            separator: "/")
        return (folder.isEmpty ? "." : folder) + "/" + name
    }

    /// One variable; nil when it is unset or empty.
    public static func value(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        let text = String(cString: value)
        return text.isEmpty ? nil : text
    }

    /// A variable handed over by another process (a secret, say): its value
    /// (empty included), removed from this process's environment so no
    /// program started later sees it.
    public static func take(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        let text = String(cString: value)
        unsetenv(name)
        return text
    }

    /// Every variable, for code that reads several or passes them on.
    public static func all() -> [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            pointer += 1
        }
        return result
    }
}
