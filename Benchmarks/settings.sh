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
#     (target <= 50 ms a keystroke);
#   - "Sync now" pulling COUNT rules from a fresh server into the window's
#     replica: its time, next to `brsync sync` pulling the same into another
#     home in the same run, and the window's longest stall meanwhile (the
#     gap between two ticks of a 10 ms timer: how long a click or a key
#     waited; a wait starts to be felt at about 100 ms).
# Usage: bash Benchmarks/settings.sh [COUNT] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
count="${1:-20000}"
runs="${2:-10}"
source Benchmarks/windows.sh
build_windows brsync-settings
# The sync part: brsync-sync (what `brsync sync` runs) and the server side (two_machines), same flags.
for product in brsync-sync brsyncd brsyncd-bench; do
  out="$(swift build -c release --static-swift-stdlib -Xswiftc -Xclang-linker -Xswiftc -no-pie --product "$product" 2>&1)" || { echo "$out" >&2; exit 1; }
done
source Benchmarks/two-machines.sh
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

# Sync now: the laptop (a) pushes COUNT rules; the window's replica (b) pulls them.
two_machines "$work/sync" plain
server_pid=$pid
# The server goes with the X server and the scratch folder, however the script ends.
trap 'kill "$server_pid" 2>/dev/null || true; cleanup' EXIT
"$bin/brsync" import --home "$work/sync/a" "$work/rules.json" >/dev/null
"$bin/brsync" sync --quiet --home "$work/sync/a"
BRSYNC_HOME="$work/sync/b" BRSYNC_SETTINGS_TIMING=1 "$bin/brsync" settings 2>"$work/sync-timing" &
pid=$!
wait_mapped "$(now)" "^brsync Settings\$" >/dev/null
sleep 1
if ! kill -0 "$pid" 2>/dev/null; then
  status=0; wait "$pid" || status=$?
  echo "the window for Sync now ended (status $status):" >&2; cat "$work/sync-timing" >&2; exit 1
fi
window="$(xdotool search --sync --onlyvisible --pid "$pid" --name '^brsync Settings$' | head -1)"
xdotool windowfocus --sync "$window"
xdotool key --clearmodifiers ctrl+6
sleep 0.5
xdotool key --clearmodifiers alt+s
for _ in $(seq 1200); do grep -q '^sync now:' "$work/sync-timing" && break; sleep 0.1; done
close_window "$pid" "^brsync Settings\$"
line="$(grep '^sync now:' "$work/sync-timing" || true)"
[ -n "$line" ] || { echo "Sync now was not timed" >&2; cat "$work/sync-timing" >&2; kill "$server_pid"; exit 1; }
window_ms="$(echo "$line" | sed 's/^sync now: \([0-9.]*\) ms.*/\1/')"
stall_ms="$(echo "$line" | sed 's/.*meanwhile: \([0-9.]*\) ms.*/\1/')"
# The baseline: the command pulling the same into a third home of the account.
token="$("$bin/brsyncd" device add bench third --db "$work/sync/server/store.sqlite" | tail -1)"
port="$(sed -n 's|^remote https://127.0.0.1:\([0-9]*\).*|\1|p' <("$bin/brsync" remote show --home "$work/sync/a") | head -1)"
"$bin/brsync" init --home "$work/sync/c" >/dev/null
"$bin/brsync" remote set "https://127.0.0.1:$port" --token "$token" --ca "$work/sync/server/ca.pem" --home "$work/sync/c" >/dev/null 2>&1
started=$(now)
"$bin/brsync" sync --quiet --home "$work/sync/c"
command_ms=$(( ($(now) - started) / 1000000 ))
kill "$server_pid"; wait "$server_pid" 2>/dev/null || true
echo "sync now in the window, $count rules pulled: $window_ms ms to the page shown again; 'brsync sync' pulling the same: $command_ms ms ($(awk -v a="$window_ms" -v b="$command_ms" 'BEGIN { printf "%.2f", a / b }')x)"
echo "  the window's longest stall meanwhile: $stall_ms ms (a click or a key waited at most that long; a wait starts to be felt at about 100 ms)"

if ldd "$bin/brsync" | grep -q -i gtk; then echo "brsync links GTK: it must not" >&2; exit 1; fi
echo "brsync links no GTK (ldd): only the windows load it"
