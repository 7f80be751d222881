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

// The type casts, which GTK writes as macros: brsync_NAME(x) is GTK_NAME(x).
#define BRSYNC_CAST(name, Type, CAST, Argument) \
    static inline Type *brsync_##name(Argument object) { return CAST(object); }
BRSYNC_CAST(window, GtkWindow, GTK_WINDOW, GtkWidget *)
BRSYNC_CAST(box, GtkBox, GTK_BOX, GtkWidget *)
BRSYNC_CAST(label, GtkLabel, GTK_LABEL, GtkWidget *)
BRSYNC_CAST(list_box, GtkListBox, GTK_LIST_BOX, GtkWidget *)
BRSYNC_CAST(list_box_row, GtkListBoxRow, GTK_LIST_BOX_ROW, GtkWidget *)
BRSYNC_CAST(check_button, GtkCheckButton, GTK_CHECK_BUTTON, GtkWidget *)
BRSYNC_CAST(editable, GtkEditable, GTK_EDITABLE, GtkWidget *)
BRSYNC_CAST(image, GtkImage, GTK_IMAGE, GtkWidget *)
BRSYNC_CAST(widget, GtkWidget, GTK_WIDGET, gpointer)
BRSYNC_CAST(event_controller, GtkEventController, GTK_EVENT_CONTROLLER, gpointer)
BRSYNC_CAST(stack, GtkStack, GTK_STACK, GtkWidget *)
BRSYNC_CAST(orientable, GtkOrientable, GTK_ORIENTABLE, GtkWidget *)
BRSYNC_CAST(scrolled_window, GtkScrolledWindow, GTK_SCROLLED_WINDOW, GtkWidget *)
BRSYNC_CAST(list_view, GtkListView, GTK_LIST_VIEW, GtkWidget *)
BRSYNC_CAST(drop_down, GtkDropDown, GTK_DROP_DOWN, GtkWidget *)
BRSYNC_CAST(spin_button, GtkSpinButton, GTK_SPIN_BUTTON, GtkWidget *)
BRSYNC_CAST(switch, GtkSwitch, GTK_SWITCH, GtkWidget *)
BRSYNC_CAST(button, GtkButton, GTK_BUTTON, GtkWidget *)
BRSYNC_CAST(grid, GtkGrid, GTK_GRID, GtkWidget *)
BRSYNC_CAST(list_item, GtkListItem, GTK_LIST_ITEM, gpointer)
BRSYNC_CAST(string_object, GtkStringObject, GTK_STRING_OBJECT, gpointer)
BRSYNC_CAST(list_model, GListModel, G_LIST_MODEL, gpointer)
BRSYNC_CAST(selection_model, GtkSelectionModel, GTK_SELECTION_MODEL, gpointer)
BRSYNC_CAST(filter, GtkFilter, GTK_FILTER, gpointer)
BRSYNC_CAST(entry, GtkEntry, GTK_ENTRY, GtkWidget *)
BRSYNC_CAST(file_chooser, GtkFileChooser, GTK_FILE_CHOOSER, gpointer)
BRSYNC_CAST(native_dialog, GtkNativeDialog, GTK_NATIVE_DIALOG, gpointer)
BRSYNC_CAST(picture, GtkPicture, GTK_PICTURE, GtkWidget *)
BRSYNC_CAST(paintable, GdkPaintable, GDK_PAINTABLE, gpointer)

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

#endif
