#!/usr/bin/env bash
# Picker window benchmark (prints numbers; it is not a test). Release build,
# under Xvfb: the time from starting `brsync pick URL` (no terminal) to the
# picker window being mapped, median of N runs (default 20; target <= 300 ms),
# next to the same for `zenity --list` (a GTK 3 window) when zenity is
# installed; and whether `brsync` itself loads GTK (it must not: resolve and
# open decided by a rule never pay for it).
# (brsync runs in a session of its own, as from a desktop app: no terminal picker.)
# Usage: bash Benchmarks/picker.sh [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-20}"
source Benchmarks/windows.sh
build_windows brsync-picker
desktop_session
unset BRSYNC_PICKER
# The browsers are added by hand, so none is detected from the system's entries.
"$bin/brsync" init >/dev/null
for id in firefox chromium; do "$bin/brsync" browsers add "$id" --exec "/bin/true %u" >/dev/null; done

: >"$work/picker"
for _ in $(seq "$runs"); do
  started=$(now)
  setsid -w "$bin/brsync" pick https://example.org/benchmark </dev/null >>"$work/pick.log" 2>&1 &
  pid=$!
  wait_mapped "$started" "^Open link — brsync\$" >>"$work/picker" || { tail -5 "$work/pick.log" >&2; exit 1; }
  close_window "$pid" "^Open link — brsync\$"
done
echo "picker window: brsync pick -> window mapped, median of $runs: $(median <"$work/picker") ms (min $(sort -n "$work/picker" | head -1), max $(sort -n "$work/picker" | tail -1); target <= 300 ms)"

zenity_baseline "$runs" "$(median <"$work/picker")"

if ldd "$bin/brsync" | grep -q -i gtk; then echo "brsync links GTK: it must not" >&2; exit 1; fi
echo "brsync links no GTK (ldd): resolve and rule-decided clicks never load it"
