#!/usr/bin/env bash
# Pull memory benchmark (prints numbers; it is not a test). Release build, TLS
# on loopback: one account of about 90 MB (records near the size limit) is
# pulled from zero by 64 concurrent clients, 16 of which send their request
# and never read the answer. Prints brsyncd's resident memory before, its peak
# during the pulls (VmHWM), and the peak's growth per connection, with the
# default page budget (1 MiB). Target: peak < 300 MB. Then one token's 60
# connections that never read pages of records near the size limit: RSS growth.
# Usage: bash Benchmarks/pull-memory.sh [megabytes, default 90] [clients, default 64] [idle clients, default 16]
set -euo pipefail
cd "$(dirname "$0")/.."
megabytes="${1:-90}"
clients="${2:-64}"
idle="${3:-16}"
source Benchmarks/release-server.sh
build_server
prepare_store
start_server
# A device, and its token, per client: one token gets 2 requests in progress at most.
"$bin/brsyncd" account limits bench --devices $((clients + 1)) --db "$work/store.sqlite" >/dev/null
for index in $(seq 1 "$clients"); do "$bin/brsyncd" device add bench "reader$index" --db "$work/store.sqlite" | tail -1; done >"$work/tokens"
# The second part: one token, many connections that never read.
"$bin/brsyncd" account add flood --db "$work/store.sqlite" >/dev/null
"$bin/brsyncd" device add flood one --db "$work/store.sqlite" | tail -1 >"$work/flood-token"

python3 - "$port" "$work/ca.pem" "$(cat "$work/token")" "$pid" "$megabytes" "$clients" "$idle" "$work/tokens" "$(cat "$work/flood-token")" <<'PY'
import json, socket, ssl, sys, threading, time

port, ca, token, pid = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
megabytes, clients, idle = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
tokens = open(sys.argv[8]).read().split()
context = ssl.create_default_context(cafile=ca)

def connect(receive_buffer=None):
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if receive_buffer: raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    raw.connect(("127.0.0.1", port))
    return context.wrap_socket(raw, server_hostname="localhost")

def request(sock, method, target, body=b"", credential=None):
    head = (f"{method} {target} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {credential or token}\r\n"
            f"Brsync-Protocol: 3\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    sock.sendall(head + body)

def answer(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk: raise RuntimeError("closed")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    length = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    while len(rest) < length:
        chunk = sock.recv(min(1 << 20, length - len(rest)))
        if not chunk: raise RuntimeError("closed")
        rest += chunk
    return int(head.split(b" ")[1]), rest

def rss(field):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field): return int(line.split()[1]) / 1024
    return 0.0

# The account: records of 63 fields of about 1 KB each (64 KB apiece), pushed 100 at a time.
device = "bench00000000001"
value = "x" * 1000
wall = int(time.time() * 1000)
sock = connect()
sequence, chain_base, total = 1, None, 0
records = megabytes * 1024 // 64
while sequence <= records:
    changes = []
    for _ in range(min(100, records - sequence + 1)):
        stamp = f"{wall:016x}-{sequence:08x}-{device}"
        fields = {f"f{i}": {"v": value, "s": stamp} for i in range(63)}
        changes.append({"seq": sequence, "collection": "settings", "key": f"k{sequence}", "fields": fields, "versions": {device: 1}})
        sequence += 1
    body = {"device": device, "from": changes[0]["seq"], "to": changes[-1]["seq"], "changes": changes}
    if chain_base is not None: body["base"] = chain_base
    request(sock, "POST", "/v1/push", json.dumps(body).encode())
    status, text = answer(sock)
    if status != 200: sys.exit(f"push refused: {status} {text[:200]}")
    chain_base = json.loads(text)["digest"]
    total += len(json.dumps(body))
sock.close()
print(f"account: {records} records, {total / 1e6:.0f} MB pushed")

before = rss("VmRSS:")
peak = [before]
done = threading.Event()
def sample():
    while not done.is_set():
        peak[0] = max(peak[0], rss("VmRSS:"))
        time.sleep(0.02)
sampler = threading.Thread(target=sample); sampler.start()

held = []
def reader(credential):
    s = connect()
    cursor = 0
    while True:
        request(s, "GET", f"/v1/pull?since={cursor}&limit=5000", credential=credential)
        status, text = answer(s)
        page = json.loads(text)
        cursor = page["next"]
        if not page["more"]: break
    s.close()
def stalled(credential):
    s = connect()
    request(s, "GET", "/v1/pull?since=0&limit=5000", credential=credential)
    held.append(s)  # never read

started = time.time()
threads = [threading.Thread(target=stalled if i < idle else reader, args=(tokens[i],)) for i in range(clients)]
for t in threads: t.start()
for t in threads: t.join()
seconds = time.time() - started
time.sleep(1)  # the stalled answers sit in the server's buffers meanwhile
done.set(); sampler.join()
high_water = rss("VmHWM:")
for s in held: s.close()
print(f"brsyncd RSS before the pulls: {before:.0f} MB")
print(f"{clients} concurrent pulls from zero ({idle} never read), {clients - idle} complete in {seconds:.1f} s: "
      f"peak RSS {max(peak[0], high_water):.0f} MB (VmHWM {high_water:.0f} MB), "
      f"{(max(peak[0], high_water) - before) / clients:.1f} MB per connection (target: peak < 300 MB)")

# Part two: one token's 60 connections, each asking for a page of records near
# the size limit (8 fields of 10,000 escaped control characters: 480 KB of
# text) and never reading it, with a 4 KB receive buffer. A request holds its
# token's slot until its answer is written: 2 pages at most, the rest 503.
flood = sys.argv[9]
sock = connect()
base = None
for sequence in range(1, 21):
    stamp = f"{wall:016x}-{sequence:08x}-flood00000000001"
    fields = {f"f{i}": {"v": "\u0001" * 10000, "s": stamp} for i in range(8)}
    body = {"device": "flood00000000001", "from": sequence, "to": sequence, "changes": [
        {"seq": sequence, "collection": "settings", "key": f"big{sequence}", "fields": fields, "versions": {"flood00000000001": 1}}]}
    if base is not None: body["base"] = base
    request(sock, "POST", "/v1/push", json.dumps(body).encode(), credential=flood)
    status, text = answer(sock)
    if status != 200 or json.loads(text).get("rejected"): sys.exit(f"flood push refused: {status} {text[:300]}")
    base = json.loads(text)["digest"]
sock.close()
time.sleep(0.5)
before = rss("VmRSS:")
peak = [before]
done.clear()
sampler = threading.Thread(target=sample); sampler.start()
stalled_sockets, statuses = [], {}
for _ in range(60):
    s = connect(receive_buffer=4096)
    request(s, "GET", "/v1/pull?since=0&limit=5000", credential=flood)
    stalled_sockets.append(s)
time.sleep(2)
for s in stalled_sockets:
    s.settimeout(0.5)
    try:
        code = s.recv(12)[9:12].decode()
    except OSError:
        code = "none"
    statuses[code] = statuses.get(code, 0) + 1
done.set(); sampler.join()
for s in stalled_sockets: s.close()
print(f"one token, 60 connections asking for pages of 480 KB records and never reading: RSS {before:.0f} MB before, "
      f"peak {peak[0]:.0f} MB (+{peak[0] - before:.0f} MB); answers begun: {dict(sorted(statuses.items()))}")
PY
