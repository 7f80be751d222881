# Sourced by the benchmarks that need PostgreSQL (postgres.sh, watch.sh):
# helpers and a throw-away cluster on 127.0.0.1 in "$work/pg", as the
# postgres user when run as root (the server refuses root). Needs `work`
# (a folder) and `pg_bin` (PostgreSQL's bin folder); sets `pg_port`,
# `pg_url` and BRSYNCD_STORE_PASSWORD_FILE. The caller's EXIT trap runs
# `stop_cluster`.
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- env -C / "$@"; else "$@"; fi; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
stop_cluster() { [ -d "$work/pg/data" ] && as_pg "$pg_bin/pg_ctl" -D "$work/pg/data" -m immediate -w stop >/dev/null 2>&1 || true; }

mkdir -p "$work/pg"
password="bench-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s' "$password" >"$work/pg/server-password"
printf '%s\n' "$password" >"$work/db-password"
chmod 600 "$work/db-password"
[ "$(id -u)" -eq 0 ] && chown -R postgres "$work/pg"
chmod 700 "$work/pg"
pg_port="$(free_port)"
as_pg "$pg_bin/initdb" -D "$work/pg/data" -U brsync --pwfile "$work/pg/server-password" -A scram-sha-256 -E UTF8 --locale C >/dev/null
as_pg "$pg_bin/pg_ctl" -D "$work/pg/data" -l "$work/pg/server.log" -w \
  -o "-p $pg_port -c listen_addresses=127.0.0.1 -k $work/pg -c max_connections=200" start >/dev/null
export BRSYNCD_STORE_PASSWORD_FILE="$work/db-password"
pg_url="postgres://brsync@127.0.0.1:$pg_port/postgres"
