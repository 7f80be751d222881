/// brsync's version, written in this one place: `brsync --version`,
/// `brsyncd --version` and the server's health answer say it, and
/// `scripts/package` names the packages it builds after it.
public enum BrsyncVersion {
    public static let current = "0.1.0"
}
