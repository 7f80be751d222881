#!/usr/bin/env bash
# Server benchmark (prints numbers; it is not a test). Builds in release, starts
# brsyncd with TLS, and measures with wrk over keep-alive at 64 connections:
#   - a no-change pull (one token on every connection: the per-token gate is
#     raised), next to nginx serving a static file of the same size over
#     TLS with the same certificate, in the same run: req/s, p99, ratio;
#   - push throughput: records/s applied for one 10,000-record push;
#   - the wire readers on that push and on a page of it, next to parsing the
#     same text into a JSON tree;
#   - brsyncd's RSS holding 10,000 idle keep-alive TLS connections, and
#     50,000 from 5 loopback addresses on a brsyncd of its own (as many as
#     the open-files limit allows, when it cannot be raised to 60,000);
#   - 5,000 TCP connections that never send a byte, from 100 loopback addresses:
#     how long a new TLS client waits for an answer.
# Usage: bash Benchmarks/server.sh [seconds per wrk run, default 5]
set -euo pipefail
cd "$(dirname "$0")/.."
source Benchmarks/needs.sh
needs "apt-get install -y wrk nginx" wrk nginx
nginx_bin="$(tool_path nginx)"
duration="${1:-5}"
ulimit -Hn 200000 2>/dev/null || true
ulimit -n "$(ulimit -Hn)"

# The server as it ships (with PIE), in a build folder of its own: the client
# benchmarks build without PIE, and changed flags would rebuild everything.
flags=(-c release --static-swift-stdlib --scratch-path .build/server-bench)
swift build "${flags[@]}" --product brsyncd >/dev/null
swift build "${flags[@]}" --product brsyncd-bench >/dev/null
bin="$(swift build "${flags[@]}" --show-bin-path)"

work="$(mktemp -d)"
chmod 755 "$work"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

"$bin/brsyncd-bench" setup "$work"
chmod 644 "$work"/*.pem "$work/server.key"
port="$(free_port)"
"$bin/brsyncd" serve --db "$work/store.sqlite" --listen "127.0.0.1:$port" --cert "$work/server.pem" --key "$work/server.key" \
  --max-connections-per-address 20000 --max-requests-per-token 1000 --log-level warning 2>"$work/brsyncd.log" &
pids+=($!)
brsyncd_pid=$!
for _ in $(seq 100); do grep -q . "$work/brsyncd.log" 2>/dev/null || curl -sk "https://127.0.0.1:$port/v1/health" >/dev/null && break; sleep 0.1; done

echo "== push =="
"$bin/brsyncd-bench" push "$work" "$port" 10000

echo "== the wire readers, in this process =="
"$bin/brsyncd-bench" read 10000

nginx_port="$(free_port)"
mkdir -p "$work/www"
cp "$work/nochange.json" "$work/www/pull.json"
chmod -R a+rX "$work/www"
cat >"$work/nginx.conf" <<CONF
worker_processes auto;
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  ssl_protocols TLSv1.2 TLSv1.3;
  server {
    listen 127.0.0.1:$nginx_port ssl;
    ssl_certificate $work/server.pem;
    ssl_certificate_key $work/server.key;
    root $work/www;
    default_type application/json;
  }
}
CONF
"$nginx_bin" -c "$work/nginx.conf" -g 'daemon off;' &
pids+=($!)
sleep 0.5

token="$(cat "$work/token")"
rounds=5
echo "== no-change pull vs nginx: wrk -t2 -c64 -d${duration}s, keep-alive, TLS, $rounds alternating rounds =="
# Alternating rounds, medians: both servers see the same (shared, noisy) machine.
for round in $(seq "$rounds"); do
  wrk -t2 -c64 -d"${duration}s" --latency -H "Authorization: Bearer $token" "https://127.0.0.1:$port/v1/pull?since=10000" >"$work/wrk-brsyncd-$round.txt"
  wrk -t2 -c64 -d"${duration}s" --latency "https://127.0.0.1:$nginx_port/pull.json" >"$work/wrk-nginx-$round.txt"
done
python3 - "$work" "$rounds" <<'PY'
import sys
sys.path.insert(0, "Benchmarks")
from wrk_rounds import read
work, rounds = sys.argv[1], int(sys.argv[2])
b, bp, ball, berr = read(work, "brsyncd", rounds)
n, np_, nall, nerr = read(work, "nginx", rounds)
print(f"brsyncd pull:  median {b:,.0f} req/s (rounds {', '.join(f'{x:,.0f}' for x in ball)}), p99 {bp:.2f} ms {' '.join(berr)}")
print(f"nginx static:  median {n:,.0f} req/s (rounds {', '.join(f'{x:,.0f}' for x in nall)}), p99 {np_:.2f} ms {' '.join(nerr)}")
print(f"ratio brsyncd / nginx: {b / n:.2f}x, p99 {bp / np_:.2f}x nginx's (targets: >= 1.0x, p99 <= 1.0x)")
PY

echo "== a new TLS connection per request: wrk -t2 -c16 -d${duration}s, Connection: close, $rounds alternating rounds =="
# The TLS handshakes run on the event loops (one per core): their rate, next to nginx's.
for round in $(seq "$rounds"); do
  wrk -t2 -c16 -d"${duration}s" -H "Connection: close" "https://127.0.0.1:$port/v1/health" >"$work/wrk-hs-brsyncd-$round.txt"
  wrk -t2 -c16 -d"${duration}s" -H "Connection: close" "https://127.0.0.1:$nginx_port/pull.json" >"$work/wrk-hs-nginx-$round.txt"
done
python3 - "$work" "$rounds" <<'PY'
import re, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def rate(name):
    return statistics.median(float(re.search(r"Requests/sec:\s+([\d.]+)", open(f"{work}/wrk-hs-{name}-{r}.txt").read()).group(1))
                             for r in range(1, rounds + 1))
b, n = rate("brsyncd"), rate("nginx")
print(f"handshakes: brsyncd {b:,.0f}/s, nginx {n:,.0f}/s: {b / n:.2f}x (target >= 1.0x)")
PY

echo "== idle connections =="
"$bin/brsyncd-bench" idle "$work" "$port" 10000 "$brsyncd_pid"
# As many as the open-files limit allows, up to 50,000 (each process holds one end).
big=$(( $(ulimit -n) >= 60000 ? 50000 : $(ulimit -n) - 1000 ))
[ "$big" -lt 50000 ] && echo "(the open-files limit is $(ulimit -n) and cannot be raised here: $big connections instead of 50,000)"
big_port="$(free_port)"
# A store of its own (the one-server lock refuses a second brsyncd on the
# store the first one serves): an online copy, with the same devices and tokens.
"$bin/brsyncd" backup --db "$work/store.sqlite" "$work/big.sqlite" >/dev/null
"$bin/brsyncd" serve --db "$work/big.sqlite" --listen "127.0.0.1:$big_port" --cert "$work/server.pem" --key "$work/server.key" \
  --max-connections 60000 --max-connections-per-address 20000 --log-level warning 2>"$work/big.log" &
pids+=($!)
big_pid=$!
for _ in $(seq 100); do curl -sk "https://127.0.0.1:$big_port/v1/health" >/dev/null && break; sleep 0.1; done
curl -sk "https://127.0.0.1:$big_port/v1/health" >/dev/null || { echo "the second brsyncd did not start: $(cat "$work/big.log")" >&2; exit 1; }
"$bin/brsyncd-bench" idle "$work" "$big_port" "$big" "$big_pid" 5
kill "$big_pid"
echo "== a flood of silent connections =="
"$bin/brsyncd-bench" flood "$work" "$port" 5000 100
