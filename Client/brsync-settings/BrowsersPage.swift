import BrsyncCommands
import CGtk
import Desktop
import JSON
import Model
import Replica
import SystemServices

/// Browsers: those in the replica (synced) with how each starts on this
/// machine (this machine's own), each enabled or not, the default, hidden
/// from the picker or not, in the picker's order; profiles another machine
/// made wait for an approval that shows exactly what would run. Finding the
/// browsers installed here is one button.
final class BrowsersPage {
    let root = Widgets.page()
    private let context: SettingsContext
    private let list: Widget
    private let summary: Widget

    init(context: SettingsContext) {
        self.context = context
        summary = Widgets.label("", classes: ["dim-label"], wrap: true)
        let detectButton = Widgets.button("_Find installed browsers", key: "Ctrl+D")
        // One above the other: the page fits a window 360 px wide.
        let top = Widgets.box(GTK_ORIENTATION_VERTICAL, spacing: 6)
        gtk_widget_set_halign(detectButton, GTK_ALIGN_START)
        Widgets.append(top, summary, detectButton)
        list = gtk_list_box_new()!
        gtk_list_box_set_selection_mode(brsync_list_box(list), GTK_SELECTION_NONE)
        gtk_widget_add_css_class(list, "boxed-list")
        brsync_accessible_label(list, "Browsers")
        Widgets.append(root, top, Widgets.scrolled(list, name: "Browsers list"))
        Signals.on(detectButton, "clicked") { [unowned self] in detect() }
    }

    func reload() {
        while let child = gtk_widget_get_first_child(list) { gtk_list_box_remove(brsync_list_box(list), child) }
        let browsers: [LocalBrowser]
        do {
            browsers = try context.replica.browsers()
        } catch {
            context.show(error: "Could not read the browsers: \(error)")
            return
        }
        // In the picker's order: moving one moves it there.
        let sorted = browsers.sorted { Browser.inPickerOrder($0.browser, $1.browser) }
        let usable = browsers.filter { BrowsersCommand.List.state(of: $0) == "usable" }.count
        Widgets.setText(
            summary,
            browsers.isEmpty
                ? "No browsers yet: find those installed here."
                : "\(browsers.count) browsers, \(usable) can open links here. Names, profiles and order sync; how each starts is this machine's own."
        )
        for (position, browser) in sorted.enumerated() {
            let row = row(browser, position: position, count: sorted.count)
            gtk_list_box_append(brsync_list_box(list), row)
            // The list's own row around it takes the focus: it says which browser it is.
            if let holder = gtk_widget_get_parent(row) {
                brsync_accessible_label(
                    holder, DisplayText.printable("\(browser.browser.name) (\(browser.browser.id))"))
            }
        }
    }

    private func row(_ local: LocalBrowser, position: Int, count: Int) -> Widget {
        let browser = local.browser
        let id = browser.id
        let shown = DisplayText.printable("\(browser.name) (\(id))")
        let row = Widgets.box(GTK_ORIENTATION_VERTICAL, spacing: 4, margin: 10)
        let name = Widgets.label(shown + (local.isDefault ? " — default" : ""), classes: ["heading"])
        gtk_label_set_ellipsize(brsync_label(name), PANGO_ELLIPSIZE_END)
        let launch = Widgets.label(
            Self.launchText(local), classes: local.profileHeld == nil ? ["dim-label", "caption"] : ["warning"],
            wrap: true)
        Widgets.append(row, name, launch)
        // This machine's own command (never synced), for a browser that is not a profile.
        let saveButton = browser.profile == nil ? commandEditor(local, shown: shown, in: row) : nil
        let controls = Widgets.flow()
        if let saveButton { Widgets.flowAppend(controls, saveButton) }
        let (enabled, hidden) = toggles(local, shown: shown)
        Widgets.flowAppend(controls, enabled, hidden)
        // A disabled browser opens nothing: it cannot be the default.
        if !local.isDefault && browser.enabled {
            Widgets.flowAppend(
                controls,
                Widgets.button("Make _default", detail: "Make \(shown) the default") { [unowned self] in
                    context.apply("\(shown) is the default browser") {
                        _ = try context.replica.setDefaultBrowser(named: id)
                    }
                })
        }
        if position > 0 {
            Widgets.flowAppend(
                controls, Widgets.button("_Up", detail: "Move \(shown) up") { [unowned self] in move(id, by: -1) })
        }
        if position < count - 1 {
            Widgets.flowAppend(
                controls, Widgets.button("Do_wn", detail: "Move \(shown) down") { [unowned self] in move(id, by: 1) })
        }
        if local.awaitsApproval {
            Widgets.flowAppend(
                controls,
                Widgets.button("_Approve…", detail: "Approve \(shown)…") { [unowned self] in askApproval(local) })
        }
        if browser.profile == nil {
            Widgets.flowAppend(
                controls,
                Widgets.button("New _profile…", detail: "Make a profile of \(shown)…") { [unowned self] in
                    makeProfile(of: id, shown: shown)
                })
        }
        Widgets.flowAppend(
            controls,
            Widgets.button("Re_move", detail: "Remove \(shown)") { [unowned self] in remove(id, shown: shown) })
        Widgets.append(row, controls)
        brsync_accessible_label(row, "\(shown)\(local.isDefault ? ", the default" : ""). \(Self.launchText(local))")
        return row
    }

    /// The field for this machine's launch command, appended to `row`, and
    /// its Save button (for the row's controls).
    private func commandEditor(_ local: LocalBrowser, shown: String, in row: Widget) -> Widget {
        let id = local.browser.id
        let command = Widgets.entry(name: "Launch command for \(shown) here", placeholder: "firefox %u")
        Widgets.setText(ofEntry: command, local.exec ?? "")
        gtk_widget_set_hexpand(command, 1)
        let save = Widgets.button("_Save command", detail: "Save the launch command for \(shown)")
        Widgets.append(
            row,
            Widgets.label(
                "Launch command here (this machine's own, never synced):", classes: ["caption"], wrap: true),
            command)
        let saveCommand = { [unowned self] in
            let text = WindowPicker.trimmed(Widgets.text(of: command))
            guard !text.isEmpty else {
                context.show(error: "Type the command that starts \(shown) here (%u is the link).")
                return
            }
            do {
                let added = try BrowsersCommand.Add.add(to: context.replica, id: id, exec: text)
                context.show(([added.summary] + added.warnings).joined(separator: ". "))
                Signals.soon { [weak context] in context?.reload() }
            } catch {
                // What was typed stays in the field; the option's name means nothing here.
                context.show(error: "\(error)".replacingOccurrences(of: "--exec: ", with: "That command: "))
            }
        }
        Signals.on(save, "clicked", saveCommand)
        Signals.on(command, "activate", saveCommand)
        return save
    }

    /// "Enabled" and "Hidden from the picker", each saved as it is toggled.
    private func toggles(_ local: LocalBrowser, shown: String) -> (enabled: Widget, hidden: Widget) {
        let browser = local.browser
        let id = browser.id
        let enabled = Widgets.check("_Enabled", name: "\(shown) enabled")
        Widgets.setActive(enabled, browser.enabled)
        Signals.on(enabled, "toggled") { [unowned self] in
            let disablingDefault = local.isDefault && !Widgets.isActive(enabled)
            context.apply(
                "\(shown) \(Widgets.isActive(enabled) ? "enabled" : "disabled")"
                    + (disablingDefault
                        ? ". It is the default browser: links no rule decides now ask which browser opens them "
                            + "(make another the default to open them at once)" : "")
            ) {
                _ = try context.replica.setBrowserEnabled(named: id, Widgets.isActive(enabled))
            }
        }
        let hidden = Widgets.check("_Hidden from the picker", name: "\(shown) hidden from the picker")
        Widgets.setActive(hidden, browser.isHiddenInPicker)
        Signals.on(hidden, "toggled") { [unowned self] in
            context.apply("\(shown) \(Widgets.isActive(hidden) ? "hidden from" : "shown in") the picker") {
                _ = try context.replica.setHiddenInPicker(named: id, Widgets.isActive(hidden))
            }
        }
        return (enabled, hidden)
    }

    /// Whether the browser can open links here, and how it starts (the words of `brsync browsers list`).
    static func launchText(_ local: LocalBrowser) -> String {
        if let held = local.profileHeld {
            return DisplayText.printable(
                local.awaitsApproval
                    ? "Waits for your approval before it opens links here: \(held)." : "Cannot run here: \(held).")
        }
        let state = BrowsersCommand.List.state(of: local)
        let launch = BrowsersCommand.List.launch(of: local)
        return DisplayText.printable(
            (state == "usable" ? "Opens links here" : "Cannot open links here: \(state)")
                + (launch == "-" ? "." : ". Starts with: \(launch)"))
    }

    private func move(_ id: String, by offset: Int) {
        context.apply("Picker order changed") {
            var order = try context.replica.browsers().sorted { Browser.inPickerOrder($0.browser, $1.browser) }
                .map(\.browser.id)
            guard let index = order.firstIndex(of: id) else { return }
            let target = max(0, min(order.count - 1, index + offset))
            order.swapAt(index, target)
            _ = try context.replica.setPickerOrder(order)
        }
    }

    private func remove(_ id: String, shown: String) {
        Dialogs.confirm(
            parent: context.window, title: "Remove \(shown)?",
            text: "Remove \(shown) from every machine? Its rules are kept but decide nothing until it is back "
                + "(Find installed browsers, or on another machine).",
            accept: "_Remove", accessibleName: "Remove \(shown) from every machine"
        ) { [unowned self] in removeNow(id, shown: shown) }
    }

    private func removeNow(_ id: String, shown: String) {
        context.apply("Removed \(shown): its rules decide nothing until it is back (Find installed browsers)") {
            _ = try context.replica.removeBrowser(named: id)
        }
    }

    func detectNow() { detect() }

    private func detect() {
        context.attempt {
            let detector = Detect.detector(environment: ProcessEnvironment.all())
            let found = try Detect.recordInstalled(in: context.replica, detector: detector, replacing: false).found
            return found.isEmpty ? "No installed browsers found." : "Found \(found.count) installed browser(s)."
        }
        context.reload()
    }

    /// Makes a profile of a browser: its launch command with arguments added
    /// (a profile name, a private window; others run here and wait for each
    /// other machine's approval), as `browsers add ID --from BASE --args`.
    private func makeProfile(of base: String, shown: String) {
        Dialogs.form(
            parent: context.window, title: "New profile of \(shown)",
            text: "A profile is another browser for rules: \(shown)'s command with arguments added, such as -P work "
                + "(Firefox) or --profile-directory=Work (Chrome). It syncs; each machine runs its own \(shown).",
            fields: [("Profile id", "work"), ("Arguments", "-P work")], accept: "_Make profile"
        ) { [unowned self] values in
            let (id, args) = (WindowPicker.trimmed(values[0]), WindowPicker.trimmed(values[1]))
            guard !id.isEmpty, !args.isEmpty else {
                throw RuleProblem("Give the profile an id and its arguments.")
            }
            let added = try BrowsersCommand.Add.add(to: context.replica, id: id, from: base, args: args)
            context.show(([added.summary] + added.warnings).joined(separator: ". "))
            Signals.soon { [weak context] in context?.reload() }
        }
    }

    /// Asks before approving, showing exactly what would run.
    func askApproval(_ local: LocalBrowser) {
        guard let profile = local.browser.profile,
            let problem = ProfileArguments.problem(profile.arguments, base: profile.base)
        else { return }
        let question: String
        do {
            question = try BrowsersCommand.Approve.question(
                local, profile: profile, problem: problem, replica: context.replica)
        } catch {
            context.show(error: "\(error)")
            return
        }
        Dialogs.confirm(
            parent: context.window, title: "Approve this profile?", text: question, accept: "_Approve",
            accessibleName: "Approve \(local.browser.id)"
        ) { [unowned self] in
            context.apply("Approved \(local.browser.id): it runs with its arguments on this machine") {
                try context.replica.approveProfile(local.browser.id)
            }
        }
    }
}
