import Foundation

/// A fresh directory under the system temporary folder, removed by ``remove()``.
public struct TemporaryDirectory: Sendable {
    public let path: String

    public init(prefix: String = "brsync-test") throws {
        let base = FileManager.default.temporaryDirectory.path
        path = "\(base)/\(prefix)-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    public func file(_ name: String) -> String { "\(path)/\(name)" }

    public func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Writes `text` to `path` as a program its owner may run (mode 755): the
/// stand-ins tests put on PATH (a browser, a menu, notify-send).
public func writeScript(_ path: String, _ text: String) throws {
    try text.write(toFile: path, atomically: true, encoding: .utf8)
    guard chmod(path, 0o755) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
}
