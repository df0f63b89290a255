"""Debian's real Prometheus scrapes tsgate's /metrics: the exposition must parse (up == 1, no
scrape errors) and counters read back through Prometheus must equal what /metrics shows (the
remote-write sender has stopped, so they no longer move).
usage: scrape_check.py TSGATE_URL SCRAPER_URL"""
import json, sys, time, urllib.parse, urllib.request

ts, scraper = sys.argv[1], sys.argv[2]
passed = failed = 0


def report(ok, name, detail=""):
    global passed, failed
    passed, failed = (passed + 1, failed) if ok else (passed, failed + 1)
    print(f"ok   {name}" if ok else f"FAIL {name}: {detail}")


def query(q):
    url = f"{scraper}/api/v1/query?" + urllib.parse.urlencode({"query": q})
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)["data"]["result"]


def exposed(name):
    with urllib.request.urlopen(f"{ts}/metrics", timeout=30) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                yield line


# Wait for a few scrapes.
up = []
for _ in range(100):
    up = query('up{job="tsgate"}')
    if up and float(query('count_over_time(up{job="tsgate"}[1m])')[0]["value"][1]) >= 3:
        break
    time.sleep(0.2)
report(bool(up) and up[0]["value"][1] == "1", "prometheus scrapes tsgate /metrics (up == 1)", up)
samples = query('scrape_samples_scraped{job="tsgate"}')
report(bool(samples) and float(samples[0]["value"][1]) > 100, "every sample parsed", samples)

key = 'tsgate_points_stored_total{protocol="remote_write"}'
mine = [l for l in exposed("tsgate_points_stored_total") if 'protocol="remote_write"' in l]
theirs = query(key)
want = float(mine[0].split()[-1]) if mine else -1
got = float(theirs[0]["value"][1]) if theirs else -2
report(want > 0 and got == want, f"{key} through Prometheus equals /metrics ({want:g})", f"prometheus {got}, /metrics {want}")

h = query('histogram_quantile(0.5, sum by (le) (rate(tsgate_query_duration_seconds_bucket{api="promql_range"}[5m])))')
report(bool(h), "histogram buckets usable by histogram_quantile", h)
# Bucket series carry le labels from 0.00005 up to 10, then +Inf.
les = {s["metric"]["le"] for s in query('tsgate_wal_fsync_duration_seconds_bucket')}
report("+Inf" in les and "0.00005" in les and len(les) == 17, "fsync histogram buckets 0.00005 .. 10, +Inf", sorted(les))

print(f"test result: {'ok' if failed == 0 else 'FAILED'}. {passed} passed; {failed} failed; 0 ignored; 0 measured; 0 filtered out")
sys.exit(1 if failed else 0)
