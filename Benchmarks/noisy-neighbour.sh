#!/usr/bin/env bash
# Noisy-neighbour benchmark (prints numbers; it is not a test). Release build,
# TLS on loopback. Account "bench" (500 rules) is pulled by a client that
# asks for a page from zero, one request at a time, first on a quiet server,
# then while account "noisy", with one device token, does what it can to the
# server from 8 connections: pulls with a cursor far past its account (a new
# timeline each time), pulls its own account of 20 records near the size
# limit (76 MB) from zero, and pushes records near every limit. Prints the quiet
# account's pull latency (median and p99) in both runs and their ratio
# (target: within 2x), and how many requests the noisy account made. Then
# writes: the quiet account pushes one rule a request, quiet, then while four
# devices of the noisy account relay 7.3 MB each over and over; the median
# and p99 of those pushes and their ratio (target: median within 2x).
# With "postgres" as the second argument, the same runs on a throw-away
# PostgreSQL cluster on 127.0.0.1 (the store copied there with `brsyncd
# migrate`), whose writers do not queue for one lock.
# Usage: bash Benchmarks/noisy-neighbour.sh [seconds per run, default 10] [sqlite|postgres]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"
kind="${2:-sqlite}"
source Benchmarks/release-server.sh
build_server
prepare_store
store_args=(--db "$work/store.sqlite")
if [ "$kind" = postgres ]; then
  pg_bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
  [ -x "$pg_bin/initdb" ] || { echo "needs PostgreSQL: apt-get install -y postgresql" >&2; exit 2; }
  chmod 755 "$work"
  source Benchmarks/postgres-cluster.sh
  trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null || true; stop_cluster; rm -rf "$work"' EXIT
  "$bin/brsyncd" migrate --from "sqlite:$work/store.sqlite" --to "$pg_url" >/dev/null
  store_args=(--store "$pg_url")
fi
echo "store: $kind"
"$bin/brsyncd" account add noisy "${store_args[@]}" >/dev/null
noisy_token="$("$bin/brsyncd" device add noisy x "${store_args[@]}" | tail -1)"
# Four more devices of the noisy account, one for each relaying process
# (a token has at most 2 requests in progress).
relay_tokens=""
for index in 1 2 3 4; do
  relay_tokens="$relay_tokens,$("$bin/brsyncd" device add noisy "relay$index" "${store_args[@]}" | tail -1)"
done
start_server --max-connections-per-address 256

python3 - "$port" "$work/ca.pem" "$(cat "$work/token")" "$noisy_token" "$seconds" "${relay_tokens#,}" <<'PY'
import json, os, socket, ssl, sys, threading, time

port, ca, quiet_token, noisy_token, seconds = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])
relay_tokens = sys.argv[6].split(",")
context = ssl.create_default_context(cafile=ca)

class Client:
    def __init__(self, token):
        self.token = token
        self.sock = context.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
    def send(self, method, target, body=b""):
        """One request; (0, b"") when the server closed the connection (a new one is made)."""
        head = (f"{method} {target} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {self.token}\r\n"
                f"Brsync-Protocol: 3\r\nContent-Length: {len(body)}\r\n\r\n").encode()
        try:
            self.sock.sendall(head + body)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = self.sock.recv(65536)
                if not chunk: raise ConnectionError("closed")
                data += chunk
            head, rest = data.split(b"\r\n\r\n", 1)
            length = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
            while len(rest) < length:
                chunk = self.sock.recv(min(1 << 20, length - len(rest)))
                if not chunk: raise ConnectionError("closed")
                rest += chunk
            if b"connection: close" in head.lower(): raise ConnectionError("closed after the answer")
            return int(head.split(b" ")[1]), rest
        except (ConnectionError, OSError, ssl.SSLError):
            self.sock.close()
            self.sock = context.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
            return 0, b""

NEAR_LIMIT = json.dumps({f"f{i}": "\u0001" * 10000 for i in range(63)})

def near_limit_body(device, sequence, base):
    """A push of one record near every limit, its fields' text made once."""
    stamp = f"{int(time.time() * 1000):016x}-{sequence:08x}-{device}"
    fields = NEAR_LIMIT.replace('": "', '": {"v": "').replace('", "f', f'", "s": "{stamp}"}}, "f')
    fields = fields[:-1] + f', "s": "{stamp}"}}}}'
    head = {"device": device, "from": sequence, "to": sequence}
    if base is not None: head["base"] = base
    return (json.dumps(head)[:-1] + f', "changes": [{{"seq": {sequence}, "collection": "settings", "key": "k{sequence}", '
            + f'"fields": {fields}, "versions": {{"{device}": 1}}}}]}}').encode()

def push(client, device, first, count, fields_of):
    wall = int(time.time() * 1000)
    changes = []
    for sequence in range(first, first + count):
        stamp = f"{wall:016x}-{sequence:08x}-{device}"
        changes.append({"seq": sequence, "collection": "settings", "key": f"k{sequence}",
                        "fields": {name: {"v": value, "s": stamp} for name, value in fields_of(sequence).items()}, "versions": {device: 1}})
    return {"device": device, "from": first, "to": first + count - 1, "changes": changes}

def push_all(client, device, records, per_push, fields_of):
    base = None
    for first in range(1, records + 1, per_push):
        body = push(client, device, first, min(per_push, records - first + 1), fields_of)
        if base is not None: body["base"] = base
        status, text = client.send("POST", "/v1/push", json.dumps(body).encode())
        if status != 200: sys.exit(f"setup push refused: {status} {text[:200]}")
        base = json.loads(text)["digest"]

push_all(Client(quiet_token), "quiet0000000001", 500, 250, lambda s: {"pattern": f"site{s}.example", "browser": "firefox"})
setup = Client(noisy_token)
base = None
for sequence in range(1, 21):
    status, text = setup.send("POST", "/v1/push", near_limit_body("noisy0000000001", sequence, base))
    if status != 200: sys.exit(f"setup push refused: {status} {text[:200]}")
    base = json.loads(text)["digest"]

def measure():
    client = Client(quiet_token)
    times = []
    end = time.time() + seconds
    while time.time() < end:
        started = time.perf_counter()
        status, _ = client.send("GET", "/v1/pull?since=0&limit=500")
        # 0: the server closed a connection that had served its share of requests; a new one is made.
        if status == 0: continue
        times.append(time.perf_counter() - started)
        if status != 200: sys.exit(f"the quiet account's pull failed: {status}")
    times.sort()
    return times[len(times) // 2] * 1000, times[int(len(times) * 0.99)] * 1000, len(times)

import multiprocessing
quiet = measure()
stop = multiprocessing.Event()
made = multiprocessing.Value("i", 0)
def noise(kind):
    # The noisy account's load is made on this machine too: its processes
    # run at the lowest priority, so that what is measured is the server's
    # fairness, not two cores shared with eight busy clients.
    os.nice(19)
    client = Client(noisy_token)
    sequence, base = 1, None
    while not stop.is_set():
        if kind % 3 == 0:
            client.send("GET", "/v1/pull?since=999999999")
        elif kind % 3 == 1:
            client.send("GET", "/v1/pull?since=0&limit=5000")
        else:
            status, text = client.send("POST", "/v1/push", near_limit_body(f"noisy{kind:010d}", sequence, base))
            if status == 200:
                base = json.loads(text)["digest"]
                sequence += 1
        with made.get_lock(): made.value += 1
# Processes, not threads: the quiet client's timings must not wait on the noisy ones' interpreter lock.
threads = [multiprocessing.Process(target=noise, args=(kind,)) for kind in range(8)]
for thread in threads: thread.start()
noisy = measure()
stop.set()
for thread in threads: thread.join()
print(f"quiet account, pull of 500 records: quiet server median {quiet[0]:.1f} ms, p99 {quiet[1]:.1f} ms ({quiet[2]} pulls)")
print(f"same, while the noisy account made {made.value} requests on 8 connections: median {noisy[0]:.1f} ms, p99 {noisy[1]:.1f} ms ({noisy[2]} pulls)")
print(f"ratio: median {noisy[0] / quiet[0]:.2f}x, p99 {noisy[1] / quiet[1]:.2f}x (target: within 2x)")

# Writes: the quiet account pushes one rule at a time (its own chain), on a
# quiet server, then while the noisy account relays about 7 MB at a time
# (eleven records near every limit, stamped anew each time) from 4 processes.
class QuietWriter:
    def __init__(self):
        self.client, self.sequence, self.base = Client(quiet_token), 501, None
        # The chain through the setup's 500 changes: the server says it in a refusal's digest.
        status, text = self.client.send("POST", "/v1/push", json.dumps(push(self.client, "quiet0000000001", 1, 1,
                                                                             lambda s: {"pattern": "x", "browser": "y"})).encode())
        self.base = json.loads(text).get("digest")
        self.pending = None
    def push_one(self):
        # A push whose answer was lost (the server closed the connection
        # after it) goes again the same: the server answers a retry of what
        # it applied with where the device stands.
        if self.pending is None:
            body = push(self.client, "quiet0000000001", self.sequence, 1,
                        lambda s: {"pattern": f"w{s}.example", "browser": "firefox"})
            body["base"] = self.base
            self.pending = json.dumps(body).encode()
        started = time.perf_counter()
        status, text = self.client.send("POST", "/v1/push", self.pending)
        elapsed = time.perf_counter() - started
        if status == 0: return None
        self.pending = None
        if status != 200: sys.exit(f"the quiet account's push failed: {status} {text[:200]}")
        self.base = json.loads(text)["digest"]
        self.sequence += 1
        return elapsed

def measure_writes(writer):
    times = []
    end = time.time() + seconds
    while time.time() < end:
        elapsed = writer.push_one()
        if elapsed is not None: times.append(elapsed)
    times.sort()
    return times[len(times) // 2] * 1000, times[int(len(times) * 0.99)] * 1000, len(times)

# A record of 60 fields of 8,000 bytes (480 KB, under the 512 KiB a record's fields may take).
WIDE = {f"f{i}": "w" * 8000 for i in range(60)}

def relay_body(kind, round_):
    """Fifteen wide records (about 7.3 MB), stamped anew: each relay merges them all."""
    wall = int(time.time() * 1000)
    records = []
    for index in range(15):
        stamp = f"{wall:016x}-{(round_ * 16 + index) % 0xFFFFFFFF:08x}-noisy{kind:010d}"
        records.append({"seq": 0, "collection": "settings", "key": f"wide{index}",
                        "fields": {name: {"v": value, "s": stamp} for name, value in WIDE.items()},
                        "versions": {f"noisy{kind:010d}": round_ + 1}})
    return json.dumps({"records": records}).encode()

relays = multiprocessing.Value("i", 0)
relayed_bytes = multiprocessing.Value("l", 0)
def relay_noise(kind):
    os.nice(19)
    client = Client(relay_tokens[kind])
    round_ = 0
    while not stop.is_set():
        body = relay_body(kind, round_)
        status, text = client.send("POST", "/v1/relay", body)
        if status not in (0, 200, 503): sys.exit(f"the noisy account's relay failed: {status} {text[:200]}")
        if status != 200: continue
        round_ += 1
        with relays.get_lock(): relays.value += 1
        with relayed_bytes.get_lock(): relayed_bytes.value += len(body)

writer = QuietWriter()
quiet_writes = measure_writes(writer)
stop = multiprocessing.Event()
floods = [multiprocessing.Process(target=relay_noise, args=(kind,)) for kind in range(4)]
for flood in floods: flood.start()
noisy_writes = measure_writes(writer)
stop.set()
for flood in floods: flood.join()
size = relayed_bytes.value / max(1, relays.value) / 1e6
print(f"quiet account, push of one rule: quiet server median {quiet_writes[0]:.1f} ms, p99 {quiet_writes[1]:.1f} ms ({quiet_writes[2]} pushes)")
print(f"same, while the noisy account relayed {relays.value} times {size:.1f} MB from 4 connections: median {noisy_writes[0]:.1f} ms, p99 {noisy_writes[1]:.1f} ms ({noisy_writes[2]} pushes)")
print(f"ratio: median {noisy_writes[0] / quiet_writes[0]:.2f}x, p99 {noisy_writes[1] / quiet_writes[1]:.2f}x (target: median within 2x)")
PY
