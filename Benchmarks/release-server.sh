# Sourced by the benchmarks that run one release brsyncd over TLS on loopback.
# build_server: builds brsyncd and brsyncd-bench in release and sets $bin.
# prepare_store: makes $work (removed on exit, with the server) holding a
#   store with account "bench", its token ($work/token) and certificates.
# start_server [ARGS...]: serves that store on a free port ($port, $pid); a
#   caller that set the array store_args (e.g. --store URL) serves that instead.
build_server() {
  local flags=(-c release --static-swift-stdlib)
  swift build "${flags[@]}" --product brsyncd >/dev/null
  swift build "${flags[@]}" --product brsyncd-bench >/dev/null
  bin="$(swift build "${flags[@]}" --show-bin-path)"
}

prepare_store() {
  work="$(mktemp -d)"
  pid=""
  trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
  "$bin/brsyncd-bench" setup "$work" >/dev/null
}

start_server() {
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')"
  local store=(--db "$work/store.sqlite")
  [ -n "${store_args+set}" ] && store=("${store_args[@]}")
  "$bin/brsyncd" serve "${store[@]}" --listen "127.0.0.1:$port" --cert "$work/server.pem" --key "$work/server.key" \
    --log-level warning "$@" &
  pid=$!
  sleep 0.5
}
