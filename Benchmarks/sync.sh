#!/usr/bin/env bash
# Sync benchmark (prints numbers; it is not a test). Release build, loopback TLS:
# 10,000 rules pushed from A and pulled by B, end to end, with the real
# binaries; records applied per second on pull; bytes on the wire per record;
# and a sync with nothing to do (requests and bytes). Each measurement runs
# on a plaintext account and on an end-to-end encrypted one, in
# alternating rounds on fresh servers; the medians and their ratio are printed
# (target for encryption: end to end <= 1.2x plaintext, and <= 1,000 bytes a rule on the wire).
# Usage: bash Benchmarks/sync.sh [rules, default 10000] [rounds, default 3]
set -euo pipefail
cd "$(dirname "$0")/.."
count="${1:-10000}"
rounds="${2:-3}"
source Benchmarks/two-machines.sh
build_clients

work="$(mktemp -d)"
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
# Seconds, from bash itself: a python3 started for each reading took ~90 ms,
# and every interval measured counted one of those starts.
now() { local t="$EPOCHREALTIME"; echo "${t/,/.}"; }

# One round: a fresh server and two replicas (two-machines.sh); A makes COUNT
# rules, pushes; B pulls.
round() {
  local mode="$1" dir="$work/$1-$2"
  two_machines "$dir" "$mode"
  "$bin/brsync-bench" make-replica "$dir/a" "$count"
  local t0 t1 t2
  t0="$(now)"
  "$bin/brsync" push --json --home "$dir/a" >"$dir/push.json"
  t1="$(now)"
  "$bin/brsync" pull --json --home "$dir/b" >"$dir/pull.json"
  t2="$(now)"
  "$bin/brsync" sync --json --home "$dir/b" >"$dir/nochange.json"
  kill "$pid" && wait "$pid" 2>/dev/null || true
  pid=""
  python3 - "$dir" "$mode" "$t0" "$t1" "$t2" >>"$work/rounds.jsonl" <<'PY'
import json, sys
d, mode, t0, t1, t2 = sys.argv[1], sys.argv[2], *map(float, sys.argv[3:6])
push, pull, idle = (json.load(open(f"{d}/{n}.json")) for n in ("push", "pull", "nochange"))
print(json.dumps({"mode": mode, "push": t1 - t0, "pull": t2 - t1, "e2e": t2 - t0, "pushed": push["pushed"],
                  "pushRequests": push["requests"], "pulled": pull["pulled"], "pullRequests": pull["requests"],
                  "apply": max(1, pull["applyMilliseconds"]) / 1000, "sentPerChange": push["bytesSent"] / max(1, push["pushed"]),
                  "receivedPerRecord": pull["bytesReceived"] / max(1, pull["pulled"]),
                  "idleRequests": idle["requests"], "idleSent": idle["bytesSent"], "idleReceived": idle["bytesReceived"]}))
PY
}

for index in $(seq 1 "$rounds"); do
  round plaintext "$index"
  round encrypted "$index"
done

python3 - "$work/rounds.jsonl" "$count" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
count = int(sys.argv[2])
def median(mode, key): return statistics.median(r[key] for r in rows if r["mode"] == mode)
for mode in ("plaintext", "encrypted"):
    m = lambda key: median(mode, key)
    print(f"{mode}: A -> B, {count} rules (median of {sum(r['mode'] == mode for r in rows)}): push {m('push'):.2f} s "
          f"({m('pushed'):.0f} changes, {m('pushRequests'):.0f} requests), pull {m('pull'):.2f} s ({m('pulled'):.0f} records, "
          f"{m('pullRequests'):.0f} requests); end to end {m('e2e'):.2f} s (target < 2 s)")
    print(f"{mode}: push {m('pushed') / m('push'):,.0f} changes/s; pull {m('pulled') / m('pull'):,.0f} records/s for the whole "
          f"process, {m('pulled') / m('apply'):,.0f} records/s applied (target >= 50,000)")
    print(f"{mode}: wire: {m('sentPerChange'):.0f} bytes/change sent, {m('receivedPerRecord'):.0f} bytes/record received (bodies as sent: gzip for readable accounts, target <= 300 readable, <= 1,000 encrypted)")
    print(f"{mode}: no-change sync: {m('idleRequests'):.0f} request(s), {m('idleSent'):.0f} bytes sent, "
          f"{m('idleReceived'):.0f} bytes received (target: one request each way, < 200 bytes of body)")
ratio = lambda key: median("encrypted", key) / median("plaintext", key)
print(f"encrypted / plaintext: end to end {ratio('e2e'):.2f}x (target <= 1.2x), push {ratio('push'):.2f}x, pull {ratio('pull'):.2f}x, "
      f"bytes/change sent {ratio('sentPerChange'):.2f}x, bytes/record received {ratio('receivedPerRecord'):.2f}x")
# Each round's pair (the machine is shared: the spread says how far one median can be trusted).
plain = [r["e2e"] for r in rows if r["mode"] == "plaintext"]
sealed = [r["e2e"] for r in rows if r["mode"] == "encrypted"]
pairs = [e / p for p, e in zip(plain, sealed)]
print("rounds, end to end: " + ", ".join(f"{p:.2f} s / {e:.2f} s = {e / p:.2f}x" for p, e in zip(plain, sealed))
      + f" (ratios {min(pairs):.2f}x to {max(pairs):.2f}x)")
PY
