#!/usr/bin/env python3
"""Soak a tsgate release build with every ingest protocol at once, and print a per-minute table.

What runs (the issue 35 §6 soak, as an operator would run it):
  * SERIES series on each of Graphite plaintext, OpenTSDB telnet, /api/put and Prometheus
    remote write, one point per series every INTERVAL ms, millisecond timestamps;
  * series churn: CHURN new remote-write series a second, each living CHURN_LIFE s;
  * three query loops (OpenTSDB /api/query, PromQL query_range, graphite-web /render);
  * a monitor sampling /metrics, the server's RSS and the data directory's size.

Hour rollovers. Closed hours are compacted once their row has gone quiet for
`write.compaction_delay_ms` (5 s) and the row's hour has ended by the wall clock. With
--speed 1 the data is "now" and the hour turns when the wall clock's does. With --speed S > 1 the
data runs S times faster than the wall clock, in the past: every data hour lasts 3600/S wall
seconds, and when it turns every row of the hour goes quiet at once and is compacted a few
seconds later, exactly as at a real rollover (S=12: a rollover every 5 minutes, each row holding
~600 flushes' worth of points, as after the first 5 minutes of a real hour).

At the end the senders stop, the script waits for every point sent to be stored and checks the
server's stored count against what was sent (TCP) and acknowledged (HTTP), stops the server
with SIGTERM and reports the time it took.

usage: soak.py [--bin target/release/tsgate] [--minutes 12] [--speed 12] [--series 2000]
               [--interval-ms 160] [--config-extra 'write.x = 1'] [--keep DIR]
Needs python3 with cramjam (snappy for remote write), as gen.py does.
"""
import argparse, http.client, json, multiprocessing as mp, os, random, re, shutil, signal
import socket, struct, subprocess, sys, tempfile, threading, time, urllib.parse
import cramjam

H = "127.0.0.1"


def varint(n):
    b = bytearray()
    while True:
        x = n & 0x7F
        n >>= 7
        if n:
            b.append(x | 0x80)
        else:
            b.append(x)
            return bytes(b)


def field(num, wire, payload):
    key = varint((num << 3) | wire)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload


def labels_pb(labels):
    return b"".join(field(1, 2, field(1, 2, k.encode()) + field(2, 2, v.encode()))
                    for k, v in sorted(labels.items()))


def rw_series(lab, ts_ms, val):
    return field(1, 2, lab + field(2, 2, field(1, 1, struct.pack("<d", val)) +
                                   field(2, 0, varint(ts_ms))))


class Clock:
    """Data time for a wall time: `speed` times faster than the wall, from `data0`."""

    def __init__(self, wall0, data0_ms, speed):
        self.wall0, self.data0, self.speed = wall0, data0_ms, speed

    def data_ms(self, wall=None):
        wall = time.time() if wall is None else wall
        return int(self.data0 + (wall - self.wall0) * 1000 * self.speed)


def sender(proto, port, args, clock, stop, out):
    """One protocol's sender: every INTERVAL ms a point for each series. Reports each second
    (proto, points sent or acknowledged, the longest send or request in s, errors)."""
    n, step = args.series, args.interval_ms / 1000
    rnd = random.Random(proto)
    vals = [rnd.uniform(0, 100) for _ in range(n)]
    sent, worst, errors, last = 0, 0.0, 0, time.time()
    conn = sock = None
    if proto in ("graphite", "telnet"):
        sock = socket.create_connection((H, port))
    else:
        conn = http.client.HTTPConnection(H, port, timeout=60)
    churn = []  # (label bytes, born at wall)
    churn_id = 0
    rw_labels = [labels_pb({"__name__": "soak_rw", "s": f"s{i}"}) for i in range(n)]
    nxt = time.time()
    while not stop.is_set():
        now = time.time()
        if now < nxt:
            time.sleep(nxt - now)
            continue
        nxt += step
        if nxt < now - 5 * step:  # far behind: don't make up for it in one burst
            nxt = now + step
        ts = clock.data_ms()
        for i in range(0, n, 97):
            vals[i] += rnd.uniform(-1, 1)
        t0 = time.time()
        try:
            if proto == "graphite":
                body = "".join(f"soak.g.s{i} {vals[i]:.2f} {ts + i % 7}\n" for i in range(n))
                sock.sendall(body.encode())
                k = n
            elif proto == "telnet":
                body = "".join(f"put soak.t {ts + i % 7} {vals[i]:.2f} s=s{i}\n" for i in range(n))
                sock.sendall(body.encode())
                k = n
            elif proto == "put":
                body = json.dumps([{"metric": "soak.p", "timestamp": ts + i % 7,
                                    "value": round(vals[i], 2), "tags": {"s": f"s{i}"}}
                                   for i in range(n)])
                conn.request("POST", "/api/put", body, {"Content-Type": "application/json"})
                r = conn.getresponse()
                r.read()
                if not 200 <= r.status < 300:
                    raise RuntimeError(f"/api/put {r.status}")
                k = n
            else:
                born = now
                while churn and churn[0][1] < now - args.churn_life:
                    churn.pop(0)
                want = int((now - (churn[-1][1] if churn else now - 1)) * args.churn)
                for _ in range(min(want, args.churn * 2)):
                    churn.append((labels_pb({"__name__": "soak_churn", "c": f"c{churn_id}"}), born))
                    churn_id += 1
                parts = [rw_series(rw_labels[i], ts + i % 7, vals[i]) for i in range(n)]
                parts += [rw_series(lab, ts, 1.0) for lab, _ in churn]
                body = bytes(cramjam.snappy.compress_raw(b"".join(parts)))
                conn.request("POST", "/api/v1/write", body,
                             {"Content-Type": "application/x-protobuf",
                              "Content-Encoding": "snappy",
                              "X-Prometheus-Remote-Write-Version": "0.1.0"})
                r = conn.getresponse()
                r.read()
                if not 200 <= r.status < 300:
                    raise RuntimeError(f"remote write {r.status}")
                k = len(parts)
            sent += k
        except Exception as e:  # a timeout or refusal: counted, and the next tick goes on
            errors += 1
            sys.stderr.write(f"{proto}: {e}\n")
            if conn is not None:
                conn.close()
                conn = http.client.HTTPConnection(H, port, timeout=60)
        worst = max(worst, time.time() - t0)
        if time.time() - last >= 1:
            out.put((proto, sent, worst, errors))
            sent, worst, errors, last = 0, 0.0, 0, time.time()
    out.put((proto, sent, worst, errors))
    if sock:
        sock.close()


def get(port, path, timeout=60):
    c = http.client.HTTPConnection(H, port, timeout=timeout)
    c.request("GET", path)
    r = c.getresponse()
    return r.status, r.read()


def query_loop(name, port, clock, stop, stats):
    """Asks for the last 5 data minutes over and over; keeps the longest answer and errors."""
    while not stop.is_set():
        end = clock.data_ms()
        start = end - 300_000
        if name == "opentsdb":
            path = f"/api/query?start={start}&end={end}&m=sum:10s-avg:soak.t"
        elif name == "promql":
            path = (f"/api/v1/query_range?query=sum(soak_rw)&start={start / 1000:.3f}"
                    f"&end={end / 1000:.3f}&step=15")
        else:
            path = (f"/render?target=sumSeries(soak.g.*)&from={start // 1000}"
                    f"&until={end // 1000}&format=json")
        t0 = time.time()
        try:
            status, body = get(port, path)
            ok = status == 200
            if not ok:
                sys.stderr.write(f"query {name}: {status} {body[:200]!r}\n")
        except Exception as e:
            ok = False
            sys.stderr.write(f"query {name}: {e}\n")
        d = time.time() - t0
        with stats["lock"]:
            stats[name] = max(stats.get(name, 0.0), d)
            if not ok:
                stats["query_errors"] = stats.get("query_errors", 0) + 1
        time.sleep(1)


def metrics(port):
    try:
        _, body = get(port, "/metrics", timeout=10)
    except Exception:
        return {}
    m = {}
    for line in body.decode().splitlines():
        if line.startswith("#"):
            continue
        hb = re.match(r'([a-z_]+)_bucket\{[^}]*le="([^"]+)"[^}]*\} ([0-9.eE+-]+)$', line)
        if hb:
            key = (hb.group(1), float(hb.group(2)))
            m[key] = m.get(key, 0) + float(hb.group(3))
            continue
        mt = re.match(r"([a-z_]+)(\{[^}]*\})? ([0-9.eE+-]+)$", line)
        if mt:
            m[mt.group(1)] = m.get(mt.group(1), 0) + float(mt.group(3))
    return m


def hist_max(prev, cur, name):
    """The smallest bucket bound holding every observation of `name` made between two
    /metrics samples: the minute's longest one lies at or under it ("-" if none)."""
    bounds = sorted(k[1] for k in cur if isinstance(k, tuple) and k[0] == name)
    if not bounds:
        return "-"
    total = cur[(name, bounds[-1])] - prev.get((name, bounds[-1]), 0)
    if total <= 0:
        return "-"
    for le in bounds:
        if cur[(name, le)] - prev.get((name, le), 0) >= total:
            return f"<={le:g}"
    return "-"


def rss_mib(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0


def du(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.stat(os.path.join(root, f)).st_blocks * 512
            except OSError:
                pass
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/tsgate")
    ap.add_argument("--minutes", type=float, default=12)
    ap.add_argument("--speed", type=float, default=12)
    ap.add_argument("--series", type=int, default=2000)
    ap.add_argument("--interval-ms", type=int, default=160)
    ap.add_argument("--churn", type=int, default=20)
    ap.add_argument("--churn-life", type=int, default=60)
    ap.add_argument("--lead-s", type=float, default=60,
                    help="wall seconds from the start to the first data-hour turn")
    ap.add_argument("--config-extra", action="append", default=[],
                    help="'section.key = value' lines for the server's config")
    ap.add_argument("--keep", help="data directory to use and keep")
    args = ap.parse_args()

    if args.keep and os.path.exists(args.keep):
        # A server still stopping in a deleted directory of that name writes its files into
        # the new one by path (seen: its journal rotation broke the next run's engine).
        sys.exit(f"--keep {args.keep} exists: give a new directory")
    d = args.keep or tempfile.mkdtemp(prefix="soak-")
    os.makedirs(d, exist_ok=True)
    http_port, graphite_port = 14300 + os.getpid() % 500, 14900 + os.getpid() % 500
    sections = {}
    for line in args.config_extra:
        key, val = line.split("=", 1)
        sec, k = key.strip().split(".", 1)
        sections.setdefault(sec, []).append(f"{k} = {val.strip()}")
    cfg = os.path.join(d, "soak.toml")
    with open(cfg, "w") as f:
        for sec, lines in sections.items():
            f.write(f"[{sec}]\n" + "\n".join(lines) + "\n")
    data = os.path.join(d, "data")
    log = open(os.path.join(d, "server.log"), "w")
    srv = subprocess.Popen([args.bin, "serve", "--config", cfg, "--data-dir", data,
                            "--listen", f"{H}:{http_port}",
                            "--graphite-listen", f"{H}:{graphite_port}", "--pickle-listen", ""],
                           stdout=log, stderr=subprocess.STDOUT)
    for _ in range(200):
        try:
            if get(http_port, "/api/version", timeout=2)[0] == 200:
                break
        except Exception:
            time.sleep(0.1)
    # The data clock: the first data-hour turn comes `lead_s` wall seconds from now, and the
    # data stays in the past (the last point is an hour before the wall clock's now).
    wall0 = time.time()
    total_data_s = args.minutes * 60 * args.speed
    if args.speed == 1:
        data0 = wall0 * 1000
    else:
        end_h = (int(wall0) // 3600 - 1) * 3600
        first_turn = end_h - int(total_data_s // 3600 + 1) * 3600
        data0 = (first_turn - args.lead_s * args.speed) * 1000
    clock = Clock(wall0, data0, args.speed)

    stop = mp.Event()
    out = mp.Queue()
    procs = [mp.Process(target=sender, args=(p, graphite_port if p == "graphite" else http_port,
                                             args, clock, stop, out))
             for p in ("graphite", "telnet", "put", "rw")]
    for p in procs:
        p.start()
    qstop = threading.Event()
    qstats = {"lock": threading.Lock()}
    qs = [threading.Thread(target=query_loop, args=(q, http_port, clock, qstop, qstats),
                           daemon=True) for q in ("opentsdb", "promql", "render")]
    for q in qs:
        q.start()

    cols = ("min", "data time", "sent/s", "stored/s", "max write s", "by", "max query s",
            "RSS MiB", "disk MiB", "B/point", "queued", "flushing", "compact rows", "backlog",
            "fsync s", "flush s", "uid sync s", "errors")
    print(" | ".join(cols), flush=True)
    totals = {"sent": 0, "errors": 0}
    minute_end = wall0 + 60
    cur = {"sent": 0, "worst": 0.0, "by": "-", "errors": 0}
    prev_m = metrics(http_port)
    prev_stored = prev_m.get("tsgate_points_stored_total", 0)
    peak_rss = 0
    deadline = wall0 + args.minutes * 60
    rows = []
    while True:
        try:
            proto, sent, worst, errors = out.get(timeout=1)
            cur["sent"] += sent
            if worst > cur["worst"]:
                cur["worst"], cur["by"] = worst, proto
            cur["errors"] += errors
        except Exception:
            pass
        peak_rss = max(peak_rss, rss_mib(srv.pid))
        now = time.time()
        if now < minute_end:
            continue
        m = metrics(http_port)
        stored = m.get("tsgate_points_stored_total", prev_stored)
        disk = du(data)
        with qstats["lock"]:
            qmax = max(qstats.get(k, 0.0) for k in ("opentsdb", "promql", "render"))
            qerr = qstats.get("query_errors", 0)
            for k in ("opentsdb", "promql", "render", "query_errors"):
                qstats[k] = 0
        dt = time.strftime("%H:%M", time.gmtime(clock.data_ms() / 1000))
        row = (f"{(now - wall0) / 60:.0f}", dt, f"{cur['sent'] / 60:.0f}",
               f"{(stored - prev_stored) / 60:.0f}", f"{cur['worst']:.2f}", cur["by"],
               f"{qmax:.2f}",
               f"{rss_mib(srv.pid):.0f}", f"{disk / 2**20:.0f}",
               f"{disk / stored:.1f}" if stored else "-",
               f"{m.get('tsgate_write_queued_batches', 0):.0f}",
               f"{m.get('tsgate_write_flushing_points', 0):.0f}",
               f"{m.get('tsgate_compaction_queue_rows', 0):.0f}",
               f"{m['tsgate_compaction_backlog_rows']:.0f}"
               if "tsgate_compaction_backlog_rows" in m else "-",
               hist_max(prev_m, m, "tsgate_wal_fsync_duration_seconds"),
               hist_max(prev_m, m, "tsgate_flush_duration_seconds"),
               hist_max(prev_m, m, "tsgate_uid_sync_duration_seconds"),
               f"{cur['errors'] + qerr}")
        rows.append(row)
        print(" | ".join(row), flush=True)
        totals["sent"] += cur["sent"]
        totals["errors"] += cur["errors"]
        prev_stored = stored
        if m:
            prev_m = m
        cur = {"sent": 0, "worst": 0.0, "by": "-", "errors": 0}
        minute_end += 60
        if now >= deadline:
            break

    stop.set()
    qstop.set()
    for p in procs:
        p.join(timeout=120)
    while True:
        try:
            proto, sent, worst, errors = out.get(timeout=0.5)
            totals["sent"] += sent
            totals["errors"] += errors
        except Exception:
            break
    # Every point sent must reach the store (TCP points are sent once the socket took them).
    waited = time.time()
    stored = 0
    while time.time() - waited < 300:
        stored = metrics(http_port).get("tsgate_points_stored_total", 0)
        if stored >= totals["sent"]:
            break
        time.sleep(1)
    print(f"sent {totals['sent']} (errors {totals['errors']}), stored {stored:.0f} "
          f"after {time.time() - waited:.1f} s; peak RSS {peak_rss:.0f} MiB")
    t0 = time.time()
    srv.send_signal(signal.SIGTERM)
    try:
        rc = srv.wait(timeout=120)
    except subprocess.TimeoutExpired:
        srv.kill()
        rc = "killed"
    disk = du(data)
    print(f"shutdown {time.time() - t0:.1f} s (exit {rc}); disk after stop {disk / 2**20:.0f} MiB"
          f" = {disk / max(stored, 1):.1f} B/point")
    plain = (re.sub(r"\x1b\[[0-9;]*m", "", l) for l in open(os.path.join(d, "server.log")))
    lines = [l for l in plain if " WARN " in l or " ERROR " in l]
    print(f"server log: {len(lines)} warn/error lines" + "".join("\n  " + l.rstrip()
                                                              for l in lines[-8:]))
    if not args.keep:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
