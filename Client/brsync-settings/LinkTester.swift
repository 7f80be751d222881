import BrsyncCommands
import CGtk
import Desktop
import JSON
import Model
import Replica

/// "Test a link": what would open a link, and why, as `brsync explain`
/// says it (the rules filed under the link's host, so 20,000 rules answer at
/// once), for a link clicked anywhere or in one app.
final class LinkTester {
    let root: Widget
    private let context: SettingsContext
    private let link: Widget
    private let app: Widget
    private let decision: Widget
    private let details: Widget

    init(context: SettingsContext) {
        self.context = context
        root = Widgets.box(GTK_ORIENTATION_VERTICAL, spacing: 6)
        link = Widgets.entry(name: "Link to test", placeholder: "https://github.com/someone/project")
        gtk_widget_set_tooltip_text(link, "Test a link (Ctrl+T)")
        app = Widgets.entry(name: "Clicked in app", placeholder: "any app")
        decision = Widgets.label("", classes: ["heading"], wrap: true)
        gtk_label_set_selectable(brsync_label(decision), 1)
        details = Widgets.label("", classes: ["monospace", "dim-label"], wrap: true)
        gtk_label_set_selectable(brsync_label(details), 1)
        Widgets.append(
            root, Widgets.heading("Test a link"), link,
            Widgets.label("Clicked in app (optional)", classes: ["caption"]),
            app, decision, details)
        Signals.on(link, "changed") { [unowned self] in retest() }
        Signals.on(app, "changed") { [unowned self] in retest() }
        retest()
    }

    func focus() { gtk_widget_grab_focus(link) }

    /// Answers for the link typed (again after an edit: the answer may change).
    func retest() {
        let text = WindowPicker.trimmed(Widgets.text(of: link))
        guard !text.isEmpty else {
            show("Type a link to see which browser opens it, and why.", details: "")
            return
        }
        let url: NormalizedURL
        do {
            url = try NormalizedURL(text)
        } catch {
            show("\(error)", details: "", error: true)
            return
        }
        var source = WindowPicker.trimmed(Widgets.text(of: app))
        if source.lowercased().hasSuffix(".desktop") { source = String(source.dropLast(8)) }
        if !source.isEmpty, let problem = Pattern.sourceIDProblem(source) {
            show("App: \(problem)", details: "", error: true)
            return
        }
        do {
            let (resolution, verdicts) = try context.replica.explain(
                url, from: source.isEmpty ? nil : source, onlyCandidates: true)
            let lines = try Explain.lines(
                url, resolution: resolution, verdicts: verdicts, replica: context.replica,
                source: source.isEmpty ? nil : source)
            show(Self.sentence(resolution), details: lines.joined(separator: "\n"))
        } catch {
            show("\(error)", details: "", error: true)
        }
    }

    /// The answer in a sentence.
    static func sentence(_ resolution: Resolution) -> String {
        let browser = resolution.browser.map { "\($0.browser.name) (\($0.browser.id))" } ?? "?"
        switch resolution.source {
        case .rule: return "Opens in \(browser): the rule \(resolution.rule?.pattern ?? "?") decides."
        case .defaultBrowser: return "Opens in \(browser), the default browser: no rule decides."
        case .none: return "No rule decides and there is no default browser: the picker asks."
        }
    }

    private func show(_ answer: String, details text: String, error: Bool = false) {
        Widgets.setText(decision, answer)
        brsync_accessible_label(decision, "Result: \(DisplayText.printable(answer))")
        if error { gtk_widget_add_css_class(decision, "error") } else { gtk_widget_remove_css_class(decision, "error") }
        Widgets.setText(details, text)
        gtk_widget_set_visible(details, text.isEmpty ? 0 : 1)
    }
}
