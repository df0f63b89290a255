#!/usr/bin/env python3
"""The PromQL compliance tester's query set (prometheus/compliance, promql/promql-test-queries.yml),
expanded from its templates as its testcases/expand.go does, run as range queries against tsgate
and a reference Prometheus 2.42 holding the same remote-written data, compared as its comparer
does (both fail where `should_fail`; else same series, timestamps, values within 1e-5 relative,
NaNs equal). Prints each difference and `equal/total`.

usage: compliance.py QUERIES_YML TSGATE REF START END STEP HOST [LIMIT]
  HOST replaces demo.promlabs.com in the queries (where the demo instances listen)
  LIMIT runs every n-th query only (a short variant)
"""
import itertools, json, math, sys, urllib.parse, urllib.request

import yaml

VARIANTS = {
    "range": ["1s", "15s", "1m", "5m", "15m", "1h"],
    "offset": ["1m", "5m", "10m"],
    "simpleAggrOp": ["sum", "avg", "max", "min", "count", "stddev", "stdvar"],
    "simpleTimeAggrOp": ["sum", "avg", "max", "min", "count", "stddev", "stdvar", "absent", "last"],
    "topBottomOp": ["topk", "bottomk"],
    "quantile": ["-0.5", "0.1", "0.5", "0.75", "0.95", "0.90", "0.99", "1", "1.5"],
    "arithBinOp": ["+", "-", "*", "/", "%", "^"],
    "compBinOp": ["==", "!=", "<", ">", "<=", ">="],
    "binOp": ["+", "-", "*", "/", "%", "^", "==", "!=", "<", ">", "<=", ">="],
    "simpleMathFunc": ["abs", "ceil", "floor", "exp", "sqrt", "ln", "log2", "log10", "round"],
    "extrapolatedRateFunc": ["delta", "rate", "increase"],
    "clampFunc": ["clamp_min", "clamp_max"],
    "instantRateFunc": ["idelta", "irate"],
    "dateFunc": ["day_of_month", "day_of_week", "days_in_month", "hour", "minute", "month", "year"],
    "smoothingFactor": ["0.1", "0.5", "0.8"],
    "trendFactor": ["0.1", "0.5", "0.8"],
}


def expand(tc):
    """Every combination of the case's variant args, the first arg varying slowest."""
    names = list(dict.fromkeys(tc.get("variant_args") or []))
    out = []
    for combo in itertools.product(*(VARIANTS[n] for n in names)):
        q = tc["query"]
        for n, v in zip(names, combo):
            q = q.replace("{{." + n + "}}", v)
        out.append(q)
    return out


def call(base, q, start, end, step):
    data = urllib.parse.urlencode({"query": q, "start": start, "end": end, "step": step}).encode()
    req = urllib.request.Request(base + "/api/v1/query_range", data, {"Content-Type": "application/x-www-form-urlencoded"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        try:
            return e.code, json.loads(e.read())
        except Exception:
            return e.code, {}


def close(a, b):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= 1e-5 * max(abs(a), abs(b))


def diff(x, y):
    key = lambda s: sorted(s["metric"].items())
    x, y = sorted(x, key=key), sorted(y, key=key)
    if [s["metric"] for s in x] != [s["metric"] for s in y]:
        return f"series: {[s['metric'] for s in x][:3]} vs {[s['metric'] for s in y][:3]} ({len(x)} vs {len(y)})"
    for a, b in zip(x, y):
        if [p[0] for p in a["values"]] != [p[0] for p in b["values"]]:
            return f"{a['metric']}: timestamps ({len(a['values'])} vs {len(b['values'])})"
        for p, q in zip(a["values"], b["values"]):
            if not close(float(p[1]), float(q[1])):
                return f"{a['metric']} @{p[0]}: {p[1]} vs {q[1]}"
    return None


def main():
    path, ts, ref, start, end, step, host = sys.argv[1:8]
    every = int(sys.argv[8]) if len(sys.argv) > 8 else 1
    cases = yaml.safe_load(open(path))["test_cases"]
    queries = [(q.replace("demo.promlabs.com", host), tc.get("should_fail", False), tc.get("skip_comparison", False))
               for tc in cases for q in expand(tc)][::every]
    equal = nonempty = 0
    for q, should_fail, skip in queries:
        c1, a = call(ts, q, start, end, step)
        c2, b = call(ref, q, start, end, step)
        if should_fail:
            ok = c1 >= 400 and c2 >= 400
            why = f"should fail: tsgate {c1}, ref {c2}"
        elif c1 != 200 or c2 != 200:
            ok, why = False, f"tsgate {c1} {a.get('error')}; ref {c2} {b.get('error')}"
        elif skip:
            ok, why = True, ""
        else:
            why = diff(a["data"]["result"], b["data"]["result"])
            ok = why is None
            nonempty += bool(b["data"]["result"])
        equal += ok
        if not ok:
            print(f"DIFF {q}: {why}", flush=True)
    print(f"compliance: {equal}/{len(queries)} equal ({nonempty} with a non-empty answer)", flush=True)
    return 0 if equal == len(queries) else 1


sys.exit(main())
