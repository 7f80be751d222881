import Model

/// The browser that was the default before `brsync install`: where a click
/// goes when brsync cannot serve it (no replica, no usable browser, no picker).
extension DefaultBrowserRegistration {
    /// The MIME type whose default handles `scheme` (`file` is an HTML file).
    public static func mimeType(forScheme scheme: String) -> String {
        scheme == "file" ? "text/html" : "x-scheme-handler/\(scheme)"
    }

    /// The desktop ID that was the default for `mimeType` before `brsync
    /// install`, or nil (none, or brsync itself).
    public func previousDefault(for mimeType: String) -> String? {
        for line in (readState() ?? "").split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == mimeType else { continue }
            let id = String(parts[1])
            return id.isEmpty || id == Self.desktopID ? nil : id
        }
        return nil
    }

    /// The previous default's desktop entry and launch command for `scheme`,
    /// looked up in the application folders; nil when there is none.
    public func previousBrowser(
        forScheme scheme: String, environment: [String: String]
    ) -> (entry: DesktopEntry, exec: ExecCommand)? {
        guard
            let id = previousDefault(for: Self.mimeType(forScheme: scheme))
                ?? previousDefault(for: "x-scheme-handler/https")
        else {
            return nil
        }
        // A desktop ID names `a-b.desktop` or, in a subfolder, `a/b.desktop`.
        var names = [id]
        if let dash = id.firstIndex(of: "-") { names.append(id[..<dash] + "/" + id[id.index(after: dash)...]) }
        for folder in BrowserDetector.standardDirectories(environment: environment) {
            for name in names {
                let path = "\(folder)/\(name)"
                guard let text = BrowserDetector.read(path),
                    let entry = try? DesktopEntry(text: text, id: id, path: path),
                    let line = entry.string("Exec"), let exec = try? ExecCommand(line)
                else { continue }
                return (entry, exec)
            }
        }
        return nil
    }
}
