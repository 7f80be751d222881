# Sourced by the sync benchmarks (sync.sh, pull.sh): release builds of the
# client and the server, and two machines of one account on a fresh server.
# build_clients: builds brsync, brsync-sync,
#   brsyncd, brsyncd-bench and brsync-bench in release, all without PIE (as
#   brsync ships); sets $bin.
# two_machines DIR MODE: a fresh server with its store in DIR/server, serving
#   on a free port ($pid), and homes DIR/a (the laptop) and DIR/b (the
#   desktop) of its account, synced once. MODE "encrypted": B encrypts the
#   empty account first and A holds the key, so what is timed afterwards is
#   steady-state sealing and opening, not the switch.
build_clients() {
  # Every product with the same flags: SwiftPM builds everything again when
  # they change, so brsync without PIE and the rest with it rebuilt the whole
  # package twice for every run of a benchmark.
  local flags=(-c release --static-swift-stdlib -Xswiftc -Xclang-linker -Xswiftc -no-pie)
  for product in brsync brsync-sync brsyncd brsyncd-bench brsync-bench; do swift build "${flags[@]}" --product "$product" >/dev/null; done
  bin="$(swift build "${flags[@]}" --show-bin-path)"
}

two_machines() {
  local dir="$1" mode="$2" desktop_token laptop_token port
  mkdir -p "$dir"
  "$bin/brsyncd-bench" setup "$dir/server" >/dev/null
  desktop_token="$("$bin/brsyncd" device add bench desktop --db "$dir/server/store.sqlite" | tail -1)"
  laptop_token="$(cat "$dir/server/token")"
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')"
  "$bin/brsyncd" serve --db "$dir/server/store.sqlite" --listen "127.0.0.1:$port" \
    --cert "$dir/server/server.pem" --key "$dir/server/server.key" --log-level warning &
  pid=$!
  sleep 0.5
  for home in a b; do
    "$bin/brsync" init --home "$dir/$home" >/dev/null
  done
  # The tokens are on the command line: a benchmark's, on loopback (the warning is left out).
  "$bin/brsync" remote set "https://127.0.0.1:$port" --token "$laptop_token" --ca "$dir/server/ca.pem" --home "$dir/a" >/dev/null 2>&1
  "$bin/brsync" remote set "https://127.0.0.1:$port" --token "$desktop_token" --ca "$dir/server/ca.pem" --home "$dir/b" >/dev/null 2>&1
  if [ "$mode" = encrypted ]; then
    "$bin/brsync" key init --quiet --home "$dir/b" 2>/dev/null >"$dir/code"
    "$bin/brsync" key add --quiet --home "$dir/a" <"$dir/code" 2>/dev/null
  else
    "$bin/brsync" sync --quiet --home "$dir/b"
    "$bin/brsync" sync --quiet --home "$dir/a"
  fi
}
