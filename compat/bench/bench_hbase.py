#!/usr/bin/env python3
"""Ingest throughput through the HBase backend, and Thrift calls per 1,000 points.

Starts the HBase Thrift test double (`tsgate hbase test-double`, a separate process on
loopback) and one `tsgate serve --backend hbase` against it, sends a data set made by
../shared/bench/gen.py over telnet (telnet.txt) or /api/put (http-*.json), and reports:
  - points/s until every point is durable in HBase (counted by tsgate as received, then a
    `/api/put?sync`, which returns once everything before it is in the store);
  - Thrift calls per 1,000 points for that ingest (tsgate's own counters, `tsd.hbase.rpcs`),
    and again once the closed hours have been compacted.

usage: compat/bench/bench_hbase.py DATADIR [telnet|http] [TSGATE_BINARY]
The binary needs the double: cargo build --release --features test-double
"""
import json, os, socket, subprocess, sys, tempfile, time, urllib.request
from concurrent.futures import ThreadPoolExecutor

data = sys.argv[1]
proto = sys.argv[2] if len(sys.argv) > 2 else "telnet"
binary = sys.argv[3] if len(sys.argv) > 3 else "target/release/tsgate"
meta = json.load(open(os.path.join(data, "meta.json")))
points = meta["points"]
work = tempfile.mkdtemp(prefix="tsgate-hbase-bench-")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listening on {port}")


thrift, listen = free_port(), free_port()
double = subprocess.Popen([binary, "hbase", "test-double", "--listen", f"127.0.0.1:{thrift}", "--create-tables",
                           "--data-dir", os.path.join(work, "double"), "--log-level", "warn"],
                          stdout=subprocess.PIPE, text=True)
wait_port(thrift)
double.stdout.readline()
node = subprocess.Popen([binary, "serve", "--data-dir", os.path.join(work, "node"), "--listen", f"127.0.0.1:{listen}",
                         "--backend", "hbase", "--hbase-thrift", f"127.0.0.1:{thrift}", "--log-level", "warn"])
wait_port(listen)
base = f"http://127.0.0.1:{listen}"


def stats():
    rows = json.load(urllib.request.urlopen(base + "/api/stats"))
    out = {"rpcs": {}}
    for r in rows:
        if r["metric"] == "tsd.hbase.rpcs":
            out["rpcs"][r["tags"]["type"]] = int(r["value"])
        elif r["metric"] in ("tsd.rpc.received", "tsd.http.put.received"):
            out[r["metric"]] = int(r["value"])
    return out


def post(path, body):
    req = urllib.request.Request(base + path, body, {"Content-Type": "application/json"})
    return urllib.request.urlopen(req, timeout=600).status


before = stats()["rpcs"]
t0 = time.time()
if proto == "telnet":
    with socket.create_connection(("127.0.0.1", listen)) as s, open(os.path.join(data, "telnet.txt"), "rb") as f:
        s.sendfile(f)
        s.shutdown(socket.SHUT_WR)
        received = "tsd.rpc.received"
else:
    files = sorted(os.path.join(data, f) for f in os.listdir(data) if f.startswith("http-"))
    with ThreadPoolExecutor(4) as pool:
        assert all(c == 204 for c in pool.map(lambda p: post("/api/put", open(p, "rb").read()), files))
    received = "tsd.http.put.received"
t1 = time.time()
while stats().get(received, 0) < points:
    time.sleep(0.02)
post("/api/put?sync", b'{"metric":"bench.sync","timestamp":1700000000,"value":1,"tags":{"host":"x"}}')
t2 = time.time()
ingest = stats()["rpcs"]
# Closed hours are compacted write.compaction_delay_ms (5 s) after their last write.
time.sleep(9)
compacted = stats()["rpcs"]
node.send_signal(2)
node.wait()
double.send_signal(2)
served = double.communicate()[0].strip()


def delta(a, b):
    return {k: b[k] - a.get(k, 0) for k in b if b[k] - a.get(k, 0)}


d_ingest, d_all = delta(before, ingest), delta(before, compacted)
n_ingest, n_all = sum(d_ingest.values()), sum(d_all.values())
print(f"hbase {proto}: {points:,} points durable in HBase in {t2 - t0:.2f}s (send {t1 - t0:.2f}s) = {points / (t2 - t0):,.0f} points/s")
print(f"  Thrift calls while ingesting: {n_ingest:,} = {n_ingest * 1000 / points:.3f} per 1,000 points {d_ingest}")
print(f"  with compaction of the closed hours: {n_all:,} = {n_all * 1000 / points:.3f} per 1,000 points {d_all}")
print(f"  test double: {served}")
