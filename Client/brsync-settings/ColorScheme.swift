import CGtk
import SystemServices

/// Light or dark as the desktop says: the freedesktop settings portal's
/// `org.freedesktop.appearance color-scheme` (GNOME, KDE and others answer
/// it), read once at start and followed while the window is open. Plain
/// GTK does not ask the portal itself (libadwaita would). Without a session
/// bus or a portal, GTK's own setting (the theme) decides.
enum ColorScheme {
    static let portal = "org.freedesktop.portal.Desktop"
    static let path = "/org/freedesktop/portal/desktop"
    static let interface = "org.freedesktop.portal.Settings"

    static func follow() {
        // Without an address GLib would try to start a bus (dbus-launch): not for a window.
        guard !(ProcessEnvironment.value("DBUS_SESSION_BUS_ADDRESS") ?? "").isEmpty,
            let bus = g_bus_get_sync(G_BUS_TYPE_SESSION, nil, nil)
        else { return }
        var arguments = [
            g_variant_new_string("org.freedesktop.appearance"), g_variant_new_string("color-scheme"),
        ]
        let parameters = arguments.withUnsafeMutableBufferPointer { g_variant_new_tuple($0.baseAddress, 2) }
        g_dbus_connection_call(
            bus, portal, path, interface, "Read", parameters, nil, G_DBUS_CALL_FLAGS_NONE, 2000, nil,
            { source, result, _ in
                guard let source, let result else { return }
                guard
                    let reply = g_dbus_connection_call_finish(OpaquePointer(source), result, nil)
                else { return } // no portal: GTK's own setting stays
                defer { g_variant_unref(reply) }
                if let value = g_variant_get_child_value(reply, 0) {
                    ColorScheme.apply(brsync_color_scheme(value))
                    g_variant_unref(value)
                }
            }, nil)
        g_dbus_connection_signal_subscribe(
            bus, portal, interface, "SettingChanged", path, nil, G_DBUS_SIGNAL_FLAGS_NONE,
            { _, _, _, _, _, parameters, _ in
                guard let parameters else { return }
                let scheme = brsync_color_scheme_changed(parameters)
                if scheme >= 0 { ColorScheme.apply(scheme) }
            }, nil, nil)
    }

    /// 1 prefers dark; 0 (no preference) and 2 (light) are light.
    static func apply(_ scheme: Int32) {
        guard scheme >= 0 else { return }
        brsync_prefer_dark(scheme == 1 ? 1 : 0)
    }
}
