# Sourced (bash): a scratch folder $work and an X server of its own (Xvfb on a
# free display, which it picks and reports), with DISPLAY exported; both go
# when the script exits. Usage: source scripts/lib/xvfb.sh [WIDTHxHEIGHT]
work="$(mktemp -d)"
xvfb=""
cleanup() { [ -n "$xvfb" ] && kill "$xvfb" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
Xvfb -displayfd 3 -nolisten tcp -noreset -screen 0 "${1:-1280x800}x24" 3>"$work/display" 2>/dev/null &
xvfb=$!
for _ in $(seq 100); do [ -s "$work/display" ] && break; sleep 0.05; done
[ -s "$work/display" ] || { echo "Xvfb did not start" >&2; exit 1; }
export DISPLAY=":$(cat "$work/display")"
