import CGtk
import QRCode

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
        gtk_label_select_region(brsync_label(question), 0, 0) // read, not selected
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

    /// A recovery code over the settings window: `text`, the code (in
    /// groups, selectable), a Copy button, and its QR code for a phone's
    /// camera. Close (Escape) ends it; nothing keeps the code after.
    static func recoveryCode(parent: Widget?, title: String, text: String, code: String) {
        let dialog = window(parent: parent, title: title)
        let box = Widgets.box(GTK_ORIENTATION_VERTICAL, spacing: 12, margin: 18)
        let words = Widgets.label(text, wrap: true)
        let shown = Widgets.label(code, classes: ["monospace", "title-3"], wrap: true)
        gtk_label_set_selectable(brsync_label(shown), 1)
        brsync_accessible_label(shown, "Recovery code: \(code)")
        let buttons = Widgets.box(GTK_ORIENTATION_HORIZONTAL)
        gtk_widget_set_halign(buttons, GTK_ALIGN_END)
        let copy = Widgets.button("C_opy the code", detail: "Copy the recovery code to the clipboard") {
            gdk_clipboard_set_text(gtk_widget_get_clipboard(shown), code)
        }
        let close = Widgets.button("_Close") { gtk_window_destroy(brsync_window(dialog)) }
        Widgets.append(buttons, copy, close)
        Widgets.append(box, words, shown)
        if let picture = qrPicture(code) { Widgets.append(box, picture) }
        Widgets.append(box, buttons)
        gtk_window_set_child(brsync_window(dialog), box)
        gtk_window_present(brsync_window(dialog))
        gtk_widget_grab_focus(close)
        gtk_label_select_region(brsync_label(shown), 0, 0) // shown, not selected
    }

    /// `text`'s QR code as a picture, each module a square of pixels (dark on
    /// white whatever the theme, as scanners expect), named for screen readers.
    static func qrPicture(_ text: String, pixelsPerModule: Int = 6) -> Widget? {
        guard let modules = QRCode.modules(text) else { return nil }
        let size = modules.count * pixelsPerModule
        var pixels = [UInt8](repeating: 255, count: size * size * 3)
        for (row, line) in modules.enumerated() {
            for (column, dark) in line.enumerated() where dark {
                for y in 0..<pixelsPerModule {
                    let start = ((row * pixelsPerModule + y) * size + column * pixelsPerModule) * 3
                    for offset in start..<(start + pixelsPerModule * 3) { pixels[offset] = 0 }
                }
            }
        }
        let bytes = pixels.withUnsafeBytes { g_bytes_new($0.baseAddress, gsize($0.count)) }
        defer { g_bytes_unref(bytes) }
        guard let texture = gdk_memory_texture_new(Int32(size), Int32(size), GDK_MEMORY_R8G8B8, bytes, gsize(size * 3))
        else { return nil }
        defer { g_object_unref(UnsafeMutableRawPointer(texture)) }
        let picture = gtk_picture_new_for_paintable(brsync_paintable(UnsafeMutableRawPointer(texture)))!
        gtk_picture_set_can_shrink(brsync_picture(picture), 0)
        gtk_widget_set_halign(picture, GTK_ALIGN_CENTER)
        brsync_accessible_label(picture, "The recovery code as a QR code")
        return picture
    }
}
