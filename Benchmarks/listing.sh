#!/usr/bin/env bash
# Listing benchmark (prints numbers; it is not a test). Release build; a
# replica with COUNT rules (default 20,000) made by `brsync import`; then the
# median of RUNS runs (default 5) of each command that reads every rule:
# `rules list`, `rules list --json`, `export`, and `log` (its newest 50
# entries), next to the sqlite3 CLI reading every rule's row from the same
# file in the same run (the floor: opening the file and reading it), with the
# ratio. Target: each under 100 ms at 20,000 rules.
# Wall times on a shared machine swing by 2x from one minute to the next, so
# when valgrind is installed the same commands are also counted in
# instructions (callgrind), which do not depend on the neighbours.
# Usage: bash Benchmarks/listing.sh [COUNT] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
source Benchmarks/needs.sh
needs "apt-get install -y sqlite3" sqlite3
count="${1:-20000}"
runs="${2:-5}"
flags=(-c release --static-swift-stdlib -Xswiftc -Xclang-linker -Xswiftc -no-pie)
swift build "${flags[@]}" --product brsync >/dev/null
bin="$(swift build "${flags[@]}" --show-bin-path)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export BRSYNC_HOME="$work/home"
python3 Benchmarks/rules-export.py "$count" >"$work/rules.json"
"$bin/brsync" init >/dev/null
"$bin/brsync" import "$work/rules.json" >/dev/null

# Median wall time of RUNS runs of a command, in milliseconds.
median() {
  local times=()
  for _ in $(seq "$runs"); do
    local start end
    start=$(date +%s%N)
    "$@" >/dev/null
    end=$(date +%s%N)
    times+=($(( (end - start) / 1000000 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

floor=$(median sqlite3 "$BRSYNC_HOME/replica.sqlite" "SELECT key, fields FROM records WHERE collection = 'rules' AND deleted = 0 ORDER BY priority DESC, key")
echo "rules: $count; median of $runs runs; sqlite3 CLI reading every rule: ${floor} ms"
for command in "rules list" "rules list --json" "export" "log"; do
  # shellcheck disable=SC2086
  ms=$(median "$bin/brsync" $command)
  ratio=$(awk -v a="$ms" -v b="$floor" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }')
  verdict=$([ "$ms" -lt 100 ] && echo "under 100 ms" || echo "OVER 100 ms")
  printf '%-24s %6s ms  %5sx sqlite3  %s\n' "brsync $command" "$ms" "$ratio" "$verdict"
done

if command -v valgrind >/dev/null; then
  instructions() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
  }
  base=$(instructions sqlite3 "$BRSYNC_HOME/replica.sqlite" "SELECT key, fields FROM records WHERE collection = 'rules' AND deleted = 0 ORDER BY priority DESC, key")
  echo "instructions (callgrind): sqlite3 CLI reading every rule: $(awk -v a="$base" 'BEGIN { printf "%.2f G", a / 1e9 }')"
  for command in "rules list" "rules list --json" "export"; do
    # shellcheck disable=SC2086
    count=$(instructions "$bin/brsync" $command)
    awk -v a="$count" -v b="$base" -v c="brsync $command" 'BEGIN { printf "%-24s %6.2f G  %5.1fx sqlite3\n", c, a / 1e9, a / b }'
  done
fi
