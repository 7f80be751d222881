/// The synced collections.
public enum RecordCollection: String, Sendable, CaseIterable {
    case browsers
    case rules
    case settings
}

/// Names of the settings collection's records.
public enum SettingName {
    /// The browser used when no rule decides (a setting, so "exactly one default"
    /// cannot break under a merge).
    public static let defaultBrowser = "defaultBrowser"
}
