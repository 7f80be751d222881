import CGtk
import JSON
import Model

typealias Widget = UnsafeMutablePointer<GtkWidget>

/// The few ways the window builds its widgets, so every page looks and
/// reads (for screen readers) alike.
enum Widgets {
    static func box(_ orientation: GtkOrientation, spacing: Int32 = 8, margin: Int32 = 0) -> Widget {
        let box = gtk_box_new(orientation, spacing)!
        if margin > 0 { setMargins(box, margin) }
        return box
    }

    /// A page's column: its parts stacked 8 px apart, 12 px in from the edges.
    static func page() -> Widget { box(GTK_ORIENTATION_VERTICAL, spacing: 8, margin: 12) }

    /// A row of controls that wraps onto more lines when the window is narrow.
    static func flow() -> Widget {
        let flow = gtk_flow_box_new()!
        gtk_flow_box_set_selection_mode(OpaquePointer(flow), GTK_SELECTION_NONE)
        gtk_flow_box_set_max_children_per_line(OpaquePointer(flow), 8)
        gtk_flow_box_set_column_spacing(OpaquePointer(flow), 6)
        gtk_flow_box_set_row_spacing(OpaquePointer(flow), 6)
        gtk_flow_box_set_homogeneous(OpaquePointer(flow), 0)
        gtk_widget_set_valign(flow, GTK_ALIGN_START)
        return flow
    }

    /// Adds controls to a ``flow()``; only the controls take the focus, not the cells holding them.
    static func flowAppend(_ flow: Widget, _ children: Widget...) {
        for child in children {
            gtk_widget_set_halign(child, GTK_ALIGN_START)
            gtk_flow_box_append(OpaquePointer(flow), child)
            if let cell = gtk_widget_get_parent(child) { gtk_widget_set_focusable(cell, 0) }
        }
    }

    static func setMargins(_ widget: Widget, _ margin: Int32) {
        gtk_widget_set_margin_top(widget, margin)
        gtk_widget_set_margin_bottom(widget, margin)
        gtk_widget_set_margin_start(widget, margin)
        gtk_widget_set_margin_end(widget, margin)
    }

    static func append(_ box: Widget, _ children: Widget...) {
        for child in children { gtk_box_append(brsync_box(box), child) }
    }

    /// A label of text from anywhere (a synced pattern may hold anything):
    /// shown printable, left aligned.
    static func label(_ text: String, classes: [String] = [], wrap: Bool = false) -> Widget {
        let label = gtk_label_new(DisplayText.printableLines(text))!
        gtk_label_set_xalign(brsync_label(label), 0)
        if wrap {
            gtk_label_set_wrap(brsync_label(label), 1)
            gtk_label_set_wrap_mode(brsync_label(label), PANGO_WRAP_WORD_CHAR)
            // Its natural width stays that of a column; wider, it wraps.
            gtk_label_set_width_chars(brsync_label(label), 12)
            gtk_label_set_max_width_chars(brsync_label(label), 48)
        }
        for name in classes { gtk_widget_add_css_class(label, name) }
        return label
    }

    static func setText(_ label: Widget, _ text: String) {
        gtk_label_set_text(brsync_label(label), DisplayText.printableLines(text))
    }

    static func heading(_ text: String) -> Widget { label(text, classes: ["heading"]) }

    /// A button with a mnemonic (`_Add`), named for screen readers by its
    /// text without the underscore; `detail` (a row's "Remove" says which
    /// browser it removes) is its description, read after the name, and its
    /// tooltip with `key`. (GTK 4.8 reads a name set on a button followed by
    /// its text, so the name stays the text.)
    static func button(
        _ text: String, detail: String? = nil, key: String? = nil, action: (() -> Void)? = nil
    ) -> Widget {
        let spoken = text.replacingOccurrences(of: "_", with: "")
        let button = brsync_mnemonic_button(text)!
        if let detail { brsync_accessible_description(button, detail) }
        if detail != nil || key != nil {
            gtk_widget_set_tooltip_text(button, (detail ?? spoken) + (key.map { " (\($0))" } ?? ""))
        }
        if let action { Signals.on(button, "clicked", action) }
        return button
    }

    /// A one-line text entry named for screen readers.
    static func entry(name: String, placeholder: String = "") -> Widget {
        let entry = gtk_entry_new()!
        brsync_accessible_label(entry, name)
        if !placeholder.isEmpty { gtk_entry_set_placeholder_text(brsync_entry(entry), placeholder) }
        return entry
    }

    static func text(of editable: Widget) -> String {
        String(cString: gtk_editable_get_text(brsync_editable(editable)))
    }

    static func setText(ofEntry editable: Widget, _ text: String) {
        gtk_editable_set_text(brsync_editable(editable), text)
    }

    static func check(_ text: String, name: String? = nil) -> Widget {
        let check = gtk_check_button_new_with_mnemonic(text)!
        brsync_accessible_label(check, name ?? text.replacingOccurrences(of: "_", with: ""))
        return check
    }

    static func isActive(_ check: Widget) -> Bool { gtk_check_button_get_active(brsync_check_button(check)) != 0 }

    static func setActive(_ check: Widget, _ active: Bool) {
        gtk_check_button_set_active(brsync_check_button(check), active ? 1 : 0)
    }

    /// `child` in a scrolled window that grows with the page.
    static func scrolled(_ child: Widget, name: String? = nil) -> Widget {
        let scroller = gtk_scrolled_window_new()!
        gtk_scrolled_window_set_child(brsync_scrolled_window(scroller), child)
        gtk_scrolled_window_set_policy(brsync_scrolled_window(scroller), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC)
        gtk_widget_set_vexpand(scroller, 1)
        gtk_widget_set_hexpand(scroller, 1)
        if let name { brsync_accessible_label(scroller, name) }
        return scroller
    }

    /// A drop-down of `items`, named for screen readers.
    static func dropDown(_ items: [String], name: String) -> Widget {
        let list = stringList(items)
        let dropDown = gtk_drop_down_new(brsync_list_model(UnsafeMutableRawPointer(list)), nil)!
        brsync_accessible_label(dropDown, name)
        // The button inside is what takes the focus: it says what it chooses.
        if let button = gtk_widget_get_first_child(dropDown) {
            brsync_accessible_label(button, "Choose \(name.lowercased())")
        }
        return dropDown
    }

    static func stringList(_ items: [String]) -> OpaquePointer {
        withCStrings(items) { gtk_string_list_new($0) }
    }

    /// Every item of a GtkStringList replaced by `items`, in one change.
    static func replaceAll(in list: OpaquePointer, with items: [String]) {
        let count = g_list_model_get_n_items(brsync_list_model(UnsafeMutableRawPointer(list)))
        withCStrings(items) { gtk_string_list_splice(list, 0, count, $0) }
    }

    /// `items` as the NULL-ended array of C strings GTK takes, for the length of `body`.
    private static func withCStrings<Result>(
        _ items: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> Result
    ) -> Result {
        var pointers = items.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        return pointers.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) {
                body($0)
            }
        }
    }

    static func replaceItems(of dropDown: Widget, with items: [String]) {
        gtk_drop_down_set_model(
            brsync_drop_down(dropDown), brsync_list_model(UnsafeMutableRawPointer(stringList(items))))
    }

    static func selected(_ dropDown: Widget) -> Int {
        let position = gtk_drop_down_get_selected(brsync_drop_down(dropDown))
        return position == GTK_INVALID_LIST_POSITION ? -1 : Int(position)
    }

    static func select(_ dropDown: Widget, _ index: Int) {
        gtk_drop_down_set_selected(brsync_drop_down(dropDown), index < 0 ? GTK_INVALID_LIST_POSITION : guint(index))
    }
}
