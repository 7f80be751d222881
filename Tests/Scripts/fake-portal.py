#!/usr/bin/python3
"""A stand-in for the freedesktop settings portal on the session bus: it
answers org.freedesktop.portal.Settings.Read for org.freedesktop.appearance
color-scheme with SCHEME (1 dark, 2 light, 0 none), and when it gets SIGUSR1
it changes to 1 - (SCHEME == 1) and sends SettingChanged, as a desktop does
when its style is switched.

    fake-portal.py SCHEME

The settings window's tests start it (on a bus of their own) before the window."""
import signal
import sys

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

XML = """
<node>
  <interface name="org.freedesktop.portal.Settings">
    <method name="Read"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="out"/></method>
    <signal name="SettingChanged"><arg type="s"/><arg type="s"/><arg type="v"/></signal>
  </interface>
</node>"""
scheme = int(sys.argv[1])
connection = None


def call(connection, sender, path, interface, method, parameters, invocation):
    namespace, key = parameters.unpack()
    if (namespace, key) == ("org.freedesktop.appearance", "color-scheme"):
        invocation.return_value(GLib.Variant("(v)", (GLib.Variant("v", GLib.Variant("u", scheme)),)))
    else:
        invocation.return_dbus_error("org.freedesktop.portal.Error.NotFound", "no such setting")


def switch(*_):
    global scheme
    scheme = 2 if scheme == 1 else 1
    connection.emit_signal(None, "/org/freedesktop/portal/desktop", "org.freedesktop.portal.Settings",
                           "SettingChanged", GLib.Variant("(ssv)", ("org.freedesktop.appearance", "color-scheme",
                                                                    GLib.Variant("u", scheme))))
    return GLib.SOURCE_CONTINUE


def acquired(bus, name):
    global connection
    connection = bus
    info = Gio.DBusNodeInfo.new_for_xml(XML).interfaces[0]
    bus.register_object("/org/freedesktop/portal/desktop", info, call, None, None)
    print("READY", flush=True)


Gio.bus_own_name(Gio.BusType.SESSION, "org.freedesktop.portal.Desktop", Gio.BusNameOwnerFlags.NONE,
                 acquired, None, None)
GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGUSR1, switch)
GLib.MainLoop().run()
