/// The synced collections.
public enum RecordCollection: String, Sendable, CaseIterable {
    case browsers
    case rules
    case settings
    /// Devices' ledgers of their own writes (Deploy/SECURITY.md, "A device's
    /// own writes, counted"): encrypted accounts only, written and read by
    /// clients of ``Wire/ledgerProtocol`` and later (the server sends them
    /// to no other), keyed by ``Ledger/Key`` and never listed, exported or
    /// imported.
    case ledger
}

/// Names of the settings collection's records.
public enum SettingName {
    /// The browser used when no rule decides (a setting, so "exactly one default"
    /// cannot break under a merge).
    public static let defaultBrowser = "defaultBrowser"
}
