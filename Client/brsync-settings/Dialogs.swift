import CGtk

/// A question in a small window of its own, over the settings window: its
/// text (selectable), Cancel (Escape) and the action.
enum Dialogs {
    /// A window over `parent` (modal) that Escape closes.
    private static func window(parent: Widget?, title: String) -> Widget {
        let dialog = gtk_window_new()!
        gtk_window_set_title(brsync_window(dialog), title)
        gtk_window_set_modal(brsync_window(dialog), 1)
        if let parent { gtk_window_set_transient_for(brsync_window(dialog), brsync_window(parent)) }
        gtk_window_set_default_size(brsync_window(dialog), 480, -1)
        brsync_accessible_label(dialog, title)
        let keys = gtk_event_controller_key_new()!
        gtk_widget_add_controller(dialog, brsync_event_controller(UnsafeMutableRawPointer(keys)))
        Signals.keys(UnsafeMutableRawPointer(keys)) { key, _, _, _ in
            guard key == UInt32(GDK_KEY_Escape) else { return false }
            gtk_window_destroy(brsync_window(dialog))
            return true
        }
        return dialog
    }

    static func confirm(
        parent: Widget?, title: String, text: String, accept: String, accessibleName: String,
        cancel cancelTitle: String = "_Cancel", cancelled: @escaping () -> Void = {}, then action: @escaping () -> Void
    ) {
        let dialog = window(parent: parent, title: title)
        let box = Widgets.box(GTK_ORIENTATION_VERTICAL, spacing: 12, margin: 18)
        let question = Widgets.label(text, wrap: true)
        gtk_label_set_selectable(brsync_label(question), 1)
        let buttons = Widgets.box(GTK_ORIENTATION_HORIZONTAL)
        gtk_widget_set_halign(buttons, GTK_ALIGN_END)
        let cancel = Widgets.button(cancelTitle) {
            gtk_window_destroy(brsync_window(dialog))
            cancelled()
        }
        let ok = Widgets.button(accept, detail: accessibleName) {
            gtk_window_destroy(brsync_window(dialog))
            action()
        }
        gtk_widget_add_css_class(ok, "destructive-action")
        Widgets.append(buttons, cancel, ok)
        Widgets.append(box, question, buttons)
        gtk_window_set_child(brsync_window(dialog), box)
        // Cancel is where the keyboard starts: approving takes a deliberate choice.
        gtk_window_present(brsync_window(dialog))
        gtk_widget_grab_focus(cancel)
    }

    /// A message alone, for when the settings cannot open: returns once it is closed.
    static func showAndWait(title: String, text: String) {
        let window = gtk_window_new()!
        gtk_window_set_title(brsync_window(window), title)
        gtk_window_set_default_size(brsync_window(window), 480, -1)
        let box = Widgets.box(GTK_ORIENTATION_VERTICAL, spacing: 12, margin: 18)
        let message = Widgets.label(text, wrap: true)
        gtk_label_set_selectable(brsync_label(message), 1)
        var closed = false
        let close = Widgets.button("_Close") { gtk_window_destroy(brsync_window(window)) }
        gtk_widget_set_halign(close, GTK_ALIGN_END)
        Widgets.append(box, message, close)
        gtk_window_set_child(brsync_window(window), box)
        Signals.on(window, "destroy") { closed = true }
        gtk_window_present(brsync_window(window))
        gtk_widget_grab_focus(close)
        while !closed { g_main_context_iteration(nil, 1) }
    }

    /// A small form over the settings window: its fields (each named for
    /// screen readers), Cancel (Escape) and the action. `submit` gets what was
    /// typed; what it throws is said in the form, which stays open with what
    /// was typed, until it succeeds.
    static func form(
        parent: Widget?, title: String, text: String, fields: [(name: String, placeholder: String)], accept: String,
        submit: @escaping ([String]) throws -> Void
    ) {
        let dialog = window(parent: parent, title: title)
        let box = Widgets.box(GTK_ORIENTATION_VERTICAL, spacing: 8, margin: 18)
        Widgets.append(box, Widgets.label(text, wrap: true))
        var entries: [Widget] = []
        for field in fields {
            let entry = Widgets.entry(name: field.name, placeholder: field.placeholder)
            Widgets.append(box, Widgets.label(field.name, classes: ["caption"]), entry)
            entries.append(entry)
        }
        let problem = Widgets.label("", classes: ["error"], wrap: true)
        gtk_label_set_selectable(brsync_label(problem), 1)
        brsync_accessible_label(problem, "Problem")
        let buttons = Widgets.box(GTK_ORIENTATION_HORIZONTAL)
        gtk_widget_set_halign(buttons, GTK_ALIGN_END)
        let cancel = Widgets.button("_Cancel") { gtk_window_destroy(brsync_window(dialog)) }
        let ok = Widgets.button(accept)
        gtk_widget_add_css_class(ok, "suggested-action")
        Widgets.append(buttons, cancel, ok)
        Widgets.append(box, problem, buttons)
        gtk_window_set_child(brsync_window(dialog), box)
        let act = {
            do {
                try submit(entries.map { Widgets.text(of: $0) })
                gtk_window_destroy(brsync_window(dialog))
            } catch {
                Widgets.setText(problem, "\(error)")
                brsync_accessible_label(problem, "Problem: \(error)")
            }
        }
        Signals.on(ok, "clicked", act)
        for entry in entries { Signals.on(entry, "activate", act) }
        gtk_window_present(brsync_window(dialog))
        if let first = entries.first { gtk_widget_grab_focus(first) }
    }
}
