import CGtk
import Desktop
import JSON
import Model
import Replica

/// Link cleanup: the tracking parameters taken off every link before rules
/// decide (a synced list; `brsync cleanup`), each removable, one added with
/// its name checked as it is typed, the default list put back. A rule that
/// must keep them says so in its own editor ("Keep tracking parameters").
final class CleanupPage {
    let root = Widgets.page()
    private let context: SettingsContext
    private let summary: Widget
    private let list: Widget
    private let name: Widget
    private let check: Widget
    private let addButton: Widget

    init(context: SettingsContext) {
        self.context = context
        summary = Widgets.label("", wrap: true)
        let explanation = Widgets.label(
            "These parameters are taken off every link before rules decide and before it opens (utm_source, fbclid…). "
                + "A rule whose site needs them keeps them: tick \"Keep tracking parameters\" in its editor.",
            classes: ["dim-label"], wrap: true)
        name = Widgets.entry(name: "Parameter to take off links", placeholder: "a name, or a prefix like mc_*")
        check = Widgets.label("", classes: ["dim-label", "caption"], wrap: true)
        addButton = Widgets.button("_Add")
        let reset = Widgets.button("Use the _default list")
        let adding = Widgets.box(GTK_ORIENTATION_HORIZONTAL)
        gtk_widget_set_hexpand(name, 1)
        Widgets.append(adding, name, addButton)
        list = Widgets.flow()
        brsync_accessible_label(list, "Tracking parameters")
        Widgets.append(
            root, Widgets.heading("Link cleanup"), explanation, summary, adding, check, Widgets.scrolled(list), reset)
        gtk_widget_set_halign(reset, GTK_ALIGN_START)
        Signals.on(addButton, "clicked") { [unowned self] in add() }
        Signals.on(name, "activate") { [unowned self] in add() }
        Signals.on(name, "changed") { [unowned self] in checkName() }
        Signals.on(reset, "clicked") {
            context.apply("Tracking parameters: the default list (\(LinkCleanup.defaultParameters.count) names).") {
                try context.replica.setTrackingParameters(nil)
            }
        }
        checkName()
    }

    func reload() {
        while let child = gtk_widget_get_first_child(list) { gtk_flow_box_remove(OpaquePointer(list), child) }
        let cleanup: LinkCleanup
        let isDefault: Bool
        do {
            cleanup = try context.replica.linkCleanup()
            isDefault = try context.replica.setting(Replica.trackingParametersSetting) == nil
        } catch {
            context.show(error: "Could not read the link cleanup: \(error)")
            return
        }
        Widgets.setText(
            summary,
            cleanup.parameters.isEmpty
                ? "No parameters: links keep every one."
                : "\(cleanup.parameters.count) parameters (\(isDefault ? "the default list" : "your synced list")); "
                    + "press one to take it off the list:")
        for parameter in cleanup.parameters {
            let shown = DisplayText.printable(parameter)
            // "×": pressing it takes the name off (said in the description too).
            let button = Widgets.button(
                shown.replacingOccurrences(of: "_", with: "__") + "  ×", detail: "Remove \(shown)")
            Signals.on(button, "clicked") { [unowned self] in
                context.apply("Removed \(shown): links keep it.") {
                    try context.replica.changeTrackingParameters(adding: [], removing: [parameter])
                }
            }
            Widgets.flowAppend(list, button)
        }
    }

    private func checkName() {
        let text = WindowPicker.trimmed(Widgets.text(of: name))
        let problem = text.isEmpty ? nil : LinkCleanup.problem(name: text)
        Widgets.setText(check, problem ?? (text.isEmpty ? "" : "Links lose \(text) when they open."))
        gtk_widget_set_sensitive(addButton, !text.isEmpty && problem == nil ? 1 : 0)
        if problem != nil {
            gtk_widget_add_css_class(check, "error")
        } else {
            gtk_widget_remove_css_class(check, "error")
        }
    }

    private func add() {
        let text = WindowPicker.trimmed(Widgets.text(of: name))
        guard !text.isEmpty else { return }
        context.apply("Added \(DisplayText.printable(text)): links lose it when they open.") {
            try context.replica.changeTrackingParameters(adding: [text], removing: [])
            Widgets.setText(ofEntry: name, "")
        }
    }

}
