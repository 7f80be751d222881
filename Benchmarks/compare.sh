#!/usr/bin/env bash
# Before and after (prints numbers; it is not a test): runs benchmarks on BASE
# and on HEAD (each a commit checked out in a temporary worktree and built
# there: uncommitted changes are left out, and editing this checkout while it
# runs changes nothing), alternating (base, this, this, base, …: each side runs first
# equally often), ROUNDS times each, and prints the median of each number on
# each side, with after/before and whether it moved the wrong way by more
# than 5%. A shared machine's neighbours change within minutes; alternating
# spreads that over both sides.
# Each side runs its own copy of the benchmark script, so BASE's scripts must
# print the numbers named below (they have since the benchmarks were written);
# a benchmark script BASE lacks (pull.sh is newer than some bases) runs from
# HEAD's copy on BASE's build.
# Usage: bash Benchmarks/compare.sh BASE [ROUNDS, default 5] [server sync selector listing pull noisy …]
set -euo pipefail
cd "$(dirname "$0")/.."
base="${1:?usage: bash Benchmarks/compare.sh BASE [ROUNDS] [BENCHMARK...]}"
rounds="${2:-5}"
shift $(($# < 2 ? $# : 2))
benchmarks=("$@")
[ ${#benchmarks[@]} -gt 0 ] || benchmarks=(server sync selector listing pull)
git rev-parse --verify -q "$base^{commit}" >/dev/null || { echo "compare: no commit '$base'" >&2; exit 2; }

work="$(mktemp -d)"
cleanup() {
  git worktree remove --force "$work/base" >/dev/null 2>&1 || true
  git worktree remove --force "$work/this" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
git worktree add -q --detach "$work/base" "$base"
git worktree add -q --detach "$work/this" HEAD
for script in Benchmarks/*.sh; do [ -e "$work/base/$script" ] || cp "$work/this/$script" "$work/base/$script"; done
echo "compare: before $(git rev-parse --short "$base"), after $(git rev-parse --short HEAD)" >&2

# The command a benchmark runs, and the numbers it prints: NAME|REGEX|BETTER,
# the regex's first group the number (commas dropped), BETTER "high" or "low".
command_of() {
  case "$1" in
    server) echo "bash Benchmarks/server.sh 3" ;;
    sync) echo "bash Benchmarks/sync.sh 10000 1" ;;
    selector) echo "bash Benchmarks/selector.sh" ;;
    listing) echo "bash Benchmarks/listing.sh 20000 3" ;;
    pull) echo "bash Benchmarks/pull.sh 10000 plaintext; bash Benchmarks/pull.sh 10000 encrypted" ;;
    noisy) echo "bash Benchmarks/noisy-neighbour.sh 10" ;;
    *) echo "compare: no benchmark '$1' (server, sync, selector, listing, pull, noisy)" >&2; exit 2 ;;
  esac
}
numbers_of() {
  case "$1" in
    server) cat <<'EOF'
pull req/s|^brsyncd pull: +median ([0-9,]+) req/s|high
pull p99 ms|^brsyncd pull:.*p99 ([0-9.]+) ms|low
pull / nginx (same run)|^ratio brsyncd / nginx: ([0-9.]+)x|high
push records/s|^push: 10000 records.*: ([0-9]+) records/s|high
push commit records/s|^push: merge and commit.*: ([0-9]+) records/s|high
PushRequest read ms|^PushRequest\(reading:\): ([0-9.]+) ms|low
handshakes/s|^handshakes: brsyncd ([0-9,]+)/s|high
idle KB each|^idle: 10000 .*\(([0-9.]+) KB each\)|low
EOF
    ;;
    sync) cat <<'EOF'
plain end to end s|^plaintext: A -> B.*end to end ([0-9.]+) s|low
encrypted end to end s|^encrypted: A -> B.*end to end ([0-9.]+) s|low
plain pull applied records/s|^plaintext: push.*, ([0-9,]+) records/s applied|high
encrypted pull applied records/s|^encrypted: push.*, ([0-9,]+) records/s applied|high
EOF
    ;;
    selector) cat <<'EOF'
resolve 10000 rules µs/URL|^rules +10000: +([0-9.]+) µs per URL|low
brsync resolve --json ms|^brsync resolve --json: median ([0-9.]+) ms|low
brsync open ms|^brsync open: +median ([0-9.]+) ms|low
EOF
    ;;
    noisy) cat <<'EOF'
quiet pull ms|^quiet account, pull of 500 records: quiet server median ([0-9.]+) ms|low
pull while flooded ms|^same, while the noisy account made.*: median ([0-9.]+) ms|low
quiet push ms|^quiet account, push of one rule: quiet server median ([0-9.]+) ms|low
push while flooded ms|^same, while the noisy account relayed.*: median ([0-9.]+) ms|low
EOF
    ;;
    pull) cat <<'EOF'
plain apply ms|^pull plaintext: .*apply ([0-9]+) ms|low
plain whole pull ms|^pull plaintext: .*whole pull ([0-9]+) ms|low
plain peak MB|^pull plaintext: .*peak ([0-9.]+) MB|low
encrypted apply ms|^pull encrypted: .*apply ([0-9]+) ms|low
encrypted whole pull ms|^pull encrypted: .*whole pull ([0-9]+) ms|low
encrypted peak MB|^pull encrypted: .*peak ([0-9.]+) MB|low
EOF
    ;;
    listing) cat <<'EOF'
rules list ms|^brsync rules list +([0-9]+) ms|low
rules list --json ms|^brsync rules list --json +([0-9]+) ms|low
export ms|^brsync export +([0-9]+) ms|low
rules list G instructions|^brsync rules list +([0-9.]+) G|low
export G instructions|^brsync export +([0-9.]+) G|low
EOF
    ;;
  esac
}

run_side() { # side benchmark round
  local dir="$work/$1" log="$work/$1-$2-$3.log"
  (cd "$dir" && eval "$(command_of "$2")") >"$log" 2>&1 || { echo "compare: $1 $2 failed (round $3):" >&2; tail -5 "$log" >&2; exit 1; }
}

for benchmark in "${benchmarks[@]}"; do
  command_of "$benchmark" >/dev/null
  echo "== $benchmark: $(command_of "$benchmark"), $rounds rounds a side, alternating ==" >&2
  for round in $(seq "$rounds"); do
    if [ $((round % 2)) -eq 1 ]; then order=(base this); else order=(this base); fi
    for side in "${order[@]}"; do run_side "$side" "$benchmark" "$round"; done
  done
  python3 - "$work" "$benchmark" "$rounds" <<EOF
import re, statistics, sys
work, benchmark, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
specs = [line.split("|") for line in """$(numbers_of "$benchmark")""".strip().splitlines()]
print(f"== {benchmark}: median of {rounds} rounds a side ==")
for name, pattern, better in specs:
    values = {}
    for side in ("base", "this"):
        found = []
        for r in range(1, rounds + 1):
            for line in open(f"{work}/{side}-{benchmark}-{r}.log", errors="replace"):
                m = re.search(pattern, line)
                if m:
                    found.append(float(m.group(1).replace(",", "")))
                    break
        values[side] = found
    if not values["base"] or not values["this"]:
        print(f"{name:32} not printed by {'base' if not values['base'] else 'this'} side")
        continue
    before, after = statistics.median(values["base"]), statistics.median(values["this"])
    ratio = after / before if before else float("inf")
    worse = ratio < 0.95 if better == "high" else ratio > 1.05
    print(f"{name:32} before {before:12,.2f}  after {after:12,.2f}  after/before {ratio:5.2f}x"
          + ("  WORSE by more than 5%" if worse else ""))
EOF
done
