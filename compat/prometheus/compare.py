#!/usr/bin/env python3
"""Compares tsgate's Prometheus API with real Prometheus 2.42 over the same data.

usage: compare.py TSGATE READER REF T0 T1 [imported]
  READER  a Prometheus reading tsgate through remote_read (the reference PromQL engine)
  REF     a Prometheus that received the same remote-write stream (the reference storage)
  imported  TSGATE got the data by `tsgate import --from prometheus` from REF, not by remote
            write: no metadata (remote read carries none), so that check is left out
Prints one line per check and a closing `test result:` line in cargo's format.
"""
import json, math, sys, urllib.parse, urllib.request

from promhttp import call

ts, reader, ref, t0, t1 = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
imported = len(sys.argv) > 6 and sys.argv[6] == "imported"
START, STEP = t0 + 20, 2
# The two receivers are compared up to a few seconds before the last scrape both hold: the
# sender's remote-write queues shut down independently, so its last batches may reach one
# receiver and not the other (seen: tsgate holding the final scrape of a target that the
# reference receiver never got; on a loaded machine, the reverse for the last ~10 s).
def last_scrape(base):
    """The earliest of the targets' last `up` samples on `base` (a Prometheus API)."""
    c, r = call(base, "/api/v1/query", {"query": "min(timestamp(up))", "time": t1 + 60})
    res = r.get("data", {}).get("result", []) if c == 200 else []
    return int(float(res[0]["value"][1])) if res else t1

# In the imported mode TSGATE holds REF's data and READER tsgate's own: those two are compared.
SETTLED = min(t1 - 5, last_scrape(ts if imported else ref) - 3, last_scrape(reader) - 3)
# TSGATE and READER hold the same data but in the imported mode, where they end at SETTLED too.
END = SETTLED if imported else t1 + 5

QUERIES = [
    'up',
    'compat_intermittent',
    'count_over_time(compat_intermittent[8s])',
    'rate(compat_counter_total[5s])',
    'node_load1',
    'node_cpu_seconds_total{mode="idle"}',
    'node_cpu_seconds_total{mode=~"idle|user", cpu!="1"}',
    '{__name__="node_memory_MemFree_bytes"}',
    'up offset 5s',
    '-up',
    'rate(node_cpu_seconds_total[15s])',
    'sum by (mode) (rate(node_cpu_seconds_total[15s]))',
    'sum without (cpu) (rate(node_cpu_seconds_total[10s]))',
    'irate(prometheus_http_requests_total[10s])',
    'increase(prometheus_tsdb_head_samples_appended_total[12s])',
    'delta(process_resident_memory_bytes[15s])',
    'idelta(process_cpu_seconds_total[10s])',
    'avg_over_time(node_load1[15s])',
    'max_over_time(process_resident_memory_bytes[15s])',
    'min_over_time(process_resident_memory_bytes[15s])',
    'count_over_time(up[20s])',
    'sum_over_time(scrape_samples_scraped[10s])',
    'stddev_over_time(process_resident_memory_bytes[20s])',
    'quantile_over_time(0.9, scrape_duration_seconds[20s])',
    'last_over_time(node_load1[10s])',
    'changes(process_resident_memory_bytes[20s])',
    'resets(process_cpu_seconds_total[20s])',
    'deriv(process_resident_memory_bytes[20s])',
    'predict_linear(process_resident_memory_bytes[20s], 60)',
    'avg(rate(node_cpu_seconds_total[15s]))',
    'max by (job) (scrape_duration_seconds)',
    'min(scrape_duration_seconds)',
    'count by (job) (up)',
    'stddev(rate(node_cpu_seconds_total[15s]))',
    'stdvar by (mode) (rate(node_cpu_seconds_total[15s]))',
    # topk over cumulative CPU seconds: the top values never tie (rates of idle CPUs do, and
    # which of two equal series topk keeps is an implementation detail).
    'topk(3, node_cpu_seconds_total)',
    'bottomk(2, scrape_samples_scraped)',
    'quantile(0.9, rate(node_cpu_seconds_total[15s]))',
    'quantile(1.5, scrape_duration_seconds)',
    'count_values("value", up)',
    'group by (job) (up)',
    'node_memory_MemFree_bytes / node_memory_MemTotal_bytes * 100',
    'scrape_samples_scraped > 100',
    'scrape_samples_scraped > bool 100',
    '1 - up',
    '2 ^ 3 * up',
    'up == on(job) group_left(instance) up',
    'scrape_duration_seconds / on(instance, job) scrape_samples_scraped',
    'rate(node_network_receive_bytes_total[15s]) + ignoring(device) group_left sum without (device) (rate(node_network_transmit_bytes_total[15s]))',
    'up and on(job) scrape_samples_scraped > 100',
    'up or vector(2)',
    'up unless on(job) up{job="node"}',
    'histogram_quantile(0.9, sum by (le) (rate(prometheus_http_request_duration_seconds_bucket[15s])))',
    'histogram_quantile(0.5, rate(prometheus_tsdb_compaction_chunk_range_seconds_bucket[15s]))',
    'label_replace(up, "port", "$1", "instance", ".*:(.*)")',
    'label_join(up, "both", "/", "job", "instance")',
    'abs(-up)', 'ceil(scrape_duration_seconds * 1000)', 'floor(node_load1)', 'sqrt(up)', 'exp(up)', 'ln(up + 1)', 'log2(up + 1)', 'log10(up + 9)',
    'round(scrape_duration_seconds, 0.001)',
    'clamp(node_load1, 0.1, 0.5)', 'clamp_min(node_load1, 0.5)', 'clamp_max(node_load1, 0.5)',
    'timestamp(up)', 'time() - timestamp(up)',
    'hour(timestamp(up))', 'day_of_week()', 'month()', 'year(vector(1700000000))', 'days_in_month(vector(1709251200))',
    'vector(1.23)', 'scalar(sum(up))', 'time()',
    'absent(nonexistent_metric_xyz)', 'absent(up)',
    'sort(scrape_samples_scraped)',
    'max_over_time((time() - max(up) < 1000)[20s:2s])',
    'avg_over_time(rate(prometheus_http_requests_total[10s])[20s:4s])',
    'rate(node_cpu_seconds_total[15s] offset 4s)',
    'holt_winters(process_resident_memory_bytes[20s], 0.5, 0.5)',
    'nonexistent_metric_xyz',
    'sum(nonexistent_metric_xyz)',
]
SHOULD_FAIL = ['{__name__=~".*"}', 'label_replace(up, "1bad", "", "", "")', 'up + on() group_left up', 'sum(']

passed = failed = 0


def report(ok, name, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name}: {detail}")


def qr(base, q):
    return call(base, "/api/v1/query_range", {"query": q, "start": START, "end": END, "step": STEP})


def same(a, b):
    if math.isnan(a) and math.isnan(b):
        return True
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b)) or abs(a - b) < 1e-12


def diff(x, y, exact=False):
    """None when the two matrices are equal (labels exact, timestamps exact, values 1e-9, or
    the value strings themselves when `exact`)."""
    key = lambda s: sorted(s["metric"].items())
    x, y = sorted(x, key=key), sorted(y, key=key)
    if [s["metric"] for s in x] != [s["metric"] for s in y]:
        return f"series differ: {[s['metric'] for s in x][:4]} vs {[s['metric'] for s in y][:4]} ({len(x)} vs {len(y)})"
    for a, b in zip(x, y):
        ta, tb = [p[0] for p in a["values"]], [p[0] for p in b["values"]]
        if ta != tb:
            return f"{a['metric']}: timestamps differ ({len(ta)} vs {len(tb)}; first {ta[:3]} vs {tb[:3]})"
        for p, q in zip(a["values"], b["values"]):
            if (p[1] != q[1]) if exact else not same(float(p[1]), float(q[1])):
                return f"{a['metric']} @{p[0]}: {p[1]} vs {q[1]}"
    return None


# 1. tsgate's PromQL vs Prometheus 2.42 evaluating the same data (read from tsgate).
for q in QUERIES:
    c1, a = qr(ts, q)
    c2, b = qr(reader, q)
    if c1 != 200 or c2 != 200:
        report(False, f"query {q}", f"tsgate {c1} {a.get('error')}; reader {c2} {b.get('error')}")
        continue
    if b.get("warnings"):
        report(False, f"query {q}", f"reader warnings (remote read failed?): {b['warnings']}")
        continue
    d = diff(a["data"]["result"], b["data"]["result"])
    report(d is None, f"query {q} [{len(a['data']['result'])} series]", d or "")

# 1b. Where the last bit or a tie decides, compared as the value strings: rates and increases
# over windows holding a few events (2.42 divides the extrapolation factor by the range before
# it scales the result), the bucket histogram_quantile picks from such rates, and which series
# topk/bottomk keep among equal values (2.42's heap, not a stable sort).
EXACT = [
    'rate(prometheus_http_requests_total[3s])',
    'rate(node_cpu_seconds_total[7s])',
    'increase(prometheus_tsdb_head_samples_appended_total[5s])',
    'rate(compat_counter_total[3s])',
    'histogram_quantile(0.9, rate(prometheus_http_request_duration_seconds_bucket[5s]))',
    'histogram_quantile(0.5, sum by (le) (rate(prometheus_http_response_size_bytes_bucket[7s])))',
    'topk(1, up)',
    'topk(2, up)',
    'bottomk(2, up)',
    'topk(3, rate(node_cpu_seconds_total{mode="idle"}[5s]) * 0)',
    'bottomk(4, count_over_time(node_cpu_seconds_total[4s]))',
]
for q in EXACT:
    c1, a = qr(ts, q)
    c2, b = qr(reader, q)
    if c1 != 200 or c2 != 200:
        report(False, f"exact {q}", f"tsgate {c1} {a.get('error')}; reader {c2} {b.get('error')}")
        continue
    d = diff(a["data"]["result"], b["data"]["result"], exact=True)
    report(d is None, f"exact {q} [{len(a['data']['result'])} series]", d or "")

# 1c. Bad queries: status, errorType and the error text itself, on both endpoints (2.42 prefixes
# `invalid parameter "query": ` on instant queries only; parse errors carry the position where
# its parser stopped; label_replace names the bad pattern only). Left out, worded differently by
# tsgate: '@', 'up @ foo', 'up @ start(1)', 'rate(up[5m] offset)', 'up{job=}', 'sum by (le) ',
# 'avg by (a) (up) without (b)' (the parser crate says "invalid promql query" there), and
# duplicate capture group names, which Go's regexp accepts and Rust's refuses.
BAD = [
    'sum(',
    'up +',
    '{__name__=~".*"}',
    'label_replace(up, "1bad", "", "", "")',
    'label_replace(up, "dst", "$1", "src", "(")',
    'label_replace(up, "dst", "$1", "src", "a{2,1}")',
    'label_replace(up, "dst", "$1", "src", "[z-a]")',
    'label_replace(up, "dst", "$1", "src", "\\\\8")',
    'label_join(up, "1bad", ",", "a")',
    'rate(up)',
    'rate(up[5m:1m]',
    'foo(up)',
    'up[5m]',
    'sum(up[5m])',
    '1 +',
    'topk(up)',
    'topk("a", up)',
    'quantile(up)',
    'histogram_quantile(0.5)',
    'up{job=~"("}',
    'up{job="a" ',
    'up offset -',
    'abs()',
    'abs(up, up)',
    'round(up, up, up)',
    'vector("a")',
    'scalar(up[5m])',
    'time(1)',
    'count_values(1, up)',
    'label_replace(up, "a", "b", "c")',
    '"a" + 1',
    '1 == bool',
    'up == bool up',
    'up and 1',
    '1 and up',
    'up or on(job) group_left up',
    'sum without(',
    '{}',
    '{job=""}',
    'up{__name__="a"}',
    'max_over_time(up)',
    'max_over_time(up[5m], 1)',
    'quantile_over_time(up[5m])',
    'holt_winters(up[5m], 2, 0.5)',
    'predict_linear(up, 1)',
    'absent_over_time(up)',
    'up[5m] offset 1m [1m]',
    '(up)[5m][1m]',
    'sort(up[5m])',
    '1 @ start()',
    '0x',
    '1e',
    "'unterminated",
    '"unterminated',
    '`raw',
    'up{job="a",}',
    'up{,}',
    'up{job}',
    'up{job=="a"}',
    '-"a"',
    'sum(up) by',
    'sum(up) by (',
    'stddev(up, 1)',
    'count_values(up)',
    'timestamp()',
    'sum(up) keep',
    '1 2',
    'up up',
]
for q in BAD:
    for path, params in (("/api/v1/query", {"query": q, "time": END}),
                         ("/api/v1/query_range", {"query": q, "start": START, "end": END, "step": STEP})):
        c1, a = call(ts, path, params)
        c2, b = call(reader, path, params)
        x, y = (c1, a.get("errorType"), a.get("error")), (c2, b.get("errorType"), b.get("error"))
        report(x == y, f"error {path.rsplit('/', 1)[1]} {q!r}", f"tsgate {x}; reader {y}")

for q in SHOULD_FAIL:
    c1, a = qr(ts, q)
    c2, b = qr(reader, q)
    report(c1 >= 400 and c2 >= 400 and a.get("errorType") == b.get("errorType"), f"fails alike: {q}", f"tsgate {c1} {a.get('errorType')}, reader {c2} {b.get('errorType')}")

# 2. Storage: tsgate holds exactly what the reference receiver holds.
def qr_settled(base, q):
    return call(base, "/api/v1/query_range", {"query": q, "start": START, "end": SETTLED, "step": STEP})


for q in ['up', 'rate(node_cpu_seconds_total[15s])', 'process_resident_memory_bytes']:
    c1, a = qr_settled(ts, q)
    c2, b = qr_settled(ref, q)
    d = diff(a["data"]["result"], b["data"]["result"]) if c1 == c2 == 200 else f"{c1} {c2}"
    report(d is None, f"same as ref receiver: {q}", d or "")
# Every raw sample: the instant query of a range selector returns them as they are stored.
raw = {}
for name, base in (("tsgate", ts), ("ref", ref)):
    c, r = call(base, "/api/v1/query", {"query": '{__name__=~".+"}[10m]', "time": SETTLED})
    raw[name] = {json.dumps(s["metric"], sort_keys=True): s["values"] for s in r["data"]["result"]} if c == 200 else {}
missing = [k for k in raw["ref"] if k not in raw["tsgate"]]
differ = [k for k in raw["ref"] if k in raw["tsgate"] and raw["ref"][k] != raw["tsgate"][k]]
n = sum(len(v) for v in raw["ref"].values())
def first_difference(a, b):
    """Where two sample lists first part: (index, ref's sample, tsgate's sample, lengths)."""
    i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return i, a[i] if i < len(a) else None, b[i] if i < len(b) else None, (len(a), len(b))
detail = f"{len(missing)} series missing (e.g. {missing[:2]}), {len(differ)} differ (e.g. {differ[:1]}: first difference (index, ref, tsgate, lengths) {first_difference(raw['ref'][differ[0]], raw['tsgate'][differ[0]]) if differ else ''})"
# Staleness markers are stored: the intermittent series must vanish between its 5 s bursts.
c, r = call(ts, "/api/v1/query_range", {"query": "compat_intermittent", "start": t0, "end": END, "step": 1})
gaps = 0
if c == 200 and r["data"]["result"]:
    tsv = [float(p[0]) for p in r["data"]["result"][0]["values"]]
    gaps = sum(1 for a, b in zip(tsv, tsv[1:]) if b - a > 1)
report(gaps >= 1, f"stale markers end the intermittent series ({gaps} gaps)", str(r)[:200])
report(n > 0 and not missing and not differ and len(raw["tsgate"]) == len(raw["ref"]), f"every sample the ref receiver holds, bit for bit ({len(raw['ref'])} series, {n} samples)", detail)
c, r = call(ts, "/api/v1/query", {"query": 'sum(count_over_time({__name__=~".+"}[10m]))', "time": SETTLED})
report(c == 200 and int(float(r["data"]["result"][0]["value"][1])) == n, "bench count query sum(count_over_time({__name__=~\".+\"}[10m]))", str(r)[:200])

# 3. Grafana's Prometheus datasource, as it calls the API.
c, r = call(ts, "/api/v1/query", {"query": "1+1", "time": "4", "timeout": "2m"})
report(c == 200 and r == {"status": "success", "data": {"resultType": "scalar", "result": [4, "2"]}}, "grafana health check 1+1 @4", r)
c, r = call(ts, "/api/v1/status/buildinfo", {}, "GET")
report(c == 200 and "version" in r["data"] and not r["data"].get("features"), "grafana buildinfo (no features)", r)
c, r = call(ts, "/api/v1/labels", {"start": START, "end": END})
report(c == 200 and "__name__" in r["data"] and "job" in r["data"], "grafana labels", str(r)[:200])
c, r = call(ts, "/api/v1/label/__name__/values", {"start": START, "end": END}, "GET")
report(c == 200 and "up" in r["data"] and "node_load1" in r["data"], "grafana label values __name__", str(r)[:200])
c, r = call(ts, "/api/v1/label/job/values", {"start": START, "end": END, "match[]": "up"}, "GET")
report(c == 200 and r["data"] == ["demo0", "demo1", "demo2", "intermittent", "node", "prometheus"], "grafana label values job with match[]", r)
c, r = call(ts, "/api/v1/series", {"match[]": '{__name__!=""}', "start": START, "end": END, "limit": "40000"})
report(c == 200 and any(s.get("__name__") == "up" for s in r["data"]), "grafana series {__name__!=\"\"} limit 40000", str(r)[:200])
c, r = call(ts, "/api/v1/series", {"match[]": 'up', "start": START, "end": END, "limit": "1"})
report(c == 200 and len(r["data"]) == 1 and r.get("warnings"), "series limit truncates with a warning", r)
if not imported:
    c, r = call(ts, "/api/v1/metadata", {"limit": "40000"}, "GET")
    report(c == 200 and r["data"].get("node_load1", [{}])[0].get("type") == "gauge" and r["data"].get("node_cpu_seconds_total", [{}])[0].get("type") == "counter", "grafana metadata from remote write", str(r)[:300])
c, r = call(ts, "/api/v1/query_exemplars", {"query": "test", "start": START * 1000, "end": END * 1000}, "GET")
report(c == 200 and r == {"status": "success", "data": []}, "grafana exemplars probe (ms times)", r)
c, r = call(ts, "/api/v1/rules", {}, "GET")
report(c == 200 and r["data"] == {"groups": []}, "grafana rules", r)
c, r = call(ts, "/api/v1/query_range", {"query": 'sum by (job) (rate(scrape_samples_scraped[15s]))', "start": START, "end": END, "step": "2", "timeout": "2m"})
report(c == 200 and r["data"]["resultType"] == "matrix" and len(r["data"]["result"]) == 6, "grafana range query (POST form)", str(r)[:200])
c, r = call(ts, "/api/v1/query", {"query": 'up', "time": f"{END}.5"}, "GET")
report(c == 200 and r["data"]["result"][0]["value"][0] == END + 0.5, "grafana instant query (GET, fractional time)", str(r)[:200])

print(f"test result: {'ok' if failed == 0 else 'FAILED'}. {passed} passed; {failed} failed; 0 ignored; 0 measured; 0 filtered out")
sys.exit(1 if failed else 0)
