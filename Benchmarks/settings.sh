#!/usr/bin/env bash
# Settings window benchmark (prints numbers; it is not a test). Release
# build, under Xvfb, with a replica of COUNT rules (default 20,000):
#   - the time from starting `brsync settings` to its window being mapped,
#     median of RUNS runs (default 10; target <= 300 ms), next to
#     `zenity --list` (a GTK 3 window) in the same run when zenity is
#     installed;
#   - searching the rules as a person types: each keystroke typed with
#     xdotool, the window's own clock from the search changing to the frame
#     that shows it painted (BRSYNC_SETTINGS_TIMING); median and worst
#     (target <= 50 ms a keystroke).
# Usage: bash Benchmarks/settings.sh [COUNT] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
count="${1:-20000}"
runs="${2:-10}"
source Benchmarks/windows.sh
build_windows brsync-settings
desktop_session
unset DBUS_SESSION_BUS_ADDRESS
python3 Benchmarks/rules-export.py "$count" >"$work/rules.json"
"$bin/brsync" init >/dev/null
"$bin/brsync" import "$work/rules.json" >/dev/null
"$bin/brsync" browsers add firefox --exec "/bin/true %u" >/dev/null 2>&1

: >"$work/settings"
for _ in $(seq "$runs"); do
  started=$(now)
  "$bin/brsync" settings >>"$work/settings.log" 2>&1 &
  pid=$!
  wait_mapped "$started" "^brsync Settings\$" >>"$work/settings" || { tail -5 "$work/settings.log" >&2; exit 1; }
  close_window "$pid" "^brsync Settings\$"
done
settings_median="$(median <"$work/settings")"
echo "settings window ($count rules): brsync settings -> window mapped, median of $runs: $settings_median ms (min $(sort -n "$work/settings" | head -1), max $(sort -n "$work/settings" | tail -1); target <= 300 ms)"

zenity_baseline "$runs" "$settings_median"

# Searching: type a query a key at a time (each waits for the last to be painted).
BRSYNC_SETTINGS_TIMING=1 "$bin/brsync" settings 2>"$work/timing" &
pid=$!
wait_mapped "$(now)" "^brsync Settings\$" >/dev/null
sleep 1
# (brsync settings runs the window in its own process: the pid is the window's.)
window="$(xdotool search --sync --onlyvisible --pid "$pid" --name '^brsync Settings$' | head -1)"
xdotool windowfocus --sync "$window"
xdotool key --clearmodifiers ctrl+f
query="host1234.example"
for (( i = 0; i < ${#query}; i++ )); do
  xdotool type --delay 0 "${query:i:1}"
  sleep 0.3
done
for _ in 1 2 3 4 5 6; do xdotool key BackSpace; sleep 0.3; done
close_window "$pid" "^brsync Settings\$"
grep 'ms to paint' "$work/timing" | sed 's/.*: \([0-9.]*\) ms.*/\1/' >"$work/painted"
keys="$(wc -l <"$work/painted")"
[ "$keys" -gt 0 ] || { echo "no keystroke was timed" >&2; cat "$work/timing" >&2; exit 1; }
echo "search ($count rules), typed key by key: $keys keystrokes, to the frame painted: median $(median <"$work/painted") ms, worst $(sort -n "$work/painted" | tail -1) ms (target <= 50 ms)"
echo "  each, in the order typed: $(tr '\n' ' ' <"$work/painted")"
grep 'ms to update' "$work/timing" | sed 's/.*: \([0-9.]*\) ms.*/\1/' >"$work/filtered"
echo "  of which filtering the list: median $(median <"$work/filtered") ms, worst $(sort -n "$work/filtered" | tail -1) ms"

if ldd "$bin/brsync" | grep -q -i gtk; then echo "brsync links GTK: it must not" >&2; exit 1; fi
echo "brsync links no GTK (ldd): only the windows load it"
