import CGtk
import Glibc
import SystemServices

/// The window: its pages (a sidebar beside them when wide, a page menu above
/// them when narrow), a line at the foot that says what the last action did,
/// and the keys: Escape or Ctrl+W closes (asking first when a rule being
/// edited is not saved; Escape in a search that holds text clears it),
/// Ctrl+1…7 picks a page, Ctrl+F
/// searches the rules, Ctrl+N starts a rule, Ctrl+S saves it, Ctrl+T tests
/// a link, Ctrl+D finds installed browsers, Delete in the rules list removes
/// the rule shown.
///
/// Plain GTK 4, not libadwaita: Debian's libadwaita (1.2) has no breakpoints
/// and its AdwLeaflet is deprecated in later versions, so the width is
/// followed by hand; and the picker, also plain GTK, then looks the same.
final class SettingsWindow {
    let window: Widget
    private let context: SettingsContext
    private let stack: Widget
    private let sidebar: Widget
    private let pageMenu: Widget
    private let footer: Widget
    let rules: RulesPage
    let browsers: BrowsersPage
    let cleanup: CleanupPage
    let desktop: DesktopPage
    let exchange: ExchangePage
    let sync: SyncPage
    let encryption: EncryptionPage
    private let pages: [(id: String, title: String, root: Widget)]
    private(set) var closed = false
    private var wide: Bool?

    /// Below this width (px) the sidebar gives way to a page menu, and the
    /// rules editor goes under the list.
    static let narrowBelow: Int32 = 720

    init(context: SettingsContext) {
        self.context = context
        window = gtk_window_new()!
        gtk_window_set_title(brsync_window(window), "brsync Settings")
        // As large as a laptop's screen wants, never larger than this one's (a phone's is 360 px wide).
        let screen = Self.screenSize()
        gtk_window_set_default_size(brsync_window(window), min(980, screen.width), min(700, screen.height))
        gtk_widget_set_size_request(window, 360, 480)
        brsync_accessible_description(window, "Browsers, rules and this desktop")
        context.window = window

        rules = RulesPage(context: context)
        browsers = BrowsersPage(context: context)
        cleanup = CleanupPage(context: context)
        desktop = DesktopPage(context: context)
        exchange = ExchangePage(context: context)
        sync = SyncPage(context: context)
        encryption = EncryptionPage(context: context)
        pages = [
            ("rules", "Rules", rules.root),
            ("browsers", "Browsers", browsers.root),
            ("cleanup", "Link cleanup", Widgets.scrolled(cleanup.root)),
            ("desktop", "This desktop", Widgets.scrolled(desktop.root)),
            ("exchange", "Import and export", Widgets.scrolled(exchange.root)),
            ("sync", "Sync", Widgets.scrolled(sync.root)),
            ("encryption", "Encryption", Widgets.scrolled(encryption.root)),
        ]
        stack = Self.pageStack(pages)
        sidebar = Self.pageSidebar(pages)
        pageMenu = Widgets.dropDown(pages.map(\.title), name: "Page")
        Widgets.setMargins(pageMenu, 6)

        footer = Widgets.label("", classes: ["dim-label"], wrap: true)
        Widgets.setMargins(footer, 8)
        gtk_label_set_selectable(brsync_label(footer), 1)
        brsync_accessible_label(footer, "Status")

        let content = Widgets.box(GTK_ORIENTATION_HORIZONTAL, spacing: 0)
        Widgets.append(content, sidebar, gtk_separator_new(GTK_ORIENTATION_VERTICAL), stack)
        let outer = Widgets.box(GTK_ORIENTATION_VERTICAL, spacing: 0)
        Widgets.append(outer, pageMenu, content, gtk_separator_new(GTK_ORIENTATION_HORIZONTAL), footer)
        gtk_window_set_child(brsync_window(window), outer)

        connectPages()
        connectSignals()
        fitWidth()
    }

    /// The pages, one shown at a time.
    private static func pageStack(_ pages: [(id: String, title: String, root: Widget)]) -> Widget {
        let stack = gtk_stack_new()!
        gtk_stack_set_transition_type(brsync_stack(stack), GTK_STACK_TRANSITION_TYPE_NONE)
        // Each page asks for its own width, not the widest page's.
        gtk_stack_set_hhomogeneous(brsync_stack(stack), 0)
        for page in pages {
            gtk_stack_add_titled(brsync_stack(stack), page.root, page.id, page.title)
        }
        gtk_widget_set_hexpand(stack, 1)
        gtk_widget_set_vexpand(stack, 1)
        return stack
    }

    private static func pageSidebar(_ pages: [(id: String, title: String, root: Widget)]) -> Widget {
        // The pages as a list of their own (not GtkStackSidebar: its rows cannot be named for screen readers).
        let sidebar = gtk_list_box_new()!
        gtk_list_box_set_selection_mode(brsync_list_box(sidebar), GTK_SELECTION_BROWSE)
        gtk_widget_add_css_class(sidebar, "navigation-sidebar")
        gtk_widget_set_size_request(sidebar, 140, -1)
        brsync_accessible_label(sidebar, "Pages")
        for (index, page) in pages.enumerated() {
            let label = Widgets.label(page.title)
            Widgets.setMargins(label, 8)
            gtk_list_box_append(brsync_list_box(sidebar), label)
            if let row = gtk_widget_get_parent(label) {
                brsync_accessible_label(row, "\(page.title) (Ctrl+\(index + 1))")
            }
        }
        return sidebar
    }

    /// What the pages ask of each other and of the window.
    private func connectPages() {
        desktop.showPage = { [unowned self] id in show(page: id) }
        desktop.findBrowsers = { [unowned self] in browsers.detectNow() }
        sync.attention.showEncryption = { [unowned self] in
            show(page: "encryption")
            encryption.focusCode()
        }
        sync.attention.approveProfile = { [unowned self] local in browsers.askApproval(local) }
        context.showMessage = { [unowned self] text, isError in
            Widgets.setText(footer, text)
            brsync_accessible_label(footer, "Status: \(text)")
            if isError {
                gtk_widget_add_css_class(footer, "error")
            } else {
                gtk_widget_remove_css_class(footer, "error")
            }
        }
        context.reloadPages = { [unowned self] in
            rules.reload()
            browsers.reload()
            cleanup.reload()
            desktop.reload()
            sync.reload()
            encryption.reload()
        }
    }

    /// The window's own signals: closing, the page menu and sidebar, its width, the keys.
    private func connectSignals() {
        // Closed by the window manager's button: a rule being typed is not lost unasked.
        Signals.handling(window, "close-request") { [unowned self] in
            guard rules.hasUnsavedChanges, !closing else {
                closed = true
                return false
            }
            askBeforeClosing()
            return true
        }
        Signals.withObject(pageMenu, "notify::selected") { [unowned self] _ in
            let index = Widgets.selected(pageMenu)
            if pages.indices.contains(index) { show(page: pages[index].id) }
        }
        Signals.withObject(sidebar, "row-selected") { [unowned self] row in
            let index = Int(gtk_list_box_row_get_index(brsync_list_box_row(brsync_widget(row))))
            if pages.indices.contains(index) { show(page: pages[index].id) }
        }
        Signals.withObject(stack, "notify::visible-child") { [unowned self] _ in
            let id = String(cString: gtk_stack_get_visible_child_name(brsync_stack(stack)))
            guard let index = pages.firstIndex(where: { $0.id == id }) else { return }
            if Widgets.selected(pageMenu) != index { Widgets.select(pageMenu, index) }
            if let row = gtk_list_box_get_row_at_index(brsync_list_box(sidebar), Int32(index)),
                gtk_list_box_get_selected_row(brsync_list_box(sidebar)) != row
            {
                gtk_list_box_select_row(brsync_list_box(sidebar), row)
            }
        }
        Signals.withObject(window, "notify::default-width") { [unowned self] _ in fitWidth() }
        let keys = gtk_event_controller_key_new()!
        gtk_event_controller_set_propagation_phase(
            brsync_event_controller(UnsafeMutableRawPointer(keys)), GTK_PHASE_CAPTURE)
        gtk_widget_add_controller(window, brsync_event_controller(UnsafeMutableRawPointer(keys)))
        Signals.keys(UnsafeMutableRawPointer(keys)) { [unowned self] key, control, _, _ in
            keyPressed(key, control: control)
        }
    }

    /// The first monitor's size (the whole X screen under Xvfb); 1920×1080 when none is known.
    static func screenSize() -> (width: Int32, height: Int32) {
        guard let display = gdk_display_get_default(), let monitors = gdk_display_get_monitors(display),
            g_list_model_get_n_items(monitors) > 0, let monitor = g_list_model_get_item(monitors, 0)
        else { return (1920, 1080) }
        defer { g_object_unref(monitor) }
        var area = GdkRectangle()
        gdk_monitor_get_geometry(OpaquePointer(monitor), &area)
        return area.width > 0 && area.height > 0 ? (area.width, area.height) : (1920, 1080)
    }

    func present() {
        gtk_window_present(brsync_window(window))
        if let clock = gtk_widget_get_frame_clock(window) {
            Signals.on(UnsafeMutableRawPointer(clock), "after-paint") { [weak context] in context?.painted() }
        }
        // Edits from elsewhere (a sync, a command in a terminal) show within half a second.
        Signals.every(milliseconds: 500) { [weak self] in
            guard let self, !closed else { return false }
            context.reloadIfChangedElsewhere()
            fitWidth()
            return true
        }
    }

    func show(page id: String) {
        gtk_stack_set_visible_child_name(brsync_stack(stack), id)
    }

    private var visiblePage: String {
        String(cString: gtk_stack_get_visible_child_name(brsync_stack(stack)))
    }

    /// Sidebar or page menu, editor beside or under the rules, by the window's width.
    private func fitWidth() {
        var width = gtk_widget_get_width(window)
        if width <= 1 {
            var (defaultWidth, defaultHeight): (Int32, Int32) = (0, 0)
            gtk_window_get_default_size(brsync_window(window), &defaultWidth, &defaultHeight)
            width = defaultWidth
        }
        let isWide = width >= Self.narrowBelow
        guard isWide != wide else { return }
        wide = isWide
        gtk_widget_set_visible(sidebar, isWide ? 1 : 0)
        gtk_widget_set_visible(pageMenu, isWide ? 0 : 1)
        rules.setWide(isWide)
    }

    /// Set while closing after the person said so (the close request then goes through).
    private var closing = false

    func close() {
        closing = true
        closed = true
        gtk_window_destroy(brsync_window(window))
    }

    /// The rule editor holds what was not saved: closing asks first.
    private func askBeforeClosing() {
        show(page: "rules")
        Dialogs.confirm(
            parent: window, title: "Close without saving?",
            text: "The rule in the editor has changes that are not saved. Close the window and lose them?",
            accept: "_Close without saving", accessibleName: "Close without saving", cancel: "_Keep editing"
        ) { [unowned self] in close() }
    }

    /// Ctrl+key shortcuts that go to a page and act there.
    private var pageShortcuts: [guint: (page: String, action: () -> Void)] {
        [
            guint(GDK_KEY_f): ("rules", rules.focusSearch),
            guint(GDK_KEY_n): ("rules", rules.startNewRule),
            guint(GDK_KEY_t): ("rules", rules.focusTester),
            guint(GDK_KEY_d): ("browsers", browsers.detectNow),
        ]
    }

    private func keyPressed(_ key: guint, control: Bool) -> Bool {
        switch (key, control) {
        case (guint(GDK_KEY_Escape), false) where rules.clearSearchIfFocused():
            return true
        case (guint(GDK_KEY_Escape), _), (guint(GDK_KEY_w), true), (guint(GDK_KEY_W), true):
            if rules.hasUnsavedChanges { askBeforeClosing() } else { close() }
            return true
        case (guint(GDK_KEY_1)...guint(GDK_KEY_9), true):
            let index = Int(key - guint(GDK_KEY_1))
            guard pages.indices.contains(index) else { return false }
            show(page: pages[index].id)
            return true
        case (guint(GDK_KEY_s), true) where visiblePage == "rules":
            rules.save()
            return true
        case (_, true):
            guard let (page, action) = pageShortcuts[key] else { return false }
            show(page: page)
            action()
            return true
        case (guint(GDK_KEY_Delete), false) where visiblePage == "rules" && rules.listHasFocus:
            rules.removeSelected()
            return true
        default:
            return false
        }
    }
}
