import Glibc
import Model
import SystemServices

extension NormalizedURL {
    /// A URL given on the command line. An absolute path is a local file (see
    /// ``NormalizedURL``); so is a relative one that names an existing file
    /// (`page.html`, `docs/a.html`), as browsers read their arguments, or one
    /// that starts with `./` or `../` or ends in `.html` (never a domain).
    /// Anything else is read as a URL.
    static func argument(_ text: String) throws(URLProblem) -> NormalizedURL {
        let lower = text.lowercased()
        // not top-level domains
        let looksLikeFile = [".html", ".htm", ".xhtml", ".shtml", ".svg", ".pdf"].contains { lower.hasSuffix($0) }
        let isRelativePath =
            text.hasPrefix("./") || text.hasPrefix("../")
            || (!text.isEmpty && !text.hasPrefix("/") && !text.contains(":")
                && (access(text, F_OK) == 0 || looksLikeFile))
        if isRelativePath, let folder = currentDirectory() {
            return try NormalizedURL(folder + "/" + text)
        }
        return try NormalizedURL(text)
    }

    /// Refuses a local file that does not exist (a browser would show an error
    /// page instead of the file).
    func checkLocalFileExists() throws {
        guard let path = localPath, access(path, F_OK) != 0 else { return }
        throw CLIFailure(message: "no such file: \(path)")
    }
}

/// The working directory, or nil when it cannot be read (it was removed).
func currentDirectory() -> String? {
    var buffer = [CChar](repeating: 0, count: 4096)
    guard getcwd(&buffer, buffer.count) != nil else { return nil }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
