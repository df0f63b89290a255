#!/usr/bin/env python3
"""Ingest and query cost on the Cloud Bigtable backend (Google's emulator on loopback), beside
the embedded store and the HBase backend (the Thrift test double), from one tsgate binary.

Starts the store (the emulator `cbtemulator`, or the HBase double `tsgate hbase test-double`),
one `tsgate serve` on it, sends a data set made by ../shared/bench/gen.py over telnet, and
reports:
  - points/s until every point is durable in the store (counted by tsgate as received, then a
    `/api/put?sync`, which returns once everything before it is in the store);
  - store calls (gRPC for Bigtable, Thrift for HBase) per 1,000 points for that ingest;
  - for a 1 h /api/query over every series of the set (10 metrics x HOSTS hosts, `m=` per
    metric), store calls and the time of the query, cold (first) and again.

usage: compat/bench/bench_bigtable.py DATADIR embedded|hbase|bigtable [TSGATE_BINARY]
The HBase run needs the double in the binary: cargo build --features test-double
"""
import json, os, socket, subprocess, sys, tempfile, time, urllib.request

data = sys.argv[1]
backend = sys.argv[2]
binary = sys.argv[3] if len(sys.argv) > 3 else "target/debug/tsgate"
emulator = os.environ.get("CBTEMULATOR", "/usr/lib/google-cloud-sdk/platform/bigtable-emulator/cbtemulator")
meta = json.load(open(os.path.join(data, "meta.json")))
points = meta["points"]
work = tempfile.mkdtemp(prefix=f"tsgate-{backend}-bench-")


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


listen = free_port()
store = None
env = dict(os.environ)
args = [binary, "serve", "--data-dir", os.path.join(work, "node"), "--listen", f"127.0.0.1:{listen}",
        "--graphite-listen", "", "--pickle-listen", "", "--log-level", os.environ.get("BENCH_LOG", "warn")]
if backend == "hbase":
    thrift = free_port()
    store = subprocess.Popen([binary, "hbase", "test-double", "--listen", f"127.0.0.1:{thrift}", "--create-tables",
                              "--data-dir", os.path.join(work, "double"), "--log-level", "warn"],
                             stdout=subprocess.PIPE, text=True)
    wait_port(thrift)
    store.stdout.readline()
    args += ["--backend", "hbase", "--hbase-thrift", f"127.0.0.1:{thrift}"]
elif backend == "bigtable":
    store = subprocess.Popen([emulator, "-host", "127.0.0.1", "-port", "0"], stdout=subprocess.PIPE, text=True)
    line = store.stdout.readline()
    env["BIGTABLE_EMULATOR_HOST"] = line.split()[-1]
    flags = ["--bigtable-project", "p", "--bigtable-instance", "bench"]
    subprocess.run([binary, "bigtable", "create-tables"] + flags, env=env, check=True, stdout=subprocess.DEVNULL)
    args += flags
node = subprocess.Popen(args, env=env)
wait_port(listen)
base = f"http://127.0.0.1:{listen}"


def rpcs():
    rows = json.load(urllib.request.urlopen(base + "/api/stats"))
    out = {"calls": {}}
    for r in rows:
        if r["metric"] == "tsd.hbase.rpcs":
            out["calls"][r["tags"]["type"]] = int(r["value"])
        elif r["metric"] == "tsd.rpc.received":
            out["received"] = int(r["value"])
    return out


def post(path, body):
    req = urllib.request.Request(base + path, body, {"Content-Type": "application/json"})
    return urllib.request.urlopen(req, timeout=600).status


def delta(a, b):
    return {k: b[k] - a.get(k, 0) for k in b if b[k] - a.get(k, 0)}


try:
    before = rpcs()["calls"]
    t0 = time.time()
    with socket.create_connection(("127.0.0.1", listen)) as s, open(os.path.join(data, "telnet.txt"), "rb") as f:
        s.sendfile(f)
        s.shutdown(socket.SHUT_WR)
    t1 = time.time()
    while rpcs().get("received", 0) < points:
        time.sleep(0.02)
    post("/api/put?sync", b'{"metric":"bench.sync","timestamp":1700000000,"value":1,"tags":{"host":"x"}}')
    t2 = time.time()
    ingest = delta(before, rpcs()["calls"])
    n_ingest = sum(ingest.values())
    print(f"{backend}: {points:,} points durable in {t2 - t0:.2f}s (send {t1 - t0:.2f}s) = {points / (t2 - t0):,.0f} points/s")
    print(f"  store calls while ingesting: {n_ingest:,} = {n_ingest * 1000 / points:.3f} per 1,000 points {ingest}")

    start = 1700000000 - 1700000000 % 3600
    q = "&".join(f"m=sum:cpu.{m}{{host=*}}" for m in meta["metrics"])
    for label in ["cold", "again"]:
        c0 = rpcs()["calls"]
        q0 = time.time()
        body = urllib.request.urlopen(f"{base}/api/query?start={start}&end={start + 3599}&{q}", timeout=600).read()
        q1 = time.time()
        series = json.loads(body)
        got = sum(len(s["dps"]) for s in series)
        d = delta(c0, rpcs()["calls"])
        print(f"  1 h query over {len(series):,} series ({got:,} points), {label}: {q1 - q0:.3f}s, store calls {sum(d.values())} {d}")

finally:
    # Stopped whatever happens above (an error, a closed stdout), never left running.
    node.send_signal(2)
    node.wait()
    if store:
        store.send_signal(2)
        store.wait()
