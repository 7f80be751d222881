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
                          row's "Remove" is described "Remove Firefox (firefox)")
    key:KEYS              presses KEYS (xdotool names) in the window
    find:ROLE:TEXT        waits up to 10 s for a ROLE whose name holds TEXT, in any
                          of its windows (a question asked in one of its own):
                          `FOUND name`
    run:COMMAND           runs COMMAND with /bin/sh (an edit made elsewhere)
    sleep:SECONDS

A step that cannot be done prints `ERROR …` and ends the run (exit 3); the
window is closed at the end with Ctrl+W and `EXIT status` printed. Needs
python3-gi, gir1.2-atspi-2.0 and xdotool (Debian).
"""
import json
import subprocess
import sys
import time

from accessibility_session import application, describe, end_group, fail, find, nodes, wait_for

TITLE = "brsync Settings"


def xdotool_window():
    found = subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--name", f"^{TITLE}$"],
                           check=True, timeout=20, capture_output=True, text=True)
    return found.stdout.split()[0]


def main():
    settings, steps = sys.argv[1], sys.argv[2:]
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
            elif kind == "press":
                button = find(app, lambda n: n.get_role_name() == "push button"
                              and rest in (n.get_name(), n.get_description()))
                if button is None:
                    fail(f"no button named {rest!r}")
                button.do_action(0)
            elif kind == "key":
                window_id = xdotool_window()
                subprocess.run(["xdotool", "windowfocus", "--sync", window_id], check=True, timeout=20)
                subprocess.run(["xdotool", "key", "--clearmodifiers", rest], check=True, timeout=20)
            elif kind == "find":
                role, _, text = rest.partition(":")
                node = wait_for(lambda: find(app, lambda n: n.get_role_name() == role and text in (n.get_name() or "")),
                                10, f"{role} named …{text!r}…")
                print("FOUND " + node.get_name().replace("\n", " "), flush=True)
            elif kind == "run":
                done = subprocess.run(["/bin/sh", "-c", rest], capture_output=True, text=True, timeout=30)
                print(f"RAN {done.returncode} {done.stdout.strip()} {done.stderr.strip()}".rstrip(), flush=True)
            elif kind == "sleep":
                time.sleep(float(rest))
            else:
                fail(f"unknown step {step!r}")
        subprocess.run(["xdotool", "windowfocus", "--sync", xdotool_window()], check=True, timeout=20)
        subprocess.run(["xdotool", "key", "--clearmodifiers", "ctrl+w"], check=True, timeout=20)
        process.wait(timeout=10)
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
