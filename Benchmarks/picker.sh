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
source Benchmarks/needs.sh
needs "scripts/setup installs it" Xvfb xdotool
flags=(-c release --static-swift-stdlib)
# (GTK's pkg-config flags make SwiftPM warn about -pthread; only errors are shown.)
build() { local out; out="$(swift build "${flags[@]}" "$@" 2>&1)" || { echo "$out" >&2; exit 1; }; }
build -Xswiftc -Xclang-linker -Xswiftc -no-pie --product brsync
build --product brsync-picker
bin="$(swift build "${flags[@]}" --show-bin-path)"

source scripts/lib/xvfb.sh 1280x800
# The system's data folders stay (GTK's settings schemas and icon themes, as on
# a desktop); the browsers are added by hand, so none is detected from them.
export BRSYNC_HOME="$work/home" XDG_DATA_HOME="$work/data" XDG_CONFIG_HOME="$work/config"
unset WAYLAND_DISPLAY BRSYNC_PICKER
"$bin/brsync" init >/dev/null
for id in firefox chromium; do "$bin/brsync" browsers add "$id" --exec "/bin/true %u" >/dev/null; done

now() { date +%s%N; }
# Milliseconds until a visible window named $1 exists (polled every ~2 ms;
# `xdotool search --sync` polls too slowly to time with).
wait_mapped() {
  local started="$1" name="$2"
  for _ in $(seq 5000); do
    if xdotool search --onlyvisible --name "$name" >/dev/null 2>&1; then echo $(( ($(now) - started) / 1000000 )); return; fi
  done
  echo "no window '$name'" >&2; [ -f "$work/pick.log" ] && tail -5 "$work/pick.log" >&2; return 1
}
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

: >"$work/picker"
for _ in $(seq "$runs"); do
  started=$(now)
  setsid -w "$bin/brsync" pick https://example.org/benchmark </dev/null >>"$work/pick.log" 2>&1 &
  pid=$!
  wait_mapped "$started" "^Open link — brsync\$" >>"$work/picker" || exit 1
  window="$(xdotool search --onlyvisible --name '^Open link — brsync$' | head -1)"
  # Esc until it is gone (a key sent while the window is still settling can be lost).
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    xdotool key --window "$window" Escape 2>/dev/null || true
    sleep 0.1
  done
  kill "$pid" 2>/dev/null || true
  wait "$pid" || true
done
echo "picker window: brsync pick -> window mapped, median of $runs: $(median <"$work/picker") ms (min $(sort -n "$work/picker" | head -1), max $(sort -n "$work/picker" | tail -1); target <= 300 ms)"

if command -v zenity >/dev/null; then
  : >"$work/zenity"
  for _ in $(seq "$runs"); do
    started=$(now)
    zenity --list --title=ZenityBaseline --column=Browser firefox chromium >/dev/null 2>&1 &
    pid=$!
    wait_mapped "$started" "^ZenityBaseline\$" >>"$work/zenity" 2>/dev/null || { echo "baseline: zenity shows no window here"; break; }
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
  done
  [ "$(wc -l <"$work/zenity")" -eq "$runs" ] && echo "baseline: zenity --list -> window mapped, median of $runs: $(median <"$work/zenity") ms (ratio $(awk -v a="$(median <"$work/picker")" -v b="$(median <"$work/zenity")" 'BEGIN { printf "%.2f", a / b }')x)"
fi

if ldd "$bin/brsync" | grep -q -i gtk; then echo "brsync links GTK: it must not" >&2; exit 1; fi
echo "brsync links no GTK (ldd): resolve and rule-decided clicks never load it"
