#!/usr/bin/env bash
# Pull memory benchmark (prints numbers; it is not a test). Release build, TLS
# on loopback: one account of about 90 MB (records near the size limit) is
# pulled from zero by 64 concurrent clients, 16 of which send their request
# and never read the answer. Prints brsyncd's resident memory before, its peak
# during the pulls (VmHWM), and the peak's growth per connection, with the
# default page budget (1 MiB). Target: peak < 300 MB.
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

python3 - "$port" "$work/ca.pem" "$(cat "$work/token")" "$pid" "$megabytes" "$clients" "$idle" "$work/tokens" <<'PY'
import json, socket, ssl, sys, threading, time

port, ca, token, pid = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
megabytes, clients, idle = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
tokens = open(sys.argv[8]).read().split()
context = ssl.create_default_context(cafile=ca)

def connect():
    raw = socket.create_connection(("127.0.0.1", port))
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
PY
