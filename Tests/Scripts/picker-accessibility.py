#!/usr/bin/python3
"""Drives brsync-picker the way a screen reader user does: through AT-SPI.

Run with an X display (the test runs it under Xvfb, with XDG_RUNTIME_DIR a
folder of its own):

    picker-accessibility.py PICKER REQUEST_JSON

It starts a D-Bus session bus of its own (accessibility_session.py, beside
it), and ends every process it started when it is done.

Starts PICKER with the request on its standard input, waits (bounded) for the
application "brsync-picker" on the accessibility bus, prints every accessible in the
window as a line `NODE {json}`; then ticks "Remember for this domain" (Ctrl+R
with xdotool: GTK 4.8 gives a check box no accessible action), types an
invalid pattern into the pattern field through AT-SPI's editable text, and
presses Open with its accessible action; prints `ANSWER text` (the answer
names the pattern's problem) and `EXIT status`. (GTK 4.8 sends no change of
a description or of sensitivity on the bus, so what the field's check says
as it changes is not read here: the window tests see it.) Needs python3-gi, gir1.2-atspi-2.0 and xdotool (Debian).
"""
import json
import subprocess
import sys

from accessibility_session import Atspi, application, describe, end_group, find as find_node, nodes, wait_for


def find(app, role, name):
    return find_node(app, lambda node: node.get_role_name() == role and node.get_name() == name)


def main():
    picker, request = sys.argv[1], sys.argv[2]
    process = subprocess.Popen([picker], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    process.stdin.write(request + "\n")
    process.stdin.close()
    try:
        app = wait_for(lambda: application("brsync-picker"), 20, "application 'brsync-picker' on the accessibility bus")
        window = wait_for(lambda: find(app, "frame", "Open link — brsync"), 10, "window")
        for node, depth in nodes(window):
            print("NODE " + json.dumps(describe(node, depth)), flush=True)

        # GTK 4.8 gives a check box neither an action nor a focus call: its
        # shortcut, from the keyboard, as a screen reader user would.
        found = subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--name", "^Open link — brsync$"],
                               check=True, timeout=20, capture_output=True, text=True)
        subprocess.run(["xdotool", "windowfocus", "--sync", found.stdout.split()[0]], check=True, timeout=20)
        subprocess.run(["xdotool", "key", "--clearmodifiers", "ctrl+r"], check=True, timeout=20)
        remember = find(window, "check box", "Remember for this domain")
        wait_for(lambda: True if remember.get_state_set().contains(Atspi.StateType.CHECKED) else None, 10, "remember checked")
        pattern = find(window, "text", "Pattern to remember")
        if not pattern.get_editable_text_iface().set_text_contents("bad pattern"):
            print("ERROR the pattern field took no text", flush=True)
            sys.exit(3)
        # The box's words follow the pattern: a pattern that is none reaches nothing to name.
        wait_for(lambda: find(window, "check box", "Remember"), 10, "the box renamed for the pattern typed")
        print("RENAMED Remember", flush=True)
        find(window, "push button", "Open").do_action(0)
        process.wait(timeout=10)
        output = process.stdout.read()
        print("ANSWER " + output.strip(), flush=True)
        print(f"EXIT {process.returncode}", flush=True)
    finally:
        if process.poll() is None:
            process.kill()


try:
    main()
finally:
    sys.stdout.flush()
    end_group()
