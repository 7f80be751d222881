import CGtk
import Desktop
import Glibc
import JSON
import Model

typealias Widget = UnsafeMutablePointer<GtkWidget>

/// The window: the link, the browsers (number, icon, name, profile, the
/// default marked), "Remember for this domain" with a pattern checked as it is
/// typed, Cancel, Private window and Open. Keyboard first: 1-9 choose, arrows
/// and Enter, Shift+Enter opens a private window, Esc cancels, Ctrl+R toggles
/// remember, Ctrl+E edits the pattern, Alt+Up/Down move the selected browser,
/// Ctrl+H hides it (the answer carries the new order, saved when opening).
final class PickerWindow {
    enum Outcome: Equatable {
        case chosen(WindowPicker.Answer)
        case cancelled
    }

    let request: WindowPicker.Request
    private(set) var outcome: Outcome?
    let window: Widget
    let list: Widget
    /// The list's rows and their number labels, by index in the request.
    private var rows: [Widget] = []
    private var numbers: [Widget] = []
    /// The request's indices in the order shown (hidden ones left out).
    private(set) var positions: [Int]
    private var hidden: [Int] = []
    private var moved = false
    private let privateButton: Widget
    private let cancelButton: Widget
    private let openButton: Widget
    let remember: Widget
    let pattern: Widget
    /// "Only links from APP", when the request names the app.
    let onlyFromApp: Widget?
    let reason: Widget
    private let link: Widget

    init(_ request: WindowPicker.Request) {
        self.request = request
        positions = Array(request.choices.indices)
        window = gtk_window_new()
        gtk_window_set_title(brsync_window(window), "Open link — brsync")
        gtk_window_set_default_size(brsync_window(window), 560, -1)
        // Its size follows what it shows (a hidden browser, a shorter hint): no empty strip is left.
        gtk_window_set_resizable(brsync_window(window), 0)
        brsync_accessible_description(window, "Choose the browser that opens this link")

        let outer = gtk_box_new(GTK_ORIENTATION_VERTICAL, 10)!
        for side in [
            gtk_widget_set_margin_top, gtk_widget_set_margin_bottom, gtk_widget_set_margin_start,
            gtk_widget_set_margin_end,
        ] {
            side(outer, 18)
        }
        gtk_window_set_child(brsync_window(window), outer)

        let heading = Self.label("Open this link with:", classes: ["heading"])
        gtk_box_append(brsync_box(outer), heading)
        link = Self.linkLabel(request.url)
        gtk_box_append(brsync_box(outer), link)
        // Why it asks, when a rule decided: its browser did not start.
        if let note = request.note { gtk_box_append(brsync_box(outer), Self.noteLabel(note)) }

        list = gtk_list_box_new()
        gtk_list_box_set_selection_mode(brsync_list_box(list), GTK_SELECTION_SINGLE)
        gtk_widget_add_css_class(list, "boxed-list")
        gtk_widget_add_css_class(list, "frame")
        brsync_accessible_label(list, "Browsers")
        gtk_box_append(brsync_box(outer), list)

        (remember, pattern, onlyFromApp) = Self.rememberSection(request, in: outer)
        reason = Self.label("", classes: ["dim-label"])
        Self.wrapWithin(reason, lines: 4)
        gtk_box_append(brsync_box(outer), reason)

        let buttons = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 8)!
        gtk_widget_set_halign(buttons, GTK_ALIGN_END)
        cancelButton = brsync_mnemonic_button("_Cancel")!
        privateButton = brsync_mnemonic_button("_Private window")!
        gtk_widget_set_tooltip_text(privateButton, "Open in a private window (Shift+Enter)")
        openButton = brsync_mnemonic_button("_Open")!
        gtk_widget_add_css_class(openButton, "suggested-action")
        for button in [cancelButton, privateButton, openButton] { gtk_box_append(brsync_box(buttons), button) }
        gtk_box_append(brsync_box(outer), buttons)
        gtk_window_set_default_widget(brsync_window(window), openButton)

        for (index, choice) in request.choices.enumerated() { appendRow(index, choice) }
        renumber()
        connectSignals()
        checkPattern()
    }

    /// The whole URL on up to three lines, ellipsized in the middle past
    /// them, selectable (copying takes all of it). No tooltip: it would
    /// cover the browsers (as would the rows' own; their keys are in the
    /// line under the pattern).
    private static func linkLabel(_ url: String) -> Widget {
        let link = label(url, classes: ["dim-label"])
        gtk_label_set_selectable(brsync_label(link), 1)
        gtk_label_set_wrap(brsync_label(link), 1)
        gtk_label_set_wrap_mode(brsync_label(link), PANGO_WRAP_CHAR)
        // No hyphen where a line breaks: it would read as part of the URL.
        let attributes = pango_attr_list_new()
        pango_attr_list_insert(attributes, pango_attr_insert_hyphens_new(0))
        gtk_label_set_attributes(brsync_label(link), attributes)
        pango_attr_list_unref(attributes)
        gtk_label_set_lines(brsync_label(link), Int32(linkLines))
        gtk_label_set_ellipsize(brsync_label(link), PANGO_ELLIPSIZE_MIDDLE)
        gtk_label_set_width_chars(brsync_label(link), 40)
        gtk_label_set_max_width_chars(brsync_label(link), Int32(linkLineCharacters))
        brsync_accessible_label(link, "Link: \(url)")
        return link
    }

    /// Why the picker asks, as a sentence.
    private static func noteLabel(_ note: String) -> Widget {
        let sentence = note.prefix(1).uppercased() + note.dropFirst() + (note.hasSuffix(".") ? "" : ".")
        let why = label(sentence, classes: ["warning"])
        wrapWithin(why, lines: 4)
        brsync_accessible_label(why, sentence)
        return why
    }

    private func connectSignals() {
        connect(cancelButton, "clicked", Callbacks.cancel)
        connect(openButton, "clicked", Callbacks.openSelected)
        connect(privateButton, "clicked", Callbacks.openPrivately)
        connect(list, "row-activated", Callbacks.rowActivated)
        connect(list, "row-selected", Callbacks.rowSelected)
        connect(remember, "toggled", Callbacks.rememberToggled)
        connect(pattern, "changed", Callbacks.patternChanged)
        if let onlyFromApp { connect(onlyFromApp, "toggled", Callbacks.patternChanged) }
        connect(pattern, "activate", Callbacks.openSelected)
        connect(window, "close-request", Callbacks.closeRequest)
        let keys = gtk_event_controller_key_new()!
        gtk_event_controller_set_propagation_phase(
            brsync_event_controller(UnsafeMutableRawPointer(keys)), GTK_PHASE_CAPTURE)
        gtk_widget_add_controller(window, brsync_event_controller(UnsafeMutableRawPointer(keys)))
        connect(keys, "key-pressed", Callbacks.keyPressed)
    }

    private func connect<T>(_ instance: UnsafeMutablePointer<T>, _ signal: String, _ callback: GCallback) {
        brsync_signal_connect(instance, signal, callback, nil)
    }

    private func connect(_ instance: OpaquePointer, _ signal: String, _ callback: GCallback) {
        brsync_signal_connect(UnsafeMutableRawPointer(instance), signal, callback, nil)
    }

    /// The link's lines, and the characters of each at most.
    static let linkLines = 3
    static let linkLineCharacters = 72

    /// Text from outside (a rule's pattern, an app's id) may be one long
    /// word: it wraps anywhere, within the window's width, on `lines` lines
    /// at most (cut in the middle past them; screen readers get it whole).
    static func wrapWithin(_ label: Widget, lines: Int) {
        gtk_label_set_wrap(brsync_label(label), 1)
        gtk_label_set_wrap_mode(brsync_label(label), PANGO_WRAP_WORD_CHAR)
        gtk_label_set_lines(brsync_label(label), Int32(lines))
        gtk_label_set_ellipsize(brsync_label(label), PANGO_ELLIPSIZE_MIDDLE)
        gtk_label_set_width_chars(brsync_label(label), 40)
        gtk_label_set_max_width_chars(brsync_label(label), Int32(linkLineCharacters))
        // No hyphen where a line breaks: '-' belongs to app ids and patterns.
        let attributes = pango_attr_list_new()
        pango_attr_list_insert(attributes, pango_attr_insert_hyphens_new(0))
        gtk_label_set_attributes(brsync_label(label), attributes)
        pango_attr_list_unref(attributes)
    }

    /// An app's id as the window shows it: at most 40 characters.
    static func shownApp(_ app: String) -> String { PickerModel.shorten(app, to: 40) }

    static func label(_ text: String, classes: [String] = []) -> Widget {
        let label = gtk_label_new(text)!
        gtk_label_set_xalign(brsync_label(label), 0)
        for name in classes { gtk_widget_add_css_class(label, name) }
        return label
    }

    private func appendRow(_ index: Int, _ choice: WindowPicker.Request.Choice) {
        let row = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 12)!
        for side in [
            gtk_widget_set_margin_top, gtk_widget_set_margin_bottom, gtk_widget_set_margin_start,
            gtk_widget_set_margin_end,
        ] {
            side(row, 8)
        }
        let number = Self.label(" ", classes: ["dim-label", "numeric"])
        gtk_label_set_width_chars(brsync_label(number), 1)
        numbers.append(number)
        gtk_box_append(brsync_box(row), number)
        gtk_box_append(brsync_box(row), Self.icon(choice.icon))
        let names = gtk_box_new(GTK_ORIENTATION_VERTICAL, 2)!
        gtk_widget_set_hexpand(names, 1)
        gtk_widget_set_valign(names, GTK_ALIGN_CENTER)
        let name = Self.label(DisplayText.printable(choice.name))
        gtk_label_set_ellipsize(brsync_label(name), PANGO_ELLIPSIZE_END)
        gtk_box_append(brsync_box(names), name)
        if let profile = choice.profile {
            let detail = Self.label("profile: " + DisplayText.printable(profile), classes: ["dim-label", "caption"])
            gtk_label_set_ellipsize(brsync_label(detail), PANGO_ELLIPSIZE_END)
            gtk_box_append(brsync_box(names), detail)
        }
        gtk_box_append(brsync_box(row), names)
        // (Whether it has a private window shows in the Private window
        // button and in what a screen reader says.)
        if choice.isDefault {
            gtk_box_append(brsync_box(row), Self.label("default", classes: ["dim-label", "caption"]))
        }
        gtk_list_box_append(brsync_list_box(list), row)
        // The row itself (the list wraps the box in one) is what is focused and read.
        rows.append(gtk_widget_get_parent(row)!)
    }

    /// Numbers the rows as shown (1-9), with what a screen reader says of each.
    private func renumber() {
        for (position, index) in positions.enumerated() {
            let choice = request.choices[index]
            let key = position < 9 ? "\(position + 1)" : nil
            gtk_label_set_text(brsync_label(numbers[index]), key ?? " ")
            var spoken = "\(key.map { "\($0): " } ?? "")\(choice.name)"
            if let profile = choice.profile { spoken += ", profile \(profile)" }
            if choice.isDefault { spoken += ", the default browser" }
            if choice.hasPrivateWindow { spoken += ", has a private window" }
            brsync_accessible_label(rows[index], spoken)
        }
    }

    /// The desktop entry's icon: a file, or a name in the icon theme; a
    /// generic browser icon when there is neither.
    static func icon(_ icon: String?) -> Widget {
        let image = brsync_decorative_image()!
        let theme = gtk_icon_theme_get_for_display(gdk_display_get_default())
        if let icon, icon.hasPrefix("/"), access(icon, R_OK) == 0 {
            gtk_image_set_from_file(brsync_image(image), icon)
        } else if let icon, !icon.isEmpty, gtk_icon_theme_has_icon(theme, icon) != 0 {
            gtk_image_set_from_icon_name(brsync_image(image), icon)
        } else {
            let candidates: [String] = ["web-browser", "applications-internet", "text-html", "image-missing"]
            let generic = candidates.first { gtk_icon_theme_has_icon(theme, $0) != 0 }
            gtk_image_set_from_icon_name(brsync_image(image), generic ?? "web-browser")
        }
        gtk_image_set_pixel_size(brsync_image(image), 32)
        return image
    }

    func present() {
        // The browser the deciding rule names first selected when the person asked
        // to choose anyway (the note says so); else the default browser: a quick
        // Enter opens what a click with no rule would.
        let first =
            request.selected.flatMap { positions.firstIndex(of: $0) } ?? positions.firstIndex {
                request.choices[$0].isDefault
            } ?? 0
        select(position: first)
        selectionChanged()
        gtk_window_present(brsync_window(window))
        select(position: first)
        // Once mapped (its size known), centred on its monitor; at most ~2 s.
        for _ in 0..<200 {
            if brsync_center_on_monitor(window) != 0 { break }
            while g_main_context_iteration(nil, 0) != 0 {}
            usleep(10_000)
        }
        gtk_label_select_region(brsync_label(link), 0, 0) // the link is selectable, not selected
    }

    // MARK: What the person does

    func cancel() {
        if outcome == nil { outcome = .cancelled }
    }

    /// The request's index of the selected browser (the first shown when none is).
    var selectedIndex: Int {
        guard let row = gtk_list_box_get_selected_row(brsync_list_box(list)) else { return positions[0] }
        return index(ofRowAt: Int(gtk_list_box_row_get_index(row)))
    }

    /// The request's index of the row at `position` in the list.
    func index(ofRowAt position: Int) -> Int {
        positions.indices.contains(position) ? positions[position] : positions[0]
    }

    /// Opens the browser at `index` of the request (a private window when
    /// asked and it has one; when it has none, says so and stays open).
    func choose(_ index: Int, privately: Bool = false) {
        guard outcome == nil, request.choices.indices.contains(index), !hidden.contains(index) else { return }
        if privately && !request.choices[index].hasPrivateWindow {
            say("\(request.choices[index].name) has no private window here. Enter opens a normal one.", error: true)
            return
        }
        var answer = WindowPicker.Answer(
            choice: index, privateWindow: privately, order: moved ? positions : nil, hidden: hidden)
        if gtk_check_button_get_active(brsync_check_button(remember)) != 0 {
            let text = String(cString: gtk_editable_get_text(brsync_editable(pattern)))
            if let problem = WindowPicker.problem(withPattern: rememberedText(text)) {
                answer.notRemembered = problem
            } else {
                answer.remember = rememberedText(text)
            }
        }
        outcome = .chosen(answer)
    }

    /// Selects (and focuses) the browser shown at `position`.
    func select(position: Int) {
        guard positions.indices.contains(position) else { return }
        let row = rows[positions[position]]
        gtk_list_box_select_row(brsync_list_box(list), brsync_list_box_row(row))
        gtk_widget_grab_focus(row)
    }

    /// The Private window button follows the selected browser.
    func selectionChanged() {
        gtk_widget_set_sensitive(privateButton, request.choices[selectedIndex].hasPrivateWindow ? 1 : 0)
    }

    /// Moves the selected browser up (-1) or down (+1) the list.
    func moveSelected(by step: Int) {
        let index = selectedIndex
        guard let from = positions.firstIndex(of: index), positions.indices.contains(from + step) else { return }
        positions.swapAt(from, from + step)
        moved = true
        let row = rows[index]
        g_object_ref(row)
        gtk_list_box_remove(brsync_list_box(list), row)
        gtk_list_box_insert(brsync_list_box(list), row, Int32(from + step))
        g_object_unref(row)
        renumber()
        select(position: from + step)
        say(
            "\(request.choices[index].name) moved to place \(from + step + 1) (saved when you open a link).",
            error: false)
    }

    /// Hides the selected browser from the picker (never the last one shown).
    func hideSelected() {
        let index = selectedIndex
        guard positions.count > 1, let from = positions.firstIndex(of: index) else {
            say("The last browser shown cannot be hidden.", error: true)
            return
        }
        positions.remove(at: from)
        hidden.append(index)
        moved = true
        g_object_ref(rows[index]) // kept (not shown): rows stays valid
        gtk_list_box_remove(brsync_list_box(list), rows[index])
        renumber()
        select(position: min(from, positions.count - 1))
        let names = hidden.map { request.choices[$0].name }
        let unhide =
            names.count == 1
            ? "'brsync browsers unhide \(request.choices[index].id)' shows it again"
            : "'brsync browsers unhide ID' shows one again"
        say(
            "\(names.joined(separator: ", ")) \(names.count == 1 ? "is" : "are") hidden from the picker once you open a link (\(unhide)).",
            error: false)
    }

    /// Whether the focus is on a button or a box (Enter is theirs then).
    var buttonHasFocus: Bool {
        guard let focus = gtk_window_get_focus(brsync_window(window)) else { return false }
        return [cancelButton, privateButton, openButton, remember].contains(focus) || onlyFromApp == focus
    }

    /// Whether the focus is on one of the browsers.
    var listHasFocus: Bool {
        guard let focus = gtk_window_get_focus(brsync_window(window)) else { return false }
        return focus == list || gtk_widget_is_ancestor(focus, list) != 0
    }

    /// Keys the window handles before its widgets; true when handled.
    func keyPressed(_ key: UInt32, control: Bool, shift: Bool, alt: Bool) -> Bool {
        let enter = key == UInt32(GDK_KEY_Return) || key == UInt32(GDK_KEY_KP_Enter) || key == UInt32(GDK_KEY_ISO_Enter)
        if key == UInt32(GDK_KEY_Escape) {
            cancel()
            return true
        }
        if control && (key == UInt32(GDK_KEY_r) || key == UInt32(GDK_KEY_R)) {
            toggleRemember()
            return true
        }
        if control && (key == UInt32(GDK_KEY_e) || key == UInt32(GDK_KEY_E)) {
            editPattern()
            return true
        }
        if control && (key == UInt32(GDK_KEY_f) || key == UInt32(GDK_KEY_F)), let onlyFromApp {
            // Remember, for the app's links only (or for every link again).
            gtk_check_button_set_active(brsync_check_button(remember), 1)
            // (Greyed out while the typed pattern names its own app: that one decides.)
            guard gtk_widget_get_sensitive(onlyFromApp) != 0 else { return true }
            let active = gtk_check_button_get_active(brsync_check_button(onlyFromApp)) != 0
            gtk_check_button_set_active(brsync_check_button(onlyFromApp), active ? 0 : 1)
            return true
        }
        // Enter on a focused button or box does what it says (GTK activates it): Cancel cancels.
        if enter && !shift && buttonHasFocus { return false }
        if enter && shift {
            choose(selectedIndex, privately: true)
            return true
        }
        // Up and Down move through the browsers from anywhere (the pattern field
        // too, which has no lines to move through), never to the buttons.
        let up = key == UInt32(GDK_KEY_Up) || key == UInt32(GDK_KEY_KP_Up)
        let down = key == UInt32(GDK_KEY_Down) || key == UInt32(GDK_KEY_KP_Down)
        if (up || down) && !alt && !control {
            let from = positions.firstIndex(of: selectedIndex) ?? 0
            // One step from the selected browser, wherever the focus was (it goes to the list).
            select(position: min(max(from + (down ? 1 : -1), 0), positions.count - 1))
            return true
        }
        // Tab leaves the list for the box below it, the selection kept (GTK's
        // own Tab moved the list's cursor, and the selection with it).
        let tab = key == UInt32(GDK_KEY_Tab) || key == UInt32(GDK_KEY_KP_Tab)
        if tab && !shift && !control && !alt && listHasFocus {
            gtk_widget_grab_focus(remember)
            return true
        }
        if patternHasFocus { return false } // typing a pattern: digits are text
        if control && (key == UInt32(GDK_KEY_h) || key == UInt32(GDK_KEY_H)) {
            hideSelected()
            return true
        }
        if alt && (key == UInt32(GDK_KEY_Up) || key == UInt32(GDK_KEY_KP_Up)) {
            moveSelected(by: -1)
            return true
        }
        if alt && (key == UInt32(GDK_KEY_Down) || key == UInt32(GDK_KEY_KP_Down)) {
            moveSelected(by: 1)
            return true
        }
        if enter {
            choose(selectedIndex)
            return true
        }
        for base in [UInt32(GDK_KEY_1), UInt32(GDK_KEY_KP_1)] where key >= base && key < base + 9 {
            if positions.indices.contains(Int(key - base)) { choose(positions[Int(key - base)]) }
            return true
        }
        return false
    }
}

/// The C callbacks GTK calls; they reach the one window through `picker`.
nonisolated(unsafe) var picker: PickerWindow!

enum Callbacks {
    static let cancel = callback { _, _ in picker.cancel() }
    static let openSelected = callback { _, _ in picker.choose(picker.selectedIndex) }
    static let openPrivately = callback { _, _ in picker.choose(picker.selectedIndex, privately: true) }
    static let rememberToggled = callback { _, _ in picker.rememberToggled() }
    static let patternChanged = callback { _, _ in picker.checkPattern() }

    static let rowActivated: GCallback = unsafeBitCast(
        { (_: gpointer?, row: UnsafeMutablePointer<GtkListBoxRow>?, _: gpointer?) in
            guard let row else { return }
            picker.choose(picker.index(ofRowAt: Int(gtk_list_box_row_get_index(row))))
        } as @convention(c) (gpointer?, UnsafeMutablePointer<GtkListBoxRow>?, gpointer?) -> Void, to: GCallback.self)

    static let rowSelected: GCallback = unsafeBitCast(
        { (_: gpointer?, _: UnsafeMutablePointer<GtkListBoxRow>?, _: gpointer?) in
            picker?.selectionChanged()
        } as @convention(c) (gpointer?, UnsafeMutablePointer<GtkListBoxRow>?, gpointer?) -> Void, to: GCallback.self)

    static let closeRequest: GCallback = unsafeBitCast(
        { (_: gpointer?, _: gpointer?) -> gboolean in
            picker.cancel()
            return 1
        } as @convention(c) (gpointer?, gpointer?) -> gboolean, to: GCallback.self)

    static let keyPressed: GCallback = unsafeBitCast(
        { (_: gpointer?, key: guint, _: guint, state: GdkModifierType, _: gpointer?) -> gboolean in
            picker.keyPressed(
                key, control: state.rawValue & GDK_CONTROL_MASK.rawValue != 0,
                shift: state.rawValue & GDK_SHIFT_MASK.rawValue != 0,
                alt: state.rawValue & GDK_ALT_MASK.rawValue != 0) ? 1 : 0
        } as @convention(c) (gpointer?, guint, guint, GdkModifierType, gpointer?) -> gboolean, to: GCallback.self)

    /// A handler of (instance, user data) that runs `body`.
    private static func callback(_ body: @escaping @convention(c) (gpointer?, gpointer?) -> Void) -> GCallback {
        unsafeBitCast(body, to: GCallback.self)
    }
}
