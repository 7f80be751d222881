"""What the accessibility scripts share: a D-Bus session bus of their own,
in a process group of their own (ended whole by `end_group`: the
accessibility bus launcher and registry the session bus starts would
otherwise outlive the script), and walking an application's accessibles.
Importing this module starts the bus."""
import os
import signal
import subprocess
import sys
import time

import gi

gi.require_version("Atspi", "2.0")
from gi.repository import Atspi, GLib  # noqa: E402

os.setpgrp()
# A test runner may start a script with signals blocked; the bus and what it
# starts must be stoppable.
signal.pthread_sigmask(signal.SIG_SETMASK, [])
# The bus's own output goes nowhere: it would hold the caller's pipe open.
_bus = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address=1"], stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL, text=True)
os.environ["DBUS_SESSION_BUS_ADDRESS"] = _bus.stdout.readline().strip()


def end_group():
    """Kills every other process of this group (the buses, the registry)."""
    me, group = os.getpid(), os.getpgrp()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != me:
            try:
                if os.getpgid(int(entry)) == group:
                    os.kill(int(entry), signal.SIGKILL)
            except OSError:
                pass


def fail(message):
    print(f"ERROR {message}", flush=True)
    sys.exit(3)


def wait_for(predicate, seconds, what, seen=None):
    """predicate's first answer that is not None, asked every 50 ms for `seconds`; else fails,
    first printing `SEEN text` for each thing `seen` lists (what there was instead)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        found = predicate()
        if found is not None:
            return found
        time.sleep(0.05)
    if seen is not None:
        for text in seen():
            print("SEEN " + text.replace("\n", " "), flush=True)
    fail(f"no {what} within {seconds} s")


def application(name):
    """The application `name` on the accessibility bus, once it shows something."""
    desktop = Atspi.get_desktop(0)
    for index in range(desktop.get_child_count()):
        try:
            child = desktop.get_child_at_index(index)
            if child is not None and child.get_name() == name and child.get_child_count() > 0:
                return child
        except GLib.GError:
            pass  # an application that went away while it was looked at
    return None


def nodes(node, depth=0):
    yield node, depth
    for index in range(node.get_child_count()):
        child = node.get_child_at_index(index)
        if child is not None:
            yield from nodes(child, depth + 1)


def action_names(node):
    names = []
    for index in range(node.get_n_actions()):
        try:
            names.append(node.get_action_name(index))
        except GLib.GError:
            pass  # GTK 4.8 counts actions some widgets cannot name
    return names


def find(root, accept):
    """The first accessible under `root` that `accept` takes (None while a list reloads under the walk)."""
    try:
        for node, _ in nodes(root):
            if accept(node):
                return node
    except GLib.GError:
        pass
    return None


def describe(node, depth):
    """What a screen reader learns of `node`, as the tests read it (one JSON object a line)."""
    states = node.get_state_set()
    return {
        "depth": depth,
        "role": node.get_role_name(),
        "name": node.get_name() or "",
        "description": node.get_description() or "",
        "focusable": states.contains(Atspi.StateType.FOCUSABLE),
        "sensitive": states.contains(Atspi.StateType.SENSITIVE),
        "showing": states.contains(Atspi.StateType.SHOWING),
        "actions": action_names(node),
    }
