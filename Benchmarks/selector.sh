#!/usr/bin/env bash
# Selector benchmark: release build with a static Swift runtime, then
#   in-process resolution with 100 / 10,000 / 100,000 rules, and
#   `brsync resolve --json URL` (10,000 rules) next to the sqlite3 CLI, same run.
# Prints numbers; it is not a test. Usage: bash Benchmarks/selector.sh [--runs N]
set -euo pipefail
cd "$(dirname "$0")/.."
source Benchmarks/needs.sh
needs "apt-get install -y sqlite3" sqlite3
# The release build of README "Install": a static Swift runtime, and brsync
# (what a click runs) a static executable, built in a folder of its own.
flags=(-c release --static-swift-stdlib)
selector=(-c release --scratch-path .build/selector --static-swift-stdlib -Xswiftc -static-executable)
swift build "${selector[@]}" --product brsync >/dev/null
swift build "${flags[@]}" --product brsync-bench >/dev/null
bin="$(swift build "${flags[@]}" --show-bin-path)"
"$bin/brsync-bench" --brsync "$(swift build "${selector[@]}" --show-bin-path)/brsync" --sqlite3 "$(command -v sqlite3)" "$@"
