#!/usr/bin/env bash
# Sync benchmark (prints numbers; it is not a test). Release build, loopback TLS:
# 10,000 rules pushed from A and pulled by B, end to end, with the real
# binaries; records applied per second on pull; bytes on the wire per record;
# and a sync with nothing to do (requests and bytes).
# Usage: bash Benchmarks/sync.sh [rules, default 10000]
set -euo pipefail
cd "$(dirname "$0")/.."
count="${1:-10000}"
flags=(-c release --static-swift-stdlib)
swift build "${flags[@]}" -Xswiftc -Xclang-linker -Xswiftc -no-pie --product brsync >/dev/null
for product in brsync-sync brsyncd brsyncd-bench brsync-bench; do swift build "${flags[@]}" --product "$product" >/dev/null; done
bin="$(swift build "${flags[@]}" --show-bin-path)"

work="$(mktemp -d)"
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

"$bin/brsyncd-bench" setup "$work/server"
desktop_token="$("$bin/brsyncd" device add bench desktop --db "$work/server/store.sqlite" | tail -1)"
laptop_token="$(cat "$work/server/token")"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')"
"$bin/brsyncd" serve --db "$work/server/store.sqlite" --listen "127.0.0.1:$port" \
  --cert "$work/server/server.pem" --key "$work/server/server.key" --log-level warning &
pid=$!
sleep 0.5

"$bin/brsync-bench" make-replica "$work/a" "$count"
"$bin/brsync" remote set "https://127.0.0.1:$port" --token "$laptop_token" --ca "$work/server/ca.pem" --home "$work/a" >/dev/null
"$bin/brsync" init --home "$work/b" >/dev/null
"$bin/brsync" remote set "https://127.0.0.1:$port" --token "$desktop_token" --ca "$work/server/ca.pem" --home "$work/b" >/dev/null

now() { python3 -c 'import time; print(time.monotonic())'; }
t0="$(now)"
"$bin/brsync" push --json --home "$work/a" >"$work/push.json"
t1="$(now)"
"$bin/brsync" pull --json --home "$work/b" >"$work/pull.json"
t2="$(now)"
"$bin/brsync" sync --json --home "$work/b" >"$work/nochange.json"
python3 - "$work" "$t0" "$t1" "$t2" "$count" <<'PY'
import json, sys
work, t0, t1, t2, count = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
push, pull, idle = (json.load(open(f"{work}/{name}.json")) for name in ("push", "pull", "nochange"))
records = pull["pulled"]
print(f"A -> B, {count} rules: push {t1 - t0:.2f} s ({push['pushed']} changes, {push['requests']} requests), "
      f"pull {t2 - t1:.2f} s ({records} records, {pull['requests']} requests); end to end {t2 - t0:.2f} s (target < 2 s)")
apply = max(1, pull["applyMilliseconds"]) / 1000
print(f"pull: {records / apply:,.0f} records/s applied (merging pages into the replica: {apply:.2f} s; target >= 50,000)")
print(f"pull: {records / (t2 - t1):,.0f} records/s for the whole pull process (start, TLS, 11 requests, server time, apply)")
print(f"wire: push {push['bytesSent'] / max(1, push['pushed']):.0f} bytes/change sent, "
      f"pull {pull['bytesReceived'] / max(1, records):.0f} bytes/record received (JSON bodies)")
print(f"no-change sync: {idle['requests']} request(s), {idle['bytesSent']} bytes sent, {idle['bytesReceived']} bytes received "
      f"(target: one request each way, < 200 bytes of body)")
PY
