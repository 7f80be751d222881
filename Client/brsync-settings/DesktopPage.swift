import BrsyncCommands
import CGtk
import Desktop
import Glibc
import JSON
import Replica
import SyncCommands
import SystemServices

/// This desktop: whether brsync is the default for web links and HTML files
/// (with a button that makes it so, as `brsync install` does, and one that
/// puts the previous default back), the key held while clicking to be asked
/// (`hold-to-ask`, X11), and asking for the next link (`ask-next`).
final class DesktopPage {
    let root = Widgets.page()
    private let context: SettingsContext
    private let registrationState: Widget
    private let install: Widget
    private let uninstall: Widget
    private let holdKey: Widget
    private let holdNote: Widget
    /// The hold-to-ask choices, by position in the drop-down: off, then each key.
    private let keys: [HeldKeys.Modifier?] = [nil] + HeldKeys.Modifier.allCases
    private var showingKey = false
    private let findings: Widget
    private let checkButton: Widget
    /// Set by the window: shows a page (a finding's fix may be on another).
    var showPage: (String) -> Void = { _ in }
    /// Set by the window: finds the installed browsers (the Browsers page's button).
    var findBrowsers: () -> Void = {}

    init(context: SettingsContext) {
        self.context = context
        registrationState = Widgets.label("", wrap: true)
        install = Widgets.button("Make brsync the _default browser")
        uninstall = Widgets.button("Put the _previous default back")
        let buttons = Widgets.flow()
        Widgets.flowAppend(buttons, install, uninstall)
        holdKey = Widgets.dropDown(
            ["Off"] + HeldKeys.Modifier.allCases.map { "\($0.label)+click asks" }, name: "Key held to be asked")
        holdNote = Widgets.label("", classes: ["dim-label", "caption"], wrap: true)
        let askNext = Widgets.button("Ask for the _next link")
        checkButton = Widgets.button("_Check this machine", key: "what 'brsync doctor' checks")
        gtk_widget_set_halign(checkButton, GTK_ALIGN_START)
        findings = Widgets.box(GTK_ORIENTATION_VERTICAL, spacing: 6)
        brsync_accessible_label(findings, "Findings")
        Widgets.append(
            root, Widgets.heading("Default browser"), registrationState, buttons,
            gtk_separator_new(GTK_ORIENTATION_HORIZONTAL), Widgets.heading("Choosing for one link"),
            Widgets.label(
                "Hold a key while clicking a link (X11) to be asked which browser opens it, whatever the rules say.",
                classes: ["dim-label"], wrap: true), holdKey, holdNote,
            Widgets.label(
                "Or make the next link opened within a minute ask (bind 'brsync ask-next' to a keyboard shortcut "
                    + "to do it without this window).", classes: ["dim-label"], wrap: true), askNext,
            gtk_separator_new(GTK_ORIENTATION_HORIZONTAL), Widgets.heading("When links stop reaching brsync"),
            Widgets.label(
                "Checks the replica, every browser's command, the default-browser registration, that a picker can ask, "
                    + "the server and the live sync; each problem with its fix.", classes: ["dim-label"], wrap: true),
            checkButton, findings)
        Signals.on(checkButton, "clicked") { [unowned self] in check() }
        for widget in [holdKey, askNext] { gtk_widget_set_halign(widget, GTK_ALIGN_START) }
        Signals.on(install, "clicked") { [unowned self] in makeDefault() }
        Signals.on(uninstall, "clicked") { [unowned self] in putPreviousBack() }
        Signals.withObject(holdKey, "notify::selected") { [unowned self] _ in keyChosen() }
        Signals.on(askNext, "clicked") {
            context.attempt {
                try AskNext.request(home: context.home)
                return "The next link opened within a minute asks which browser opens it."
            }
        }
    }

    private var registration: DefaultBrowserRegistration {
        DefaultBrowserRegistration(environment: ProcessEnvironment.all(), brsyncHome: context.home)
    }

    func reload() {
        let mimeApps = registration.mimeApps
        let others = DefaultBrowserRegistration.mimeTypes.filter {
            mimeApps.defaultApplication(for: $0) != DefaultBrowserRegistration.desktopID
        }
        if others.isEmpty {
            Widgets.setText(
                registrationState, "brsync opens web links and HTML files here: each goes where its rules say.")
        } else {
            let now = others.map { type in
                "\(Self.kind(of: type)): \(mimeApps.defaultApplication(for: type).map { Self.appName($0) } ?? "no default")"
            }
            Widgets.setText(
                registrationState,
                "brsync is not the default here for \(now.joined(separator: "; ")). Links opened there skip your rules."
            )
        }
        gtk_widget_set_sensitive(install, others.isEmpty ? 0 : 1)
        gtk_widget_set_sensitive(uninstall, others.count < DefaultBrowserRegistration.mimeTypes.count ? 1 : 0)
        let chosen: HeldKeys.Modifier?
        do {
            chosen = try HoldToAsk.chosen(home: context.home)
        } catch {
            chosen = nil
            context.show(error: "\(error)")
        }
        showingKey = true
        Widgets.select(holdKey, keys.firstIndex(of: chosen) ?? 0)
        showingKey = false
        Widgets.setText(
            holdNote,
            chosen.map {
                "Links clicked while holding \($0.label) ask\(HoldToAsk.sessionNote(ProcessEnvironment.all()))."
            }
                ?? "Off: links ask only when no rule decides.")
    }

    /// Runs doctor's checks on a thread of its own (the server's may wait on
    /// the network), then lists each problem and note with its fix: a button
    /// where the window can do it, the command otherwise.
    private func check(announce: Bool = true) {
        gtk_widget_set_sensitive(checkButton, 0)
        if announce { context.show("Checking this machine…") }
        let (home, environment) = (context.home, ProcessEnvironment.all())
        Signals.inBackground({ Doctor.examine(home: home, environment: environment) }) { [weak self] found in
            self?.show(found, announce: announce)
        }
    }

    private func show(_ found: [Doctor.Finding], announce: Bool) {
        gtk_widget_set_sensitive(checkButton, 1)
        while let child = gtk_widget_get_first_child(findings) { gtk_box_remove(brsync_box(findings), child) }
        let worth = found.filter { $0.state != .ok }
        // After a fix the line at the foot keeps what the fix did.
        if announce {
            context.show(
                worth.contains { $0.state == .problem }
                    ? "\(worth.filter { $0.state == .problem }.count) problem(s) found." : "Nothing wrong found.")
        }
        for finding in worth {
            let row = Widgets.box(GTK_ORIENTATION_VERTICAL, spacing: 4)
            let text = "\(finding.state == .problem ? "Problem" : "Note") — \(finding.check): \(finding.detail)"
            let label = Widgets.label(text, classes: finding.state == .problem ? ["error"] : ["dim-label"], wrap: true)
            gtk_label_set_selectable(brsync_label(label), 1)
            Widgets.append(row, label)
            if let fix = finding.fix {
                if let (title, action) = fixAction(fix) {
                    let button = Widgets.button(
                        title, detail: "\(title.replacingOccurrences(of: "_", with: "")): \(finding.check)")
                    gtk_widget_set_halign(button, GTK_ALIGN_START)
                    Signals.on(button, "clicked", action)
                    Widgets.append(row, button)
                } else {
                    let command = Widgets.label("Fix: \(fix)", classes: ["monospace", "caption"], wrap: true)
                    gtk_label_set_selectable(brsync_label(command), 1)
                    Widgets.append(row, command)
                }
            }
            Widgets.append(findings, row)
        }
    }

    /// The window's own way to do a fix doctor names as a command, when it has one.
    private func fixAction(_ fix: String) -> (String, () -> Void)? {
        // Each fix checks again after it, so the list shows what is still wrong.
        guard let (title, action) = plainFixAction(fix) else { return nil }
        return (
            title,
            { [unowned self] in
                action()
                check(announce: false)
            }
        )
    }

    private func plainFixAction(_ fix: String) -> (String, () -> Void)? {
        if fix.hasPrefix("brsync install") || fix.hasPrefix("brsync --home") && fix.contains(" install") {
            return ("Make brsync the _default browser", { [unowned self] in makeDefault() })
        }
        if fix.contains("brsync browsers detect") {
            return (
                "_Find installed browsers",
                { [unowned self] in
                    showPage("browsers")
                    findBrowsers()
                }
            )
        }
        if fix.hasPrefix("brsync browsers approve") {
            return ("Show the _browser", { [unowned self] in showPage("browsers") })
        }
        if fix.hasPrefix("brsync hold-to-ask off") {
            return (
                "Turn hold-to-ask _off",
                { [unowned self] in
                    context.attempt {
                        try HoldToAsk.choose(nil, home: context.home)
                        return "Holding a key changes nothing now."
                    }
                    context.reload()
                }
            )
        }
        return nil
    }

    /// What `brsync install` does, with its checks: a click must be able to open first.
    private func makeDefault() {
        context.attempt {
            guard try context.replica.browsers().contains(where: \.isUsable) else {
                throw CLIFailure(
                    message: "No browser can open links here yet: find the installed ones on the Browsers page first.")
            }
            let previous = try registration.install(executable: Self.brsync, home: context.home)
            return "brsync is the default browser"
                + (previous.isEmpty
                    ? "."
                    : "; the previous default (\(Set(previous.values.map(Self.appName)).sorted().joined(separator: ", "))) is remembered.")
        }
        context.reload()
    }

    private func putPreviousBack() {
        context.attempt {
            let restored = try registration.uninstall()
            let names = Set(restored.values.filter { !$0.isEmpty }.map(Self.appName)).sorted()
            return names.isEmpty
                ? "brsync is no longer the default browser."
                : "The default browser is \(names.joined(separator: ", ")) again."
        }
        context.reload()
    }

    private func keyChosen() {
        guard !showingKey else { return }
        let index = Widgets.selected(holdKey)
        guard keys.indices.contains(index) else { return }
        context.attempt {
            try HoldToAsk.choose(keys[index], home: context.home)
            return keys[index].map { "\($0.label)+click now asks which browser opens a link." }
                ?? "Holding a key changes nothing now."
        }
        Signals.soon { [weak context] in context?.reload() }
    }

    /// What a MIME type of the registration is, in words.
    static func kind(of type: String) -> String {
        switch type {
        case "x-scheme-handler/http": "web links (http)"
        case "x-scheme-handler/https": "secure web links (https)"
        case "text/html": "HTML files"
        case "application/xhtml+xml": "XHTML files"
        default: type
        }
    }

    /// A desktop entry's id as a name (firefox-esr.desktop: firefox-esr).
    static func appName(_ desktopID: String) -> String {
        DisplayText.printable(desktopID.hasSuffix(".desktop") ? String(desktopID.dropLast(8)) : desktopID)
    }

    /// brsync beside this program (the desktop entry runs it for each click).
    static var brsync: String { ProcessEnvironment.beside(named: "brsync") }
}
