# Sourced by the window benchmarks (picker.sh, settings.sh), from the
# repository's root: building brsync and a window in release, and timing a
# window to the moment it is mapped, with `zenity --list` (a GTK 3 dialog) as
# the baseline (after scripts/lib/xvfb.sh).
# build_windows WINDOW: brsync and the WINDOW program in release (as README
# "Install" builds them), $bin their folder.
# now: nanoseconds. wait_mapped STARTED NAME: milliseconds from STARTED until
# a visible window named NAME exists (polled every ~2 ms: `xdotool search
# --sync` polls too slowly to time with). median: of the numbers on stdin.
# zenity_baseline RUNS MEDIAN: prints zenity's median and the ratio to MEDIAN.
source Benchmarks/needs.sh
needs "scripts/setup installs it" Xvfb xdotool
build_windows() {
  # Every product with the same flags (changed flags rebuild everything).
  local flags=(-c release --static-swift-stdlib -Xswiftc -Xclang-linker -Xswiftc -no-pie) out
  # (GTK's pkg-config flags make SwiftPM warn about -pthread; only errors are shown.)
  out="$(swift build "${flags[@]}" --product brsync 2>&1)" || { echo "$out" >&2; exit 1; }
  out="$(swift build "${flags[@]}" --product "$1" 2>&1)" || { echo "$out" >&2; exit 1; }
  bin="$(swift build "${flags[@]}" --show-bin-path)"
}
# desktop_session: an X server of its own (scripts/lib/xvfb.sh, which makes
# $work), brsync's home and the user's XDG folders in $work, no Wayland. The
# system's data folders stay (GTK's settings schemas and icon themes, as on a
# desktop).
desktop_session() {
  source scripts/lib/xvfb.sh 1280x800
  export BRSYNC_HOME="$work/home" XDG_DATA_HOME="$work/data" XDG_CONFIG_HOME="$work/config"
  unset WAYLAND_DISPLAY
}
now() { date +%s%N; }
wait_mapped() {
  local started="$1" name="$2"
  for _ in $(seq 5000); do
    if xdotool search --onlyvisible --name "$name" >/dev/null 2>&1; then echo $(( ($(now) - started) / 1000000 )); return; fi
  done
  echo "no window '$name'" >&2
  return 1
}
# close_window PID NAME: Esc to the window until its program is gone (a key
# sent while the window is still settling can be lost), then it is ended.
close_window() {
  local window
  window="$(xdotool search --onlyvisible --name "$2" | head -1)"
  for _ in $(seq 50); do
    kill -0 "$1" 2>/dev/null || break
    # Ended, not yet waited for (a zombie answers kill -0): no more keys,
    # which would land in the next window once this one's id is reused.
    [ "$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)" = Z ] && break
    xdotool key --window "$window" Escape 2>/dev/null || true
    sleep 0.1
  done
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  # A window that closed on the key's press never saw its release: the X
  # server holds Escape down and repeats it into the next window (which
  # then closes at once). Let it go.
  xdotool keyup Escape 2>/dev/null || true
}
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
zenity_baseline() {
  local runs="$1" ours="$2" pid
  command -v zenity >/dev/null || { echo "baseline: zenity is not installed (apt-get install -y zenity)"; return; }
  : >"$work/zenity"
  for _ in $(seq "$runs"); do
    local started; started=$(now)
    zenity --list --title=ZenityBaseline --column=Browser firefox chromium >/dev/null 2>&1 &
    pid=$!
    wait_mapped "$started" "^ZenityBaseline\$" >>"$work/zenity" 2>/dev/null || { echo "baseline: zenity shows no window here"; return; }
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
  done
  local theirs; theirs="$(median <"$work/zenity")"
  echo "baseline: zenity --list -> window mapped, median of $runs: $theirs ms (ratio $(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.2f", a / b }')x)"
}
