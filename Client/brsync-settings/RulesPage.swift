import BrsyncCommands
import CGtk
import Glibc
import JSON
import Model
import Replica

/// Rules: a list searched as you type (pattern, browser, app), an editor with
/// the pattern checked as it is typed, and a "test a link" box that says what
/// would open a link and why. A rule whose browser cannot open links here is
/// marked with the reason.
///
/// The list is a GtkListView (it makes widgets only for the rows on screen)
/// over the positions of the rules shown; a search compares the rules' text,
/// lowered once per load, in Swift and hands the list the positions that
/// match in one change, so 20,000 rules stay quick to search. (GTK's
/// GtkFilterListModel, asked the same, took ~70 ms to paint a keystroke
/// that removed thousands of rows at 20,000 rules.)
final class RulesPage {
    let root = Widgets.page()
    private let context: SettingsContext

    // The rules as loaded, and what the search compares and the rows show.
    private var rules: [UrlRule] = []
    private var haystacks: [[UInt8]] = []
    private var problems: [String?] = []
    private var words: [[UInt8]] = []

    private let search: Widget
    private let count: Widget
    /// Every rule's position (in ``rules``), as the list's items.
    private let positions: OpaquePointer
    private let filter: OpaquePointer
    private let filtered: OpaquePointer
    private let selection: OpaquePointer
    private let listView: Widget
    private let editor: RuleEditor
    private let tester: LinkTester
    /// The list and the editor side by side when wide, one above the other when narrow.
    private let body: Widget
    private let editScroller: Widget

    init(context: SettingsContext) {
        self.context = context
        search = gtk_search_entry_new()!
        brsync_accessible_label(search, "Search rules")
        gtk_widget_set_tooltip_text(search, "Search rules by pattern, browser or app (Ctrl+F)")
        count = Widgets.label("", classes: ["dim-label"])
        let top = Widgets.box(GTK_ORIENTATION_HORIZONTAL)
        gtk_widget_set_hexpand(search, 1)
        Widgets.append(top, search, count)

        positions = gtk_string_list_new(nil)
        filter = gtk_custom_filter_new(nil, nil, nil)
        filtered = gtk_filter_list_model_new(
            brsync_list_model(UnsafeMutableRawPointer(positions)), brsync_filter(UnsafeMutableRawPointer(filter)))
        // A search that hides thousands of rows at once is applied over a few
        // frames, each quick, so typing never waits for the list.
        gtk_filter_list_model_set_incremental(filtered, 1)
        g_object_ref(UnsafeMutableRawPointer(positions)) // the filter model took the first reference
        g_object_ref(UnsafeMutableRawPointer(filter))
        g_object_ref(UnsafeMutableRawPointer(filtered)) // and the selection model that one
        selection = gtk_single_selection_new(brsync_list_model(UnsafeMutableRawPointer(filtered)))
        gtk_single_selection_set_autoselect(selection, 0)
        gtk_single_selection_set_can_unselect(selection, 1)
        let factory = gtk_signal_list_item_factory_new()!
        listView = gtk_list_view_new(
            brsync_selection_model(UnsafeMutableRawPointer(selection)), factory)
        brsync_accessible_label(listView, "Rules")

        editor = RuleEditor(context: context)
        tester = LinkTester(context: context)
        body = Widgets.box(GTK_ORIENTATION_HORIZONTAL, spacing: 12)
        let listSide = Widgets.box(GTK_ORIENTATION_VERTICAL)
        Widgets.append(listSide, top, Widgets.scrolled(listView, name: "Rules list"))
        gtk_widget_set_size_request(listSide, 200, 160)
        let editSide = Widgets.box(GTK_ORIENTATION_VERTICAL, spacing: 12)
        Widgets.append(editSide, editor.root, gtk_separator_new(GTK_ORIENTATION_HORIZONTAL), tester.root)
        Widgets.setMargins(editSide, 4)
        // The editor keeps its width; the list takes the rest, and each scrolls on its own.
        editScroller = Widgets.scrolled(editSide, name: "Rule editor and link test")
        gtk_widget_set_hexpand(editScroller, 0)
        gtk_widget_set_size_request(editScroller, 300, 240)
        Widgets.append(body, listSide, editScroller)
        Widgets.append(root, body)

        gtk_custom_filter_set_filter_func(
            filter,
            { item, data in
                guard let item, let data else { return 0 }
                return Unmanaged<RulesPage>.fromOpaque(data).takeUnretainedValue().matches(item) ? 1 : 0
            }, Unmanaged.passUnretained(self).toOpaque(), nil)
        // The count says how many rows the search shows once it has gone through them all.
        Signals.withObject(UnsafeMutableRawPointer(filtered), "notify::pending") { [unowned self] _ in updateCount() }
        Signals.withObject(UnsafeMutableRawPointer(factory), "setup") { item in Self.setUpRow(item) }
        Signals.withObject(UnsafeMutableRawPointer(factory), "bind") { [unowned self] item in bindRow(item) }
        Signals.on(search, "search-changed") { [unowned self] in searchChanged() }
        Signals.withObject(UnsafeMutableRawPointer(selection), "notify::selected") { [unowned self] _ in
            selectionChanged()
        }
        editor.saved = { [unowned self] pattern in
            context.reload()
            select(pattern: pattern)
        }
        editor.removed = { context.reload() }
    }

    /// Reads the rules again (after an edit here, or one from elsewhere),
    /// keeping the search and, when it still exists, the selected rule.
    func reload() {
        let selected = selectedRule?.pattern
        do {
            rules = try context.replica.rules()
            var cannot: [String: String] = [:]
            for (rule, reason, _) in try context.replica.rulesThatCannotDecide(among: rules) {
                cannot[rule.pattern] = reason
            }
            problems = rules.map { cannot[$0.pattern] }
        } catch {
            context.show(error: "Could not read the rules: \(error)")
        }
        haystacks = rules.map { Array("\($0.pattern) \($0.browser)".lowercased().utf8) }
        Widgets.replaceAll(in: positions, with: rules.indices.map { String($0) })
        editor.reload()
        tester.retest()
        updateCount()
        if let selected { select(pattern: selected) }
    }

    func focusSearch() { gtk_widget_grab_focus(search) }
    func focusTester() { tester.focus() }
    func save() { editor.save() }

    func startNewRule() {
        unselect()
        editor.edit(nil)
        editor.focusPattern()
    }

    func removeSelected() { editor.removeShown() }

    /// Whether the keyboard is in the list (Delete removes the rule shown there).
    var listHasFocus: Bool {
        guard let focus = gtk_root_get_focus(gtk_widget_get_root(listView)) else { return false }
        return focus == listView || gtk_widget_is_ancestor(focus, listView) != 0
    }

    /// Side by side from `wide` and up, else stacked.
    func setWide(_ wide: Bool) {
        gtk_orientable_set_orientation(
            brsync_orientable(body), wide ? GTK_ORIENTATION_HORIZONTAL : GTK_ORIENTATION_VERTICAL)
        // Beside the list it keeps a column's width; under it, the window's.
        gtk_widget_set_size_request(editScroller, wide ? 300 : -1, 240)
    }

    // MARK: - Search

    private func searchChanged() {
        let started = g_get_monotonic_time()
        let text = Widgets.text(of: search).lowercased()
        words = text.split(whereSeparator: \.isWhitespace).map { Array($0.utf8) }
        gtk_filter_changed(brsync_filter(UnsafeMutableRawPointer(filter)), GTK_FILTER_CHANGE_DIFFERENT)
        updateCount()
        context.measured("filter", since: started)
    }

    private func matches(_ item: gpointer) -> Bool {
        guard !words.isEmpty else { return true }
        guard let index = Self.index(of: item), index < haystacks.count else { return false }
        let haystack = haystacks[index]
        return words.allSatisfy { Self.contains(haystack, $0) }
    }

    /// Whether `needle` occurs in `haystack` (bytes: the search is case-folded once, at load).
    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard let first = needle.first, needle.count <= haystack.count else { return needle.isEmpty }
        let last = haystack.count - needle.count
        var start = 0
        while start <= last {
            if haystack[start] == first {
                var offset = 1
                while offset < needle.count && haystack[start + offset] == needle[offset] { offset += 1 }
                if offset == needle.count { return true }
            }
            start += 1
        }
        return false
    }

    private static func index(of item: gpointer) -> Int? {
        guard let text = gtk_string_object_get_string(brsync_string_object(item)) else { return nil }
        return Int(strtol(text, nil, 10))
    }

    private func updateCount() {
        let shown = g_list_model_get_n_items(brsync_list_model(UnsafeMutableRawPointer(selection)))
        let all = rules.count == 1 ? "1 rule" : "\(rules.count) rules"
        let text = words.isEmpty ? all : shown == 0 ? "none of \(all)" : "\(shown) of \(rules.count)"
        Widgets.setText(count, text)
        brsync_accessible_label(
            count, words.isEmpty ? all : shown == 0 ? "none of \(all)" : "\(shown) of \(all) shown")
    }

    // MARK: - Rows

    /// A row: the pattern, then its browser, app and priority, then why it
    /// decides nothing here (when it does not).
    private static func setUpRow(_ item: gpointer) {
        let row = Widgets.box(GTK_ORIENTATION_VERTICAL, spacing: 2)
        Widgets.setMargins(row, 6)
        let pattern = Widgets.label("")
        gtk_label_set_ellipsize(brsync_label(pattern), PANGO_ELLIPSIZE_MIDDLE)
        let detail = Widgets.label("", classes: ["dim-label", "caption"])
        gtk_label_set_ellipsize(brsync_label(detail), PANGO_ELLIPSIZE_END)
        let problem = Widgets.label("", classes: ["error", "caption"])
        gtk_label_set_ellipsize(brsync_label(problem), PANGO_ELLIPSIZE_END)
        Widgets.append(row, pattern, detail, problem)
        gtk_list_item_set_child(brsync_list_item(item), row)
    }

    private func bindRow(_ item: gpointer) {
        guard let object = gtk_list_item_get_item(brsync_list_item(item)), let index = Self.index(of: object),
            index < rules.count, let row = gtk_list_item_get_child(brsync_list_item(item)),
            let pattern = gtk_widget_get_first_child(row), let detail = gtk_widget_get_next_sibling(pattern),
            let problemLabel = gtk_widget_get_next_sibling(detail)
        else { return }
        let rule = rules[index]
        let shown = RuleText(rule.pattern)
        Widgets.setText(pattern, shown.pattern)
        var details = ["opens in \(rule.browser)", "priority \(rule.priority)"]
        if let app = shown.app { details.insert("links from \(app)", at: 0) }
        if rule.keepsTracking { details.append("keeps tracking parameters") }
        Widgets.setText(detail, details.joined(separator: " · "))
        let problem = problems[index].map { "Decides nothing here: \($0)" }
        Widgets.setText(problemLabel, problem ?? "")
        gtk_widget_set_visible(problemLabel, problem == nil ? 0 : 1)
        let spoken = DisplayText.printable(
            "\(shown.pattern), \(details.joined(separator: ", "))" + (problem.map { ". \($0)" } ?? ""))
        brsync_accessible_label(row, spoken)
        // The list's own row around it is what takes the focus, and is read.
        if let holder = gtk_widget_get_parent(row) { brsync_accessible_label(holder, spoken) }
    }

    // MARK: - Selection

    private var selectedRule: UrlRule? {
        guard let object = gtk_single_selection_get_selected_item(selection), let index = Self.index(of: object),
            index < rules.count
        else { return nil }
        return rules[index]
    }

    /// Another rule chosen in the list: the editor shows it, unless what it
    /// holds is not saved; then it asks first (Keep editing goes back to it).
    private func selectionChanged() {
        guard let rule = selectedRule, rule.pattern != editor.shownRule?.pattern else { return }
        guard editor.hasUnsavedChanges else { return editor.edit(rule) }
        let current = editor.shownRule?.pattern
        Dialogs.confirm(
            parent: context.window, title: "Discard your changes?",
            text: "The rule in the editor has changes that are not saved. Discard them and show "
                + "\(DisplayText.printable(rule.pattern))?",
            accept: "_Discard", accessibleName: "Discard the changes", cancel: "_Keep editing",
            cancelled: { [unowned self] in
                if let current { select(pattern: current) } else { unselect() }
            }
        ) { [unowned self] in editor.edit(rule) }
    }

    var hasUnsavedChanges: Bool { editor.hasUnsavedChanges }

    /// Clears the search when it holds text and has the keyboard (Escape
    /// there clears it, as in every search field): true when it did.
    func clearSearchIfFocused() -> Bool {
        guard let focus = gtk_root_get_focus(gtk_widget_get_root(search)),
            focus == search || gtk_widget_is_ancestor(focus, search) != 0, !Widgets.text(of: search).isEmpty
        else { return false }
        Widgets.setText(ofEntry: search, "")
        return true
    }

    private func unselect() {
        gtk_single_selection_set_selected(selection, GTK_INVALID_LIST_POSITION)
    }

    /// Selects the rule with `pattern` when the search shows it.
    private func select(pattern: String) {
        let model = brsync_list_model(UnsafeMutableRawPointer(selection))
        let shown = g_list_model_get_n_items(model)
        for position in 0..<shown {
            guard let object = g_list_model_get_item(model, position) else { continue }
            defer { g_object_unref(object) }
            if let index = Self.index(of: object), index < rules.count, rules[index].pattern == pattern {
                gtk_single_selection_set_selected(selection, position)
                brsync_list_view_scroll_to(listView, position)
                return
            }
        }
    }
}

/// A rule's pattern as the window shows it: the app it is for (`from:APP`)
/// apart from the rest.
struct RuleText {
    let app: String?
    let pattern: String

    init(_ text: String) {
        if text.lowercased().hasPrefix(Pattern.sourcePrefix), let space = text.firstIndex(of: " ") {
            app = String(text[text.index(text.startIndex, offsetBy: Pattern.sourcePrefix.count)..<space])
            pattern = String(text[text.index(after: space)...])
        } else {
            app = nil
            pattern = text
        }
    }
}
