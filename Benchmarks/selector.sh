#!/usr/bin/env bash
# Selector benchmark: release build with a static Swift runtime, then
#   in-process resolution with 100 / 10,000 / 100,000 rules, and
#   `brsync resolve --json URL` (10,000 rules) next to the sqlite3 CLI, same run.
# Prints numbers; it is not a test. Usage: bash Benchmarks/selector.sh [--runs N]
set -euo pipefail
cd "$(dirname "$0")/.."
source Benchmarks/needs.sh
needs "apt-get install -y sqlite3" sqlite3
# The release flags of README "Install": a static Swift runtime, and a non-PIE
# executable, which spares the loader ~75,000 relocations at every start.
flags=(-c release --static-swift-stdlib -Xswiftc -Xclang-linker -Xswiftc -no-pie)
swift build "${flags[@]}" --product brsync >/dev/null
swift build "${flags[@]}" --product brsync-bench >/dev/null
bin="$(swift build "${flags[@]}" --show-bin-path)"
"$bin/brsync-bench" --brsync "$bin/brsync" --sqlite3 "$(command -v sqlite3)" "$@"
