#!/usr/bin/python3
"""Drives brsync-settings the way a screen reader user does: through AT-SPI.

Run with an X display (the test runs it under Xvfb, with XDG_RUNTIME_DIR a
folder of its own) and BRSYNC_HOME set:

    settings-accessibility.py SETTINGS STEP...

It starts a D-Bus session bus of its own, in a process group of its own, and
ends every process of that group when it is done. It starts SETTINGS, waits
(bounded) for the application "brsync-settings" on the accessibility bus and
its window, then runs each STEP in turn, printing what it finds:

    dump                  every accessible in the window: `NODE {json}`
    text:NAME=VALUE       puts VALUE in the text field named NAME (editable text)
    press:NAME            presses the button named NAME, or described so (a
                          row's "Remove" is described "Remove Firefox (firefox)"),
                          once it can be pressed (up to 30 s while greyed out)
    toggle:NAME           flips the switch or check box named NAME
    key:KEYS              presses KEYS (xdotool names) in the window
    find:ROLE:TEXT        waits up to 10 s for a ROLE whose name holds TEXT, in any
                          of its windows (a question asked in one of its own):
                          `FOUND name`
    run:COMMAND           runs COMMAND with /bin/sh (an edit made elsewhere)
    portal:SCHEME         (first step only) a settings portal (fake-portal.py) on the
                          bus before the window starts, saying color-scheme SCHEME
    portal-switch         the portal switches dark and light, as a desktop does
    pixel:X,Y             the screen's colour at X,Y: `PIXEL r g b` (0-255)
    sleep:SECONDS

A step that cannot be done prints `ERROR …` and ends the run (exit 3); the
window is closed at the end with Ctrl+W and `EXIT status` printed. Needs
python3-gi, gir1.2-atspi-2.0 and xdotool (Debian).
"""
import json
import os
import signal
import struct
import subprocess
import sys
import time

from accessibility_session import Atspi, application, describe, end_group, fail, find, nodes, wait_for

TITLE = "brsync Settings"


def xdotool_window():
    found = subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--name", f"^{TITLE}$"],
                           check=True, timeout=20, capture_output=True, text=True)
    return found.stdout.split()[0]


def pixel(x, y):
    """The screen's colour at x, y, from an xwd of the root window (24 or 32
    bits a pixel, blue first, as Xvfb writes it)."""
    shot = subprocess.run(["xwd", "-root", "-silent"], check=True, timeout=20, capture_output=True).stdout
    header = struct.unpack(">25I", shot[:100])
    header_size, bits_per_pixel, bytes_per_line, colours = header[0], header[11], header[12], header[19]
    if bits_per_pixel not in (24, 32):
        fail(f"the screen has {bits_per_pixel} bits a pixel, not 24 or 32")
    offset = header_size + colours * 12 + y * bytes_per_line + x * (bits_per_pixel // 8)
    blue, green, red = shot[offset], shot[offset + 1], shot[offset + 2]
    return [red, green, blue]


def main():
    settings, steps = sys.argv[1], sys.argv[2:]
    portal = None
    if steps and steps[0].startswith("portal:"):
        portal = subprocess.Popen(["/usr/bin/python3", os.path.join(os.path.dirname(__file__), "fake-portal.py"),
                                   steps[0].partition(":")[2]], stdout=subprocess.PIPE, text=True)
        if portal.stdout.readline().strip() != "READY":
            fail("the settings portal did not start")
        steps = steps[1:]
    process = subprocess.Popen([settings], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        app = wait_for(lambda: application("brsync-settings"), 20, "application 'brsync-settings' on the accessibility bus")
        window = wait_for(lambda: find(app, lambda n: n.get_role_name() == "frame" and n.get_name() == TITLE), 10,
                          "window")
        for step in steps:
            kind, _, rest = step.partition(":")
            if kind == "dump":
                for node, depth in nodes(window):
                    print("NODE " + json.dumps(describe(node, depth)), flush=True)
            elif kind == "text":
                name, _, value = rest.partition("=")
                field = find(app, lambda n: n.get_name() == name and n.get_editable_text_iface() is not None)
                if field is None:
                    fail(f"no text field named {name!r}")
                if not field.get_editable_text_iface().set_text_contents(value):
                    fail(f"the field {name!r} took no text")
                # The next step may press a button at once: wait until the
                # field reads back what was put in it.
                def field_text():
                    text = field.get_text_iface()
                    return text.get_text(0, text.get_character_count())
                wait_for(lambda: True if field_text() == value else None, 10,
                         f"text {value!r} in the field {name!r}", seen=lambda: [repr(field_text())])
            elif kind == "press":
                button = find(app, lambda n: n.get_role_name() == "push button"
                              and rest in (n.get_name(), n.get_description()))
                if button is None:
                    fail(f"no button named {rest!r}")
                # As a user: a greyed-out button cannot be pressed (a sync's
                # Stop turns on once the sync has started), so wait for it.
                wait_for(lambda: True if button.get_state_set().contains(Atspi.StateType.SENSITIVE) else None,
                         30, f"button {rest!r} that can be pressed")
                button.do_action(0)
            elif kind == "toggle":
                switch = find(app, lambda n: n.get_role_name() in ("toggle button", "check box", "switch")
                              and n.get_name() == rest)
                if switch is None:
                    fail(f"no switch named {rest!r}")
                switch.do_action(0)
            elif kind == "key":
                window_id = xdotool_window()
                subprocess.run(["xdotool", "windowfocus", "--sync", window_id], check=True, timeout=20)
                subprocess.run(["xdotool", "key", "--clearmodifiers", rest], check=True, timeout=20)
            elif kind == "find":
                role, _, text = rest.partition(":")
                node = wait_for(lambda: find(app, lambda n: n.get_role_name() == role and text in (n.get_name() or "")),
                                30, f"{role} named …{text!r}…",  # a key change in a debug build, under load
                                seen=lambda: [n.get_name() for n, _ in nodes(window)
                                              if n.get_role_name() == role and (n.get_name() or "").strip()])
                print("FOUND " + node.get_name().replace("\n", " "), flush=True)
            elif kind == "run":
                done = subprocess.run(["/bin/sh", "-c", rest], capture_output=True, text=True, timeout=30)
                print(f"RAN {done.returncode} {done.stdout.strip()} {done.stderr.strip()}".rstrip(), flush=True)
            elif kind == "portal-switch":
                if portal is None:
                    fail("no portal was started (portal:SCHEME first)")
                portal.send_signal(signal.SIGUSR1)
            elif kind == "pixel":
                x, _, y = rest.partition(",")
                print("PIXEL " + " ".join(str(value) for value in pixel(int(x), int(y))), flush=True)
            elif kind == "sleep":
                time.sleep(float(rest))
            else:
                fail(f"unknown step {step!r}")
        # Ctrl+W closes the window; a question still open over it (a press
        # that closes one lands a moment later) takes the first: up to 3 tries.
        # A window already closing (the last press, a slow exit under load)
        # is not found again: then the process is given time to end.
        for attempt in range(3):
            if process.poll() is not None:
                break
            try:
                subprocess.run(["xdotool", "windowfocus", "--sync", xdotool_window()], check=True, timeout=20)
                subprocess.run(["xdotool", "key", "--clearmodifiers", "ctrl+w"], check=True, timeout=20)
            except subprocess.CalledProcessError:
                process.wait(timeout=20)
                break
            try:
                process.wait(timeout=5 if attempt < 2 else 10)
                break
            except subprocess.TimeoutExpired:
                if attempt == 2:
                    raise
        print(f"EXIT {process.returncode}", flush=True)
    finally:
        if process.poll() is None:
            process.kill()
        output = process.stdout.read() if process.stdout else ""
        for line in output.splitlines():
            print("OUTPUT " + line, flush=True)


try:
    main()
except Exception:
    import traceback
    print("ERROR " + traceback.format_exc().replace("\n", " | "), flush=True)
    sys.exit(3)
finally:
    sys.stdout.flush()
    end_group()
