import CGtk
import Desktop
import JSON
import Model

/// Remembering in the picker window: the box, the pattern field, the box
/// for the link's app, and the line under them that says what will be
/// remembered (or why nothing will), as it is typed.
extension PickerWindow {
    /// "Remember for …", the pattern's entry and, when the request names
    /// the app, "Only links from APP", appended to `outer`.
    static func rememberSection(
        _ request: WindowPicker.Request, in outer: Widget
    ) -> (remember: Widget, pattern: Widget, onlyFromApp: Widget?) {
        // A suggestion for this link's app (a rule for it decided) shows as
        // the plain pattern with the app's box ticked, as the person would make it.
        let suggested = splitSource(request.suggestedPattern, app: request.fromApp)
        // Its words follow the pattern (a domain, some pages, files), as it is typed.
        let rememberWords = WindowPicker.Request.rememberLabel(for: suggested.pattern)
        let remember = gtk_check_button_new_with_mnemonic("_" + rememberWords)!
        gtk_widget_set_tooltip_text(remember, "Ctrl+R")
        // (GTK 4.8 names a mnemonic button "_Open Open" for screen readers.)
        brsync_accessible_label(remember, rememberWords)
        gtk_box_append(brsync_box(outer), remember)
        let pattern = gtk_entry_new()!
        gtk_editable_set_text(brsync_editable(pattern), suggested.pattern)
        gtk_widget_set_tooltip_text(pattern, "The pattern remembered (Ctrl+E to edit)")
        brsync_accessible_label(pattern, "Pattern to remember")
        gtk_widget_set_sensitive(pattern, 0)
        gtk_box_append(brsync_box(outer), pattern)
        guard let app = request.fromApp else { return (remember, pattern, nil) }
        let only = gtk_check_button_new_with_label("Only links from \(shownApp(app)) (Ctrl+F)")!
        brsync_accessible_label(only, "Remember only for links from \(app)")
        gtk_widget_set_sensitive(only, 0)
        gtk_check_button_set_active(brsync_check_button(only), suggested.forApp ? 1 : 0)
        gtk_box_append(brsync_box(outer), only)
        return (remember, pattern, only)
    }

    func toggleRemember() {
        let active = gtk_check_button_get_active(brsync_check_button(remember)) != 0
        gtk_check_button_set_active(brsync_check_button(remember), active ? 0 : 1)
    }

    func editPattern() {
        gtk_check_button_set_active(brsync_check_button(remember), 1)
        gtk_widget_grab_focus(pattern)
    }

    func rememberToggled() {
        gtk_widget_set_sensitive(pattern, gtk_check_button_get_active(brsync_check_button(remember)))
        checkPattern()
    }

    /// `from:APP PATTERN` for this link's app, as PATTERN with the app's box
    /// ticked; any other text as it is.
    static func splitSource(_ text: String, app: String?) -> (pattern: String, forApp: Bool) {
        guard let app, let parsed = try? Pattern(text), parsed.source == Pattern.sourceKey(app),
            let space = parsed.text.firstIndex(of: " ")
        else { return (text, false) }
        return (String(parsed.text[space...].drop { $0 == " " }), true)
    }

    /// The pattern remembered: the field's, for the app's links only when that box is ticked.
    func rememberedText(_ text: String) -> String {
        let trimmed = WindowPicker.trimmed(text)
        guard let app = request.fromApp, let onlyFromApp,
            gtk_check_button_get_active(brsync_check_button(onlyFromApp)) != 0,
            !trimmed.lowercased().hasPrefix(Pattern.sourcePrefix)
        else { return trimmed }
        return "\(Pattern.sourcePrefix)\(app) \(trimmed)"
    }

    /// The check under the field, as you type. The Open button stays usable:
    /// an invalid pattern only means nothing is remembered.
    func checkPattern() {
        let on = gtk_check_button_get_active(brsync_check_button(remember)) != 0
        let text = String(cString: gtk_editable_get_text(brsync_editable(pattern)))
        // The box says what the pattern reaches: this domain, these pages, these files.
        let words = WindowPicker.Request.rememberLabel(for: text)
        if String(cString: gtk_check_button_get_label(brsync_check_button(remember))) != "_" + words {
            gtk_check_button_set_label(brsync_check_button(remember), "_" + words)
            brsync_accessible_label(remember, words)
        }
        // A pattern typed with its own from: names its app: the box has no say then, and shows it.
        if let onlyFromApp {
            gtk_widget_set_sensitive(
                onlyFromApp, on && !WindowPicker.trimmed(text).lowercased().hasPrefix(Pattern.sourcePrefix) ? 1 : 0)
        }
        if !on {
            let keys =
                positions.count == 1
                ? "Press 1 or Enter to open, Esc to cancel"
                : "Press 1–\(min(9, positions.count)) or Enter to open, Esc to cancel"
            say(keys + ".\nShift+Enter: private window · Alt+Up/Down: move a browser · Ctrl+H: hide it", error: false)
        } else if let problem = WindowPicker.problem(withPattern: rememberedText(text)) {
            say("Not remembered: \(problem).\nThe link still opens.", error: true)
        } else if let remembered = try? Pattern(rememberedText(text)), let app = remembered.source {
            // The app the rule names: the box's, or the one typed with from: (which wins).
            let rest = remembered.text.drop { $0 != " " }.dropFirst()
            let typedApp = WindowPicker.trimmed(text).lowercased().hasPrefix(Pattern.sourcePrefix)
            // The app as the link's app was named (the rule keeps it without case).
            let named = request.fromApp.flatMap { Pattern.sourceKey($0) == app ? $0 : nil } ?? app
            say(
                "Links from \(Self.shownApp(named)) matching \(rest) will open in the browser you choose.\n"
                    + (typedApp ? "Ctrl+E: edit the pattern · its from: names the app" : rememberKeys), error: false)
        } else {
            say(
                "Links matching \(WindowPicker.trimmed(text)) will open in the browser you choose.\n" + rememberKeys,
                error: false)
        }
    }

    /// The second line while remembering. Every message under the field
    /// has two lines, so ticking and unticking keeps the window's layout.
    private var rememberKeys: String {
        "Ctrl+E: edit the pattern · "
            + (request.fromApp.map { "Ctrl+F: only links from \(Self.shownApp($0)), or all" }
                ?? "Ctrl+R: remember nothing")
    }

    /// Shows `message` under the pattern field (and gives it to screen readers).
    func say(_ message: String, error: Bool) {
        if error { gtk_widget_add_css_class(reason, "error") } else { gtk_widget_remove_css_class(reason, "error") }
        gtk_label_set_text(brsync_label(reason), message)
        brsync_accessible_description(pattern, message)
        brsync_accessible_description(list, message)
    }

    var patternHasFocus: Bool {
        guard let focus = gtk_window_get_focus(brsync_window(window)) else { return false }
        return focus == pattern || gtk_widget_is_ancestor(focus, pattern) != 0
    }
}
