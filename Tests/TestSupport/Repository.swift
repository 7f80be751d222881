import Foundation

/// Files of this repository that tests read (the README, Deploy/ units,
/// conformance data under Tests/Data).
public enum Repository {
    /// The repository's root folder (this file is Tests/TestSupport/Repository.swift).
    public static let root: String = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// `relative` (a path from the root) as an absolute path.
    public static func file(_ relative: String) -> String { root + "/" + relative }
}
