#!/usr/bin/env bash
# PostgreSQL store benchmark (prints numbers; it is not a test). Builds in
# release, starts a throw-away PostgreSQL cluster on 127.0.0.1, and measures in
# one run, with wrk -t2 -c64 over keep-alive TLS:
#   - push apply: one push of 10,000 records, on SQLite and on PostgreSQL;
#   - no-change pull req/s: one brsyncd on SQLite; one brsyncd on PostgreSQL;
#     one and three brsyncd on PostgreSQL behind HAProxy (TCP, TLS passed through,
#     round robin), in alternating rounds, medians;
#   - 10,000 rules A -> B end to end with the real binaries (brsync push on A,
#     brsync pull on B), on SQLite and on PostgreSQL, alternating rounds.
# Usage: bash Benchmarks/postgres.sh [seconds per wrk run, default 5]
set -euo pipefail
cd "$(dirname "$0")/.."
source Benchmarks/needs.sh
needs "apt-get install -y wrk haproxy" wrk haproxy
haproxy_bin="$(tool_path haproxy)"
duration="${1:-5}"
pg_bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
[ -x "$pg_bin/initdb" ] || { echo "needs PostgreSQL: apt-get install -y postgresql" >&2; exit 2; }
ulimit -n 8192

# Every product with the same flags (changed flags rebuild everything).
flags=(-c release --static-swift-stdlib -Xswiftc -Xclang-linker -Xswiftc -no-pie)
for product in brsync brsyncd brsyncd-bench brsync-sync brsync-bench; do swift build "${flags[@]}" --product "$product" >/dev/null; done
bin="$(swift build "${flags[@]}" --show-bin-path)"

work="$(mktemp -d)"
chmod 755 "$work"
pids=()
cleanup() {
  for pid in "${pids[@]}" $(cat "$work"/*.pid 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
  stop_cluster
  rm -rf "$work"
}
trap cleanup EXIT
source Benchmarks/postgres-cluster.sh
echo "PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$pg_port (fsync on, the defaults)"

# One account and device on SQLite, copied to PostgreSQL (same token).
"$bin/brsyncd-bench" setup "$work"
chmod 644 "$work"/*.pem "$work/server.key"
"$bin/brsyncd" migrate --from "sqlite:$work/store.sqlite" --to "$pg_url" >/dev/null
token="$(cat "$work/token")"

serve() { # serve NAME STORE-ARGS...: starts brsyncd (its pid in NAME.pid), prints its port
  local name="$1"; shift
  local port; port="$(free_port)"
  # All its output to the log: a command substitution waits for every holder of its pipe.
  "$bin/brsyncd" serve "$@" --listen "127.0.0.1:$port" --cert "$work/server.pem" --key "$work/server.key" \
    --max-connections-per-address 2000 --log-level warning >"$work/$name.log" 2>&1 &
  echo $! >"$work/$name.pid"
  for _ in $(seq 100); do curl -sk "https://127.0.0.1:$port/v1/health" >/dev/null && break; sleep 0.1; done
  echo "$port"
}
sqlite_port="$(serve sqlite --db "$work/store.sqlite")"
pg_ports=()
for i in 1 2 3; do pg_ports+=("$(serve pg$i --store "$pg_url")"); done

echo "== push of 10,000 records =="
echo "SQLite:"; "$bin/brsyncd-bench" push "$work" "$sqlite_port" 10000 | sed 's/^/  /'
echo "PostgreSQL:"; "$bin/brsyncd-bench" push "$work" "${pg_ports[0]}" 10000 | sed 's/^/  /'

echo "== 10,000 rules A -> B end to end (brsync push on A, then brsync pull on B; fresh account each round) =="
# Seconds, from bash itself: a python3 started for each reading took ~90 ms,
# and every interval measured counted one of those starts.
now() { local t="$EPOCHREALTIME"; echo "${t/,/.}"; }
end_to_end() { # end_to_end LABEL ROUND PORT STORE-ARGS...: prints "push-seconds pull-seconds"
  local label="$1" round="$2" port="$3"; shift 3
  local account="e2e$round" home="$work/e2e-$label-$round"
  "$bin/brsyncd" account add "$account" "$@" >/dev/null
  local token_a token_b
  token_a="$("$bin/brsyncd" device add "$account" a "$@" | tail -1)"
  token_b="$("$bin/brsyncd" device add "$account" b "$@" | tail -1)"
  "$bin/brsync-bench" make-replica "$home-a" 10000
  "$bin/brsync" remote set "https://127.0.0.1:$port" --token "$token_a" --ca "$work/ca.pem" --home "$home-a" >/dev/null
  "$bin/brsync" init --home "$home-b" >/dev/null
  "$bin/brsync" remote set "https://127.0.0.1:$port" --token "$token_b" --ca "$work/ca.pem" --home "$home-b" >/dev/null
  local t0 t1 t2
  t0="$(now)"; "$bin/brsync" push --json --home "$home-a" >"$home-push.json"
  t1="$(now)"; "$bin/brsync" pull --json --home "$home-b" >"$home-pull.json"
  t2="$(now)"
  python3 -c "import json,sys; p=json.load(open('$home-pull.json')); assert p['pulled'] >= 10000, p; print($t1 - $t0, $t2 - $t1)"
}
for round in 1 2 3 4 5; do
  end_to_end sqlite "$round" "$sqlite_port" --db "$work/store.sqlite" >>"$work/e2e-sqlite.txt"
  end_to_end pg "$round" "${pg_ports[0]}" --store "$pg_url" >>"$work/e2e-pg.txt"
done
python3 - "$work" <<'PY'
import statistics, sys
work = sys.argv[1]
medians = {}
for name, label in (("sqlite", "SQLite"), ("pg", "PostgreSQL")):
    rows = [tuple(map(float, line.split())) for line in open(f"{work}/e2e-{name}.txt")]
    totals = [push + pull for push, pull in rows]
    medians[name] = statistics.median(totals)
    print(f"{label:11s} median {medians[name]:.2f} s end to end (push {statistics.median(r[0] for r in rows):.2f} s, "
          f"pull {statistics.median(r[1] for r in rows):.2f} s; rounds {', '.join(f'{t:.2f}' for t in totals)})")
print(f"ratio PostgreSQL / SQLite: {medians['pg'] / medians['sqlite']:.2f}x")
PY

haproxy_config() { # haproxy_config PORT BACKEND-PORTS...
  local port="$1"; shift
  cat <<CONF
global
  maxconn 2000
defaults
  mode tcp
  timeout connect 5s
  timeout client 60s
  timeout server 60s
frontend brsyncd
  bind 127.0.0.1:$port
  default_backend instances
backend instances
  balance roundrobin
  option httpchk GET /v1/health
CONF
  local i=0
  for backend in "$@"; do
    i=$((i + 1))
    echo "  server b$i 127.0.0.1:$backend check check-ssl verify none inter 2s"
  done
}
lb1_port="$(free_port)"; lb3_port="$(free_port)"
haproxy_config "$lb1_port" "${pg_ports[0]}" >"$work/haproxy1.cfg"
haproxy_config "$lb3_port" "${pg_ports[@]}" >"$work/haproxy3.cfg"
"$haproxy_bin" -q -f "$work/haproxy1.cfg" >"$work/haproxy1.log" 2>&1 & pids+=($!)
"$haproxy_bin" -q -f "$work/haproxy3.cfg" >"$work/haproxy3.log" 2>&1 & pids+=($!)
for port in "$lb1_port" "$lb3_port"; do
  for _ in $(seq 100); do curl -sk "https://127.0.0.1:$port/v1/health" >/dev/null && break; sleep 0.1; done
  curl -skf "https://127.0.0.1:$port/v1/health" >/dev/null || { echo "HAProxy on $port does not answer:" >&2; cat "$work"/haproxy*.log >&2; exit 1; }
done

rounds=3
targets=("sqlite:$sqlite_port" "pg:${pg_ports[0]}" "haproxy-1:$lb1_port" "haproxy-3:$lb3_port")
echo "== no-change pull: wrk -t2 -c64 -d${duration}s, keep-alive, TLS, $rounds alternating rounds =="
for round in $(seq "$rounds"); do
  for target in "${targets[@]}"; do
    wrk -t2 -c64 -d"${duration}s" --latency -H "Authorization: Bearer $token" \
      "https://127.0.0.1:${target#*:}/v1/pull?since=10000" >"$work/wrk-${target%%:*}-$round.txt"
  done
done
python3 - "$work" "$rounds" <<'PY'
import sys
sys.path.insert(0, "Benchmarks")
from wrk_rounds import read
work, rounds = sys.argv[1], int(sys.argv[2])
labels = {"sqlite": "1 brsyncd, SQLite", "pg": "1 brsyncd, PostgreSQL", "haproxy-1": "1 brsyncd, PostgreSQL, HAProxy",
          "haproxy-3": "3 brsyncd, PostgreSQL, HAProxy"}
results = {}
for name in labels:
    median, p99, rps, errors = read(work, name, rounds)
    results[name] = median
    print(f"{labels[name]:32s} median {median:8,.0f} req/s (rounds {', '.join(f'{x:,.0f}' for x in rps)}), "
          f"p99 {p99:.2f} ms {' '.join(errors)}")
print(f"ratio PostgreSQL / SQLite (one brsyncd): {results['pg'] / results['sqlite']:.2f}x; "
      f"3 instances / 1 instance behind HAProxy: {results['haproxy-3'] / results['haproxy-1']:.2f}x")
PY
