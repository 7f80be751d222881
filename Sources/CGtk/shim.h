#ifndef BRSYNC_CGTK_SHIM_H
#define BRSYNC_CGTK_SHIM_H

// GTK 4 for brsync-picker and brsync-settings (and nothing else: brsync
// never loads GTK).
// What Swift cannot import is wrapped here: g_signal_connect and the type
// casts are macros, gtk_accessible_update_property is variadic.
#include <gtk/gtk.h>

static inline gulong brsync_signal_connect(gpointer instance, const char *signal, GCallback handler, gpointer data) {
    return g_signal_connect_data(instance, signal, handler, data, NULL, (GConnectFlags)0);
}

static inline GtkWindow *brsync_window(GtkWidget *widget) { return GTK_WINDOW(widget); }
static inline GtkBox *brsync_box(GtkWidget *widget) { return GTK_BOX(widget); }
static inline GtkLabel *brsync_label(GtkWidget *widget) { return GTK_LABEL(widget); }
static inline GtkListBox *brsync_list_box(GtkWidget *widget) { return GTK_LIST_BOX(widget); }
static inline GtkListBoxRow *brsync_list_box_row(GtkWidget *widget) { return GTK_LIST_BOX_ROW(widget); }
static inline GtkCheckButton *brsync_check_button(GtkWidget *widget) { return GTK_CHECK_BUTTON(widget); }
static inline GtkEditable *brsync_editable(GtkWidget *widget) { return GTK_EDITABLE(widget); }
static inline GtkImage *brsync_image(GtkWidget *widget) { return GTK_IMAGE(widget); }
static inline GtkWidget *brsync_widget(gpointer object) { return GTK_WIDGET(object); }
static inline GtkEventController *brsync_event_controller(gpointer object) { return GTK_EVENT_CONTROLLER(object); }

// The name a screen reader reads for `widget`.
static inline void brsync_accessible_label(GtkWidget *widget, const char *label) {
    gtk_accessible_update_property(GTK_ACCESSIBLE(widget), GTK_ACCESSIBLE_PROPERTY_LABEL, label, -1);
}

// A button whose text has a mnemonic (`_Open`). Screen readers name it from
// its text alone: GTK 4.8 names a button from its label property and its
// child's text both ("_Open Open", as gtk_button_new_with_mnemonic makes it).
static inline GtkWidget *brsync_mnemonic_button(const char *text) {
    GtkWidget *button = gtk_button_new();
    GtkWidget *label = gtk_label_new_with_mnemonic(text);
    gtk_label_set_mnemonic_widget(GTK_LABEL(label), button);
    gtk_button_set_child(GTK_BUTTON(button), label);
    return button;
}

// An image screen readers skip (its row already says what it shows).
static inline GtkWidget *brsync_decorative_image(void) {
    return GTK_WIDGET(g_object_new(GTK_TYPE_IMAGE, "accessible-role", GTK_ACCESSIBLE_ROLE_PRESENTATION, NULL));
}

// The description a screen reader reads after the name (the pattern's check).
static inline void brsync_accessible_description(GtkWidget *widget, const char *text) {
    gtk_accessible_update_property(GTK_ACCESSIBLE(widget), GTK_ACCESSIBLE_PROPERTY_DESCRIPTION, text, -1);
}

// Centres `window` on its monitor under X11 (GTK 4 has no call for it; on
// Wayland the compositor places windows and this does nothing). Called once
// the window is mapped and has its size; returns 0 until then (or on
// Wayland), 1 once moved.
#ifdef GDK_WINDOWING_X11
#include <gdk/x11/gdkx.h>
#endif
static inline int brsync_center_on_monitor(GtkWidget *window) {
#ifdef GDK_WINDOWING_X11
    GdkSurface *surface = gtk_native_get_surface(GTK_NATIVE(window));
    if (surface == NULL || !gtk_widget_get_mapped(window)) return 0;
    GdkDisplay *display = gdk_surface_get_display(surface);
    if (!GDK_IS_X11_DISPLAY(display)) return 1;
    GdkMonitor *monitor = gdk_display_get_monitor_at_surface(display, surface);
    int width = gdk_surface_get_width(surface), height = gdk_surface_get_height(surface);
    if (monitor == NULL || width <= 1 || height <= 1) return 0;
    GdkRectangle area;
    gdk_monitor_get_geometry(monitor, &area);
    XMoveWindow(gdk_x11_display_get_xdisplay(display), gdk_x11_surface_get_xid(surface),
                area.x + (area.width - width) / 2, area.y + (area.height - height) / 2);
    return 1;
#else
    return 1;
#endif
}

// A handler with data the connection owns: `destroy` runs when the handler
// is disconnected or the instance finalized (brsync-settings connects Swift
// closures this way).
static inline gulong brsync_signal_connect_owned(
    gpointer instance, const char *signal, GCallback handler, gpointer data, GClosureNotify destroy) {
    return g_signal_connect_data(instance, signal, handler, data, destroy, (GConnectFlags)0);
}

static inline GtkStack *brsync_stack(GtkWidget *widget) { return GTK_STACK(widget); }
static inline GtkOrientable *brsync_orientable(GtkWidget *widget) { return GTK_ORIENTABLE(widget); }
static inline GtkScrolledWindow *brsync_scrolled_window(GtkWidget *widget) { return GTK_SCROLLED_WINDOW(widget); }
static inline GtkListView *brsync_list_view(GtkWidget *widget) { return GTK_LIST_VIEW(widget); }
static inline GtkDropDown *brsync_drop_down(GtkWidget *widget) { return GTK_DROP_DOWN(widget); }
static inline GtkSpinButton *brsync_spin_button(GtkWidget *widget) { return GTK_SPIN_BUTTON(widget); }
static inline GtkSwitch *brsync_switch(GtkWidget *widget) { return GTK_SWITCH(widget); }
static inline GtkButton *brsync_button(GtkWidget *widget) { return GTK_BUTTON(widget); }
static inline GtkGrid *brsync_grid(GtkWidget *widget) { return GTK_GRID(widget); }
static inline GtkListItem *brsync_list_item(gpointer object) { return GTK_LIST_ITEM(object); }
static inline GtkStringObject *brsync_string_object(gpointer object) { return GTK_STRING_OBJECT(object); }
static inline GListModel *brsync_list_model(gpointer object) { return G_LIST_MODEL(object); }
static inline GtkSelectionModel *brsync_selection_model(gpointer object) { return GTK_SELECTION_MODEL(object); }
static inline GtkFilter *brsync_filter(gpointer object) { return GTK_FILTER(object); }

// The freedesktop portal's org.freedesktop.appearance color-scheme (1 dark,
// 2 light, 0 no preference; -1 not a number) from a Settings.Read reply or
// a SettingChanged value: a uint32, boxed in one or two variants.
static inline int brsync_color_scheme(GVariant *value) {
    GVariant *inner = g_variant_ref(value);
    for (int depth = 0; depth < 3 && g_variant_is_of_type(inner, G_VARIANT_TYPE_VARIANT); depth++) {
        GVariant *next = g_variant_get_variant(inner);
        g_variant_unref(inner);
        inner = next;
    }
    int scheme = g_variant_is_of_type(inner, G_VARIANT_TYPE_UINT32) ? (int)g_variant_get_uint32(inner) : -1;
    g_variant_unref(inner);
    return scheme;
}

// Dark or light widgets for the whole program (GtkSettings'
// gtk-application-prefer-dark-theme; g_object_set is variadic).
static inline void brsync_prefer_dark(int dark) {
    GtkSettings *settings = gtk_settings_get_default();
    if (settings != NULL) g_object_set(settings, "gtk-application-prefer-dark-theme", dark ? TRUE : FALSE, NULL);
}

// The color scheme a portal SettingChanged signal carries, when its
// parameters ("(ssv)") are org.freedesktop.appearance's color-scheme; else -1.
static inline int brsync_color_scheme_changed(GVariant *parameters) {
    if (!g_variant_is_of_type(parameters, G_VARIANT_TYPE("(ssv)"))) return -1;
    const char *namespace_ = NULL, *key = NULL;
    GVariant *value = NULL;
    g_variant_get(parameters, "(&s&sv)", &namespace_, &key, &value);
    int scheme = -1;
    if (g_strcmp0(namespace_, "org.freedesktop.appearance") == 0 && g_strcmp0(key, "color-scheme") == 0)
        scheme = brsync_color_scheme(value);
    g_variant_unref(value);
    return scheme;
}

// Scrolls a list view to `position` (gtk_list_view_scroll_to is GTK 4.12).
static inline void brsync_list_view_scroll_to(GtkWidget *list, guint position) {
    gtk_widget_activate_action(list, "list.scroll-to-item", "u", position);
}

static inline GtkEntry *brsync_entry(GtkWidget *widget) { return GTK_ENTRY(widget); }
static inline GtkFileChooser *brsync_file_chooser(gpointer object) { return GTK_FILE_CHOOSER(object); }
static inline GtkNativeDialog *brsync_native_dialog(gpointer object) { return GTK_NATIVE_DIALOG(object); }

#endif
