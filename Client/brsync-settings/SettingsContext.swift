import CGtk
import Glibc
import Replica
import SystemServices

/// What every page shares: the replica, the way to tell the person
/// something (a line at the window's foot, read by screen readers), and the
/// reload that follows an edit here or elsewhere.
final class SettingsContext {
    let replica: Replica
    let home: String
    /// Set by the window: reloads every page.
    var reloadPages: () -> Void = {}
    /// Set by the window: shows a message at the foot.
    var showMessage: (_ text: String, _ isError: Bool) -> Void = { _, _ in }
    /// Set by the window: the widget whose frame clock says when a change was painted.
    var window: Widget?
    /// `BRSYNC_SETTINGS_TIMING`: prints how long each search took to reach
    /// the screen, on standard error (the settings benchmark reads it).
    let timing = !(ProcessEnvironment.value("BRSYNC_SETTINGS_TIMING") ?? "").isEmpty
    private var pendingPaint: (what: String, started: Int)?
    private var lastDataVersion: Int64 = -1

    init(replica: Replica, home: String) {
        self.replica = replica
        self.home = home
    }

    func reload() {
        lastDataVersion = (try? replica.dataVersion()) ?? -1
        try? replica.refreshIdentity() // a join or a key change elsewhere gives this machine a new id
        reloadPages()
    }

    /// Reloads when another process (a sync, a command in a terminal) has
    /// changed the replica since the last look.
    func reloadIfChangedElsewhere() {
        guard let version = try? replica.dataVersion(), version != lastDataVersion else { return }
        reload()
    }

    /// Runs `change`, says `done` (or what went wrong: nothing else
    /// changes, what was typed stays), and shows every page again once the
    /// signal that asked for it has returned (a toggle must not rebuild the
    /// row it sits in while its own handler runs).
    func apply(_ done: String, _ change: () throws -> Void) {
        attempt {
            try change()
            return done
        }
        Signals.soon { [weak self] in self?.reload() }
    }

    /// Runs `action` and shows the message it returns, or its error.
    func attempt(_ action: () throws -> String) {
        do { show(try action()) } catch { show(error: "\(error)") }
    }

    func show(error: String) { showMessage(error, true) }
    func show(_ text: String) { showMessage(text, false) }

    /// Records that `what` began at `started` (µs, monotonic); with timing on,
    /// prints the time to the frame that shows it.
    func measured(_ what: String, since started: Int) {
        guard timing else { return }
        let now = g_get_monotonic_time()
        writeToStandardError("\(what): \(String(format: "%.2f", Double(now - started) / 1000)) ms to update\n")
        pendingPaint = (what, started)
        if let window { gtk_widget_queue_draw(window) }
    }

    /// Called after each frame is painted.
    func painted() {
        guard let (what, started) = pendingPaint else { return }
        pendingPaint = nil
        let now = g_get_monotonic_time()
        writeToStandardError("\(what): \(String(format: "%.2f", Double(now - started) / 1000)) ms to paint\n")
    }
}
