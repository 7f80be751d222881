#!/usr/bin/env bash
# One pull, measured alone (prints numbers; it is not a test). Release build,
# loopback TLS: A pushes COUNT rules to a fresh server, every dirty page is
# flushed to disk, then B pulls them with `brsync-sync pull`. Printed: the
# replica's apply time (`applyMilliseconds`), the whole pull's wall time, the
# pulling process's peak memory and page faults, and the size of B's replica.
# The push's writeback is kept out of the pull it would otherwise slow, so
# single pulls of two builds compare in turn (`Benchmarks/compare.sh BASE 9
# pull`), where whole `sync.sh` runs move ±15%.
# Usage: bash Benchmarks/pull.sh [rules, default 10000] [plaintext|encrypted, default plaintext]
set -euo pipefail
cd "$(dirname "$0")/.."
count="${1:-10000}"
mode="${2:-plaintext}"
source Benchmarks/two-machines.sh
build_clients

dir="$(mktemp -d)"
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT

two_machines "$dir" "$mode"
"$bin/brsync-bench" make-replica "$dir/a" "$count"
"$bin/brsync" push --quiet --home "$dir/a"
sync
sleep 0.5
start="$(date +%s%N)"
/usr/bin/time -f "%M %R" -o "$dir/time" "$bin/brsync-sync" pull --json --home "$dir/b" >"$dir/pull.json"
end="$(date +%s%N)"
python3 - "$dir" "$mode" "$(( (end - start) / 1000000 ))" <<'EOF'
import glob, json, os, sys
d, mode, wall = sys.argv[1], sys.argv[2], int(sys.argv[3])
pull = json.load(open(f"{d}/pull.json"))
rss, faults = open(f"{d}/time").read().split()[-2:]
size = sum(os.path.getsize(f) for f in glob.glob(f"{d}/b/replica.sqlite*"))
print(f"pull {mode}: {pull['pulled']} records, apply {pull['applyMilliseconds']} ms, whole pull {wall} ms, "
      f"peak {int(rss) / 1024:.1f} MB, {faults} page faults, replica {size / 1e6:.2f} MB")
EOF
