#!/usr/bin/env bash
# Could a modifier held while clicking a link force the picker? (prints
# numbers; it is not a test). Under Xvfb, a GTK 4 app (modifier-app.py) shows
# a link; xdotool holds Shift and clicks it; the app hands the link on as GTK
# apps, xdg-open and `gio open` do, to the default https handler, here
# `brsync-bench modifier-probe` (a release build like brsync's: the same
# start-up), which reads the keys over the X protocol first thing. Printed per
# way of opening: the time from the click to the read, and the share of clicks
# whose Shift would still be seen had the person let go 50-400 ms after it.
# Usage: bash Benchmarks/modifier.sh [trials per way, default 30]
set -euo pipefail
cd "$(dirname "$0")/.."
trials="${1:-30}"
source Benchmarks/needs.sh
needs "scripts/setup installs it" Xvfb xdotool xdg-open gio
/usr/bin/python3 -c "import gi; gi.require_version('Gtk', '4.0')" 2>/dev/null || { echo "needs python3-gi and gir1.2-gtk-4.0" >&2; exit 2; }
flags=(-c release --static-swift-stdlib -Xswiftc -Xclang-linker -Xswiftc -no-pie)
swift build "${flags[@]}" --product brsync-bench >/dev/null
probe="$(swift build "${flags[@]}" --show-bin-path)/brsync-bench"

source scripts/lib/xvfb.sh 1280x800
# The probe is the default https handler of this session, as brsync is once installed.
export XDG_DATA_HOME="$work/data" XDG_CONFIG_HOME="$work/config" HOME="$work"
unset WAYLAND_DISPLAY XDG_CURRENT_DESKTOP DESKTOP_SESSION
mkdir -p "$XDG_DATA_HOME/applications" "$XDG_CONFIG_HOME"
cat >"$XDG_DATA_HOME/applications/modifier-probe.desktop" <<EOF
[Desktop Entry]
Type=Application
Name=Modifier probe
Exec=$probe modifier-probe %u
MimeType=x-scheme-handler/http;x-scheme-handler/https;
NoDisplay=true
EOF
printf '[Default Applications]\nx-scheme-handler/https=modifier-probe.desktop\nx-scheme-handler/http=modifier-probe.desktop\n' \
  >"$XDG_CONFIG_HOME/mimeapps.list"
export MODIFIER_PROBE="$probe" MODIFIER_PROBE_LOG="$work/probe.log"
: >"$MODIFIER_PROBE_LOG"

# A check first: with nothing held the probe sees nothing, with Shift held it sees Shift.
"$probe" modifier-probe check-none
xdotool keydown shift sleep 0.5 keyup shift & holder=$!
sleep 0.25
"$probe" modifier-probe check-shift
wait "$holder"
read -r none shift < <(awk '$4 == "check-none" { n = $3 } $4 == "check-shift" { s = $3 } END { print n, s }' "$MODIFIER_PROBE_LOG")
echo "X protocol read: nothing held -> Shift $none, Shift held -> Shift $shift"
[ "$none" = 0 ] && [ "$shift" = 1 ] || { echo "the probe does not read the keys" >&2; cat "$MODIFIER_PROBE_LOG" >&2; exit 1; }
awk '$4 ~ /^check-/ { printf "X protocol read (connect, set up, QueryPointer): %.2f ms\n", ($2 - $1) / 1000; exit }' "$MODIFIER_PROBE_LOG"

/usr/bin/python3 Benchmarks/modifier-app.py "$MODIFIER_PROBE_LOG" "$trials" 1.0 direct gtk gio xdg-open 2> >(grep -v -e "^$" -e "Gtk-WARNING" -e "dbind-WARNING" >&2)
