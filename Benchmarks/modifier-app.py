#!/usr/bin/python3
# The app of Benchmarks/modifier.sh: a GTK 4 window whose only content is a
# link, clicked by xdotool with Shift held (one xdotool process holds it for
# HOLD seconds: the X server lets go of XTEST keys when their client leaves).
# On each click it records the wall-clock time and hands the link on the way
# the MODE says; the handler (`brsync-bench modifier-probe`) records when it
# read the keys and what it saw. Prints one line per mode: the time from the
# click to the read (p50, p90, p99, max), how often Shift was seen, and the
# share of clicks whose key would still be seen had it been let go 50, 100,
# 200 or 400 ms after the click.
#
#   modifier-app.py PROBE_LOG TRIALS HOLD MODE...
#   MODE: gtk (GTK's own launch of the default handler, as a GTK app does),
#         xdg-open, gio (`gio open`, what xdg-open runs on GNOME),
#         direct (the handler started by the app itself: the floor)
import os
import subprocess
import sys
import time

import gi

gi.require_version("Gtk", "4.0")
from gi.repository import GLib, Gtk  # noqa: E402

log_path, trials, hold = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
modes = sys.argv[4:]
probe = os.environ["MODIFIER_PROBE"]
clicks = {}  # url -> (mode, click µs)
plan = [(mode, n) for mode in modes for n in range(trials)]
state = {"index": -1, "driver": None, "deadline": 0.0}


def now_us():
    return time.clock_gettime_ns(time.CLOCK_REALTIME) // 1000


def url_for(mode, n):
    return f"https://example.org/{mode}/{n}"


def activated(_label, uri):
    mode = uri.split("/")[3]
    clicks[uri] = (mode, now_us())
    if mode == "gtk":
        return False  # GTK opens it: the default handler for https
    command = {"xdg-open": ["xdg-open", uri], "gio": ["gio", "open", uri], "direct": [probe, "modifier-probe", uri]}[mode]
    subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return True


def probe_lines():
    try:
        with open(log_path) as f:
            return [line.split() for line in f if line.strip()]
    except FileNotFoundError:
        return []


def step():
    driver = state["driver"]
    if driver is not None:
        current = url_for(*plan[state["index"]])
        seen = any(len(p) >= 4 and p[3] == current for p in probe_lines())
        if driver.poll() is None or (not seen and time.monotonic() < state["deadline"]):
            return True  # still held, or the handler has not written yet
    state["index"] += 1
    if state["index"] >= len(plan):
        report()
        app.quit()
        return False
    mode, n = plan[state["index"]]
    label.set_markup(f'<span size="xx-large"><a href="{url_for(mode, n)}">open this link</a></span>')
    state["deadline"] = time.monotonic() + hold + 3
    # Press Shift, click the link's middle, hold, let go: one X client throughout.
    state["driver"] = subprocess.Popen(
        ["xdotool", "keydown", "shift", "mousemove", "300", "150", "click", "1", "sleep", str(hold), "keyup", "shift"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return True


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def report():
    reads = {p[3]: p for p in probe_lines() if len(p) >= 4}
    for mode in modes:
        delays, held, errors, missing = [], 0, 0, 0
        for n in range(trials):
            url = url_for(mode, n)
            if url not in clicks or url not in reads:
                missing += 1
                continue
            line = reads[url]
            if line[2] == "error":
                errors += 1
                continue
            delays.append((int(line[1]) - clicks[url][1]) / 1000)
            held += 1 if int(line[2]) & 1 else 0
        if not delays:
            print(f"{mode:9s} no reads ({missing} clicks unanswered, {errors} errors)")
            continue
        share = " ".join(f"{d}ms:{100 * sum(1 for x in delays if x < d) / len(delays):.0f}%" for d in (50, 100, 200, 400))
        print(f"{mode:9s} click->keys read: p50 {percentile(delays, 50):.1f} ms, p90 {percentile(delays, 90):.1f}, "
              f"p99 {percentile(delays, 99):.1f}, max {max(delays):.1f} (n={len(delays)}); Shift seen {held}/{len(delays)}; "
              f"still seen if let go after {share}" + (f"; {missing} unanswered" if missing else ""))
    sys.stdout.flush()


app = Gtk.Application(application_id=None)
label = None


def activate(application):
    global label
    window = Gtk.ApplicationWindow(application=application, title="modifier-app")
    window.set_default_size(600, 300)
    label = Gtk.Label()
    label.connect("activate-link", activated)
    window.set_child(label)
    window.present()
    GLib.timeout_add(500, lambda: GLib.timeout_add(10, step) and False)


app.connect("activate", activate)
app.run([])
