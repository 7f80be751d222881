import BrsyncCommands
import CGtk
import Desktop
import JSON
import Model
import Replica

/// Adds, changes and removes one rule: its pattern (checked as it is typed,
/// with the messages of `brsync rules add`), its browser, the app it is for,
/// its priority, and whether its links keep their tracking parameters.
/// What was typed stays when something is wrong.
final class RuleEditor {
    let root: Widget
    private let context: SettingsContext
    /// Called with the saved rule's pattern.
    var saved: (String) -> Void = { _ in }
    var removed: () -> Void = {}

    private let title: Widget
    private let pattern: Widget
    private let check: Widget
    private let browser: Widget
    private let app: Widget
    private let priority: Widget
    private let keepTracking: Widget
    private let removeButton: Widget
    private let message: Widget
    /// The browsers the drop-down lists, by position.
    private var browserIDs: [String] = []
    /// The rule being changed; nil for a new one.
    private var editing: UrlRule?

    init(context: SettingsContext) {
        self.context = context
        root = Widgets.box(GTK_ORIENTATION_VERTICAL, spacing: 6)
        title = Widgets.heading("New rule")
        pattern = Widgets.entry(name: "Pattern", placeholder: "github.com, *.google.com, github.com/me/*")
        check = Widgets.label("", classes: ["dim-label"], wrap: true)
        browser = Widgets.dropDown([], name: "Browser")
        app = Widgets.entry(name: "Only links from app", placeholder: "any app (or com.slack.Slack, thunderbird…)")
        priority = Widgets.entry(name: "Priority", placeholder: "automatic: above every rule")
        keepTracking = Widgets.check("_Keep tracking parameters", name: "Keep tracking parameters")
        message = Widgets.label("", wrap: true)
        gtk_label_set_selectable(brsync_label(message), 1)
        brsync_accessible_label(message, "Message")
        let buttons = Widgets.box(GTK_ORIENTATION_HORIZONTAL)
        let saveButton = Widgets.button("_Save", key: "Ctrl+S")
        gtk_widget_add_css_class(saveButton, "suggested-action")
        removeButton = Widgets.button("_Remove", key: "Delete in the list")
        let newButton = Widgets.button("_New rule", key: "Ctrl+N")
        Widgets.append(buttons, saveButton, removeButton, newButton)
        Widgets.append(
            root, title, Self.caption("Pattern"), pattern, check, Self.caption("Browser"), browser,
            Self.caption("Only links from app (optional)"), app, Self.caption("Priority (higher decides first)"),
            priority, keepTracking, buttons, message)
        Signals.on(saveButton, "clicked") { [unowned self] in save() }
        Signals.on(removeButton, "clicked") { [unowned self] in removeShown() }
        Signals.on(newButton, "clicked") { [unowned self] in
            edit(nil)
            focusPattern()
        }
        Signals.on(pattern, "changed") { [unowned self] in checkPattern() }
        Signals.on(app, "changed") { [unowned self] in checkPattern() }
        Signals.on(pattern, "activate") { [unowned self] in save() }
        Signals.on(priority, "activate") { [unowned self] in save() }
        edit(nil)
    }

    private static func caption(_ text: String) -> Widget { Widgets.label(text, classes: ["caption"]) }

    /// The browsers may have changed: the drop-down lists them again,
    /// keeping the one chosen.
    func reload() {
        let chosen =
            browserIDs.indices.contains(Widgets.selected(browser)) ? browserIDs[Widgets.selected(browser)] : nil
        let browsers = (try? context.replica.browsers()) ?? []
        browserIDs = browsers.map(\.browser.id)
        Widgets.replaceItems(
            of: browser,
            with: browsers.map { DisplayText.printable("\($0.browser.name) (\($0.browser.id))") })
        let wanted = chosen ?? editing?.browser ?? browsers.first(where: \.isDefault)?.browser.id
        Widgets.select(browser, wanted.flatMap { browserIDs.firstIndex(of: $0) } ?? (browserIDs.isEmpty ? -1 : 0))
        guard let rule = editing else { return }
        guard let current = try? context.replica.rule(pattern: rule.pattern) else {
            // Removed elsewhere: what was typed stays, as a new rule.
            editing = nil
            showMode()
            return
        }
        if current != rule { takeChanges(from: current) }
    }

    /// The rule shown changed elsewhere (a sync, a terminal): each field the
    /// person did not touch shows its new value, each one typed keeps what
    /// was typed, and the person is told. Save then writes only what was
    /// typed: another machine's change is never put back unasked.
    private func takeChanges(from current: UrlRule) {
        guard let base = editing else { return }
        let typed = hasUnsavedChanges
        let was = RuleText(base.pattern)
        let now = RuleText(current.pattern)
        func follow(_ entry: Widget, _ old: String, _ new: String) {
            if WindowPicker.trimmed(Widgets.text(of: entry)) == old { Widgets.setText(ofEntry: entry, new) }
        }
        follow(pattern, was.pattern, now.pattern)
        follow(app, was.app ?? "", now.app ?? "")
        follow(priority, String(base.priority), String(current.priority))
        if Widgets.isActive(keepTracking) == base.keepsTracking {
            Widgets.setActive(keepTracking, current.keepsTracking)
        }
        let index = Widgets.selected(browser)
        if browserIDs.indices.contains(index), browserIDs[index] == base.browser,
            let moved = browserIDs.firstIndex(of: current.browser)
        {
            Widgets.select(browser, moved)
        }
        editing = current
        say(
            typed
                ? "This rule changed elsewhere while you edited it (now: \(current.browser), priority \(current.priority)). "
                    + "The fields you did not touch show it as it is now; Save writes what you typed over it."
                : "This rule changed elsewhere: it is shown as it is now (\(current.browser), priority \(current.priority)).",
            error: typed)
    }

    /// Shows `rule` for changing, or empty fields for a new one.
    func edit(_ rule: UrlRule?) {
        editing = rule
        let text = rule.map { RuleText($0.pattern) }
        Widgets.setText(ofEntry: pattern, text?.pattern ?? "")
        Widgets.setText(ofEntry: app, text?.app ?? "")
        Widgets.setText(ofEntry: priority, rule.map { String($0.priority) } ?? "")
        Widgets.setActive(keepTracking, rule?.keepsTracking ?? false)
        if let id = rule?.browser, let index = browserIDs.firstIndex(of: id) { Widgets.select(browser, index) }
        Widgets.setText(message, "")
        showMode()
        checkPattern()
    }

    private func showMode() {
        Widgets.setText(title, editing == nil ? "New rule" : "Edit rule")
        gtk_widget_set_sensitive(removeButton, editing == nil ? 0 : 1)
    }

    func focusPattern() { gtk_widget_grab_focus(pattern) }

    /// The rule shown, if any (nil while a new one is typed).
    var shownRule: UrlRule? { editing }

    /// Whether what the fields hold differs from the rule shown (or, for a
    /// new rule, whether anything was typed): closing or moving to another
    /// rule then asks first.
    var hasUnsavedChanges: Bool {
        let typed = (
            WindowPicker.trimmed(Widgets.text(of: pattern)), WindowPicker.trimmed(Widgets.text(of: app)),
            WindowPicker.trimmed(Widgets.text(of: priority))
        )
        guard let rule = editing else { return !typed.0.isEmpty || !typed.1.isEmpty || !typed.2.isEmpty }
        let shown = RuleText(rule.pattern)
        let index = Widgets.selected(browser)
        return typed.0 != shown.pattern || typed.1 != (shown.app ?? "") || typed.2 != String(rule.priority)
            || Widgets.isActive(keepTracking) != rule.keepsTracking
            || (browserIDs.indices.contains(index) && browserIDs[index] != rule.browser)
    }

    /// The pattern as a rule would hold it, with its app, or what is wrong
    /// (the words of `brsync rules add`).
    private func typedPattern() -> Result<String, RuleProblem> {
        let text = WindowPicker.trimmed(Widgets.text(of: pattern))
        var appText = WindowPicker.trimmed(Widgets.text(of: app))
        if appText.lowercased().hasSuffix(".desktop") { appText = String(appText.dropLast(8)) }
        if !appText.isEmpty, let problem = Pattern.sourceIDProblem(appText) {
            return .failure(RuleProblem("App: \(problem)"))
        }
        let full = appText.isEmpty ? text : "\(Pattern.sourcePrefix)\(appText) \(text)"
        do {
            _ = try Pattern(full)
            return .success(full)
        } catch {
            return .failure(RuleProblem(error.description))
        }
    }

    private func checkPattern() {
        // What the last Save said no longer applies once the fields change.
        Widgets.setText(message, "")
        if WindowPicker.trimmed(Widgets.text(of: pattern)).isEmpty {
            Widgets.setText(check, "Type a pattern: a domain, a path (github.com/me/*), or https://… for one scheme.")
            return
        }
        switch typedPattern() {
        case .success(let full):
            let reach = WindowPicker.Request.rememberLabel(for: full)
                .replacingOccurrences(of: "Remember for ", with: "")
            Widgets.setText(check, "Valid: the rule decides \(reach == "Remember" ? "these links" : reach).")
            gtk_widget_remove_css_class(check, "error")
        case .failure(let problem):
            Widgets.setText(check, problem.message)
            gtk_widget_add_css_class(check, "error")
        }
    }

    func save() {
        let full: String
        switch typedPattern() {
        case .success(let text): full = text
        case .failure(let problem):
            say(problem.message, error: true)
            return
        }
        let priorityText = WindowPicker.trimmed(Widgets.text(of: priority))
        var chosenPriority: Int?
        if !priorityText.isEmpty {
            guard let number = Int(priorityText) else {
                say("Priority: a whole number (10, -5), or empty for above every rule.", error: true)
                return
            }
            chosenPriority = number
        }
        let index = Widgets.selected(browser)
        guard browserIDs.indices.contains(index) else {
            say("Choose a browser (the Browsers page finds those installed here).", error: true)
            return
        }
        let keep = Widgets.isActive(keepTracking)
        do {
            let (rule, created) = try context.replica.addRule(
                pattern: full, browser: browserIDs[index], priority: chosenPriority,
                keepTracking: keep ? true : (editing?.keepsTracking == true ? false : nil))
            // A changed pattern is another rule: the old one goes once the new one is saved.
            if let old = editing, let oldKey = try? Pattern(old.pattern).key, let newKey = try? Pattern(full).key,
                oldKey != newKey
            {
                _ = try context.replica.removeRule(pattern: old.pattern)
            }
            let renamed = editing.map { $0.pattern != rule.pattern } ?? false
            let was = editing?.pattern
            // The fields now show the rule as saved (its priority, when left to be chosen).
            edit(rule)
            say(
                "\(created && !renamed ? "Added" : "Saved") rule \(rule.pattern) → \(rule.browser) (priority \(rule.priority))"
                    + (renamed ? ", which replaces \(was ?? "")." : "."), error: false)
            saved(rule.pattern)
        } catch {
            say("\(error)", error: true)
        }
    }

    func removeShown() {
        guard let rule = editing else { return }
        do {
            let gone = try context.replica.removeRule(pattern: rule.pattern)
            editing = nil
            showMode()
            say("Removed rule \(gone.pattern) → \(gone.browser). Save puts it back.", error: false)
            removed()
        } catch {
            say("\(error)", error: true)
        }
    }

    private func say(_ text: String, error: Bool) {
        Widgets.setText(message, text)
        if error { gtk_widget_add_css_class(message, "error") } else { gtk_widget_remove_css_class(message, "error") }
        brsync_accessible_label(message, text)
        context.showMessage(text, error)
    }
}

/// What is wrong with what was typed, in words for the person.
struct RuleProblem: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}
