"""Breadth for compare.py: seeded random /render requests and the other graphite-web endpoints.

`targets(rng, funcs, n, base)` composes graphite functions (every one graphite-web's own function
registry lists, but for those in EXCLUDE) 1-4 deep over glob and seriesByTag leaves, each
argument drawn by its declared type (options, suggestions, or a pool per parameter name), with a
random window (epoch, -1h, -90min, now-1d, HH:MM_YYYYMMDD, with and without tz), format
(json/csv/raw/pickle), maxDataPoints and noNullPoints. The same seed gives the same requests.

`endpoint_cases()` lists /metrics/find, /metrics/expand, /metrics/index.json and tags API
requests; `normalise(path, params, answer)` drops what graphite-web answers but a gateway cannot
(the whisper `_tagged` tree, TagDB row ids, whisper file intervals) and puts unordered answers in
a fixed order.
"""
import datetime
import re

# Functions left out, with the reason (the fixed targets cover the deterministic ones).
EXCLUDE = {
    "randomWalk": "random values", "randomWalkFunction": "random values",
    "events": "graphite-web reads its own Django events table",
    "seriesByTag": "a leaf here",
    "mapSeries": "a list of lists alone (documented difference)",
    "map": "a list of lists alone (documented difference)",
    "reduceSeries": "needs mapSeries' groups: fixed targets",
    "reduce": "needs mapSeries' groups: fixed targets",
    "useSeriesAbove": "graphite-web fails on nulls under Python 3 (documented difference)",
    "removeBetweenPercentile": "graphite-web fails on nulls under Python 3 (documented)",
    "template": "fixed targets",
}

# Leaves: path expressions over one resolution each (a glob over the 10 s and the 120 s series is
# the one documented difference), tagged series, and constant-like functions.
PATHS = [
    "a.b.c1", "a.b.c2", "a.x.c1", "a.x.c2", "a.*.*", "a.b.*", "a.{b,x}.c1", "a.[bx].c[0-9]",
    "a.*.c?", "a.{b,y}.*", "a.[!b].*", "s.*", "s.sparse", "s.sparse2", "r.halves", "a.y.none",
    "w.slow", "nosuch.*", "a.b.c{1,2}", "*.b.*", "a.*.c1",
]
TAGGED = [
    "seriesByTag('name=disk.used')", "seriesByTag('dc=west')", "seriesByTag('name=~disk.*')",
    "seriesByTag('name=~disk.*','host!=h2')", "seriesByTag('host=~h[13]')",
    "seriesByTag('dc=east','host!=~h1')", "disk.used;dc=east;host=h1",
]
CONSTANTS = ["constantLine(3)", "threshold(2.5)", "identity('id')", "timeFunction('t')",
             "sinFunction('sin',2)", "time('t',30)"]

INTS = {
    "n": [0, 1, 2, 3, 5], "points": [1, 2, 3, 5], "steps": [1, 2, 3, -2],
    "precision": [0, 1, 2, -1], "base": [2, 10], "step": [30, 60], "amplitude": [1, 3],
    "delta": [2, 3], "timeShiftStart": [0, 1], "timeShiftEnd": [1, 2], "dashLength": [5],
}
NODES = [0, 1, 2, -1, -2]
FLOATS = {
    "n": [0, 10, 25, 50, 75, 90, 100, 33.3], "factor": [2, -1, 0.5, 1e-3, 0],
    "value": [0, 1, 2.5, -3, 100], "threshold": [0, 1, 2.5, -3, 100, 20],
    "constant": [0, 1, 2.5, -3, 100], "maxValue": [0, 5, 100, -5], "minValue": [0, 5, 100, -5],
    "seconds": [1, 60, 0.5, 30], "width": [2], "alpha": [0.1, 0.5, 0.9],
    "default": [0, -1, 5], "xFilesFactor": [0, 0.3, 0.5, 1], "windowTolerance": [0.1, 0.5],
}
INTERVALS = {
    "intervalString": ["30s", "1min", "2min", "3min", "5min", "7min", "45s", "1h"],
    "timeShift": ["1min", "-1min", "30s", "5min", "1h", "+2min", "-30s", "1d"],
    "timeShiftUnit": ["1min", "5min", "1h"],
    "bootstrapInterval": ["10min", "30min", "1h"],
    "seasonality": ["5min", "10min", "1h"],
    "intervalUnit": ["1min", "5min", "1h", "1s"],
}
WINDOWS = [1, 2, 3, 5, "'30s'", "'1min'", "'2min'", "'5min'"]
STRINGS = {
    "search": ["c(\\d)", "^a\\.", "b", "(\\w+)\\.(\\w+)", "disk", "x$"],
    "replace": ["n\\1", "X-", "", "\\2", "y"],
    "newName": ["x", "all", "renamed"],
    "theColor": ["red", "#ff0000"], "stack": ["s1"], "label": ["lbl"], "color": ["blue"],
    "name": ["nm", "a b"], "pattern": ["c1", "^a\\.b", "x", "h[12]", "", "sparse"],
    "units": ["b", "ms"], "templateFunction": ["sumSeries(%)", "scale(%,2)", "maxSeries(%)"],
    "intervalUnit": ["1min", "5min"],
}
TAGS = ["dc", "host", "name", "nosuch"]
FORMATS = ["json"] * 9 + ["csv", "raw", "pickle", "msgpack", "dygraph", "rickshaw"]
ZONES = ["Europe/Berlin", "America/New_York", "Asia/Kolkata", "UTC"]


def q(s):
    return "'%s'" % s


def literal(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return q(v)
    return repr(v)


class Gen:
    def __init__(self, rng, funcs, base, step):
        self.rng, self.base, self.step = rng, base, step
        # Functions taking a series list (composable) and those that make series from nothing.
        self.funcs = {}
        for name, f in sorted(funcs.items()):
            if name in EXCLUDE or not getattr(f, "params", None):
                continue
            self.funcs[name] = f
        self.composable = [n for n, f in self.funcs.items()
                           if any(p.type.name in ("seriesList", "series", "seriesLists")
                                  for p in f.params)]

    def leaf(self):
        r = self.rng.random()
        if r < 0.72:
            return self.rng.choice(PATHS)
        if r < 0.92:
            return self.rng.choice(TAGGED)
        return self.rng.choice(CONSTANTS)

    def expr(self, depth):
        if depth <= 0:
            return self.leaf()
        name = self.rng.choice(self.composable)
        return "%s(%s)" % (name, ",".join(self.args(name, depth - 1)))

    def date(self):
        t = self.base + self.rng.choice([-600, 0, 120, 300, 900])
        d = datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
        return self.rng.choice([str(t), d.strftime("%H:%M_%Y%m%d")])

    def value(self, fname, p, depth, first_series):
        t, n, rng = p.type.name, p.name, self.rng
        if t in ("seriesList", "series", "seriesLists"):
            # The first series argument carries the nesting; others are leaves.
            return self.expr(depth) if first_series else self.leaf()
        opts = [o for o in (p.options or []) if o is not None]
        if t == "any":
            return rng.choice(["100", "50", self.leaf()])
        if opts and (t not in ("string",) or rng.random() < 0.95):
            return literal(rng.choice(opts))
        if t == "boolean":
            return rng.choice(["true", "false"])
        if t in ("node",):
            return str(rng.choice(NODES))
        if t == "nodeOrTag":
            return literal(rng.choice(NODES + ["name", "dc", "host"]))
        if t == "tag":
            return q(rng.choice(TAGS))
        if t == "integer":
            return str(rng.choice(INTS.get(n, [1, 2, 3])))
        if t == "intOrInf":
            return str(rng.choice([1, 2, 5]))
        if t == "float":
            return literal(rng.choice(FLOATS.get(n, [0, 1, 2.5, -1])))
        if t == "intOrInterval":
            return str(rng.choice(WINDOWS))
        if t == "interval":
            return q(rng.choice(INTERVALS.get(n, ["1min", "5min"])))
        if t == "date":
            return q(self.date())
        if t == "string":
            if n == "tags":
                return q(rng.choice(TAGS))
            return q(rng.choice(STRINGS.get(n, ["x"])))
        return q("x")

    def args(self, name, depth):
        params = self.funcs[name].params
        out, first = [], True
        required = sum(1 for p in params if p.required)
        # All required parameters, then a random run of the optional ones (positional).
        upto = required + self.rng.randint(0, max(0, len(params) - required))
        for i, p in enumerate(params):
            if i >= upto and not p.required:
                break
            reps = self.rng.randint(1, 3) if p.multiple else 1
            for _ in range(reps):
                is_series = p.type.name in ("seriesList", "series", "seriesLists")
                out.append(self.value(name, p, depth, first and is_series))
                if is_series:
                    first = False
        return out

    def window(self, now):
        """from/until parameters: absolute and relative forms, now = `now` (a parameter). Every
        window holds some of the data (a series' step is told by its points: a window far
        from any is gridded on a default step, whisper's on the file's). The draws do not
        depend on `base`, so a seed gives the same requests on every run."""
        rng, base = self.rng, self.base
        p = {"now": now}
        tz = rng.choice(ZONES)
        kind = rng.random()
        fo, fd = rng.choice([-1200, -600, -10, 0, 95, 60, 300, -3600, -7200]), rng.random()
        du = rng.choice([300, 600, 610, 900, 1800, 2400, 3600, 7200])
        forms = [(rng.random(), rng.random()) for _ in range(2)]
        minute = rng.random() < 0.5

        def form(t, k, alt):
            if k < 0.3:
                return str(t)
            if k < 0.55:
                s = now - t
                if s > 0 and s % 3600 == 0:
                    return "-%dh" % (s // 3600)
                if s > 0 and s % 60 == 0:
                    return ("-%dmin" if alt < 0.5 else "now-%dmin") % (s // 60)
                return "-%ds" % s if s >= 0 else "now+%ds" % -s
            if k < 0.75:
                # HH:MM_YYYYMMDD is minute-aligned, on the request zone's clock.
                import zoneinfo
                if tz != "UTC":
                    p["tz"] = tz
                return datetime.datetime.fromtimestamp(t, zoneinfo.ZoneInfo(tz)).strftime(
                    "%H:%M_%Y%m%d")
            return str(t)

        if kind < 0.1:
            p["from"] = "now-1d"
            p["until"] = "now" if fd < 0.5 else str(base + 1800)
        elif kind < 0.2:
            p["from"] = ["-1h", "-90min", "-2h", "now-3h"][int(fd * 4)]
        else:
            f = base + fo
            u = min(max(f + du, base + 100), now)
            if minute:
                f -= f % 60
                u -= u % 60
            p["from"], p["until"] = form(f, *forms[0]), form(u, *forms[1])
        return p

    def request(self, now):
        depth = self.rng.randint(1, 4)
        target = self.expr(depth)
        p = self.window(now)
        fmt = self.rng.choice(FORMATS)
        p["format"] = fmt
        if fmt == "json":
            if self.rng.random() < 0.15:
                p["maxDataPoints"] = self.rng.choice([1, 2, 5, 13, 59, 100, 500])
            if self.rng.random() < 0.15:
                p["noNullPoints"] = "1"
        return target, p


def targets(rng, funcs, n, base, step, now):
    g = Gen(rng, funcs, base, step)
    out, seen = [], set()
    while len(out) < n:
        t, p = g.request(now)
        key = (t, tuple(sorted(p.items())))
        if key in seen:
            continue
        seen.add(key)
        out.append((t, p))
    return out, g


# ---------------------------------------------------------------- the other endpoints

FIND_QUERIES = ["*", "a", "a.*", "a.b.*", "a.*.c1", "a.{b,x}.*", "a.[bx].c[12]", "a.?.*",
                "s.sp*", "nosuch.*", "a.b.c1", "a.b", "*.*", "*.*.*", "a.*.*", "w.*",
                "a.[!b].*", "a.{b,y}", "r.*", "a.b.c{1,3}", "*.b"]
COMPLETER = ["a.", "a.b.c", "a..c", "s", "a.x.", "", "w.s", "a.b.c1", "*"]
TAG_EXPRS = [["dc=east"], ["name=~disk.*", "host!=h2"], ["name=~a.*"], ["host="],
             ["name=disk.used"], ["dc=west", "name!=disk.free"], ["host=~h[12]"],
             ["name=~[a-z]\\.b\\."], ["dc!=east", "name=~disk"], ["nosuch=x"]]


def endpoint_cases():
    """(path, params) pairs; a list value is a repeated parameter."""
    out = []
    for qy in FIND_QUERIES:
        out.append(("/metrics/find", {"query": qy}))
        out.append(("/metrics/find", {"query": qy, "format": "json"}))
        out.append(("/metrics/find", {"query": qy, "format": "completer"}))
        out.append(("/metrics/find", {"query": qy, "format": "nodelist"}))
    for qy in ["a.*", "a.*.c1", "*", "a.b.*", "s.*"]:
        out.append(("/metrics/find", {"query": qy, "wildcards": "1"}))
        out.append(("/metrics/find", {"query": qy, "format": "completer", "wildcards": "1"}))
        out.append(("/metrics/find", {"query": qy, "leavesOnly": "1"}))
        out.append(("/metrics/find", {"query": qy, "format": "json", "leavesOnly": "1"}))
        out.append(("/metrics/find", {"query": qy, "format": "nodelist", "position": "0"}))
        out.append(("/metrics/find", {"query": qy, "format": "nodelist", "position": "-2"}))
        out.append(("/metrics/find", {"query": qy, "from": "-1h", "until": "now"}))
        out.append(("/metrics/find", {"query": qy, "from": "-1d"}))
        out.append(("/metrics/find", {"query": qy, "from": "bogus"}))
        out.append(("/metrics/find", {"query": qy, "until": "12:00_20200101"}))
    for qy in COMPLETER:
        out.append(("/metrics/find", {"query": qy, "format": "completer"}))
    out.append(("/metrics/find", {}))
    out.append(("/metrics/find", {"query": "a.*", "format": "nosuch"}))
    out.append(("/metrics/find", {"query": "a.*", "wildcards": "true"}))
    out.append(("/metrics/find", {"query": "a.*", "position": "x", "format": "nodelist"}))
    for qs in [["a.*"], ["a.*.*"], ["a.b.*", "s.*"], ["a.{b,x}.c1", "nosuch"], ["*"],
               ["a.*.c1", "a.b.c1"], ["*.*"], ["a.[bx]"]]:
        out.append(("/metrics/expand", {"query": qs}))
        out.append(("/metrics/expand", {"query": qs, "groupByExpr": "1"}))
        out.append(("/metrics/expand", {"query": qs, "leavesOnly": "1"}))
        out.append(("/metrics/expand", {"query": qs, "leavesOnly": "1", "groupByExpr": "1"}))
    out.append(("/metrics/expand", {}))
    out.append(("/metrics/index.json", {}))
    out.append(("/tags", {}))
    for f in ["d", "^h|n", "na", "x", "[dh]"]:
        out.append(("/tags", {"filter": f}))
    for lim in ["1", "2", "0"]:
        out.append(("/tags", {"limit": lim}))
    for tag in ["dc", "host", "name", "nosuch"]:
        out.append(("/tags/" + tag, {}))
        out.append(("/tags/" + tag, {"filter": "h[12]"}))
        out.append(("/tags/" + tag, {"filter": "disk|west"}))
        out.append(("/tags/" + tag, {"limit": "1"}))
    ac = "/tags/autoComplete/"
    out.append((ac + "tags", {}))
    for pre in ["d", "h", "n", "x", "na"]:
        out.append((ac + "tags", {"tagPrefix": pre}))
    for exprs in TAG_EXPRS:
        out.append(("/tags/findSeries", {"expr": exprs}))
        out.append((ac + "tags", {"expr": exprs}))
        out.append((ac + "tags", {"expr": exprs, "tagPrefix": "h"}))
        for tag in ["dc", "host", "name"]:
            out.append((ac + "values", {"expr": exprs, "tag": tag}))
        out.append((ac + "values", {"expr": exprs, "tag": "name", "valuePrefix": "a."}))
        out.append((ac + "values", {"expr": exprs, "tag": "host", "limit": "1"}))
    for tag in ["dc", "host", "name", "nosuch"]:
        out.append((ac + "values", {"tag": tag}))
        out.append((ac + "values", {"tag": tag, "valuePrefix": "h"}))
        out.append((ac + "values", {"tag": tag, "valuePrefix": "a.b"}))
        out.append((ac + "values", {"tag": tag, "limit": "2"}))
    out.append((ac + "tags", {"limit": "2"}))
    out.append((ac + "values", {}))
    out.append(("/tags/findSeries", {}))
    out.append(("/tags/findSeries", {"expr": ["name=~a.*", "name!=~a.b"]}))
    return out


def strip_tagged(v):
    """graphite-web's whisper finder shows carbon's `_tagged` directory in the dotted tree; a
    gateway does not (tagged series are reached with seriesByTag). Below it, a leading `*`
    matches its three-hex-digit hash directories, which no series here is named like."""
    def keep(x):
        s = x if isinstance(x, str) else (x.get("path") or x.get("id") or x.get("text") or "")
        t = x if isinstance(x, str) else x.get("text", "")
        return not s.startswith("_tagged") and not re.match("^[0-9a-f]{3}$", t or "")
    return [x for x in v if keep(x)]


def normalise(path, params, v):
    """The part of an answer compared (see the module doc)."""
    if path == "/metrics/find":
        fmt = params.get("format", "treejson")
        if fmt == "json":
            v = [{k: x for k, x in n.items() if k != "intervals"} for n in v]
            return strip_tagged(v)
        if fmt == "completer":
            # graphite-web sorts by node name after shuffling the finder's nodes: nodes of one
            # name come in any order.
            return {"metrics": sorted(strip_tagged(v["metrics"]),
                                      key=lambda m: (m.get("name", ""), m.get("path", "~")))}
        if fmt == "nodelist":
            return {"nodes": [n for n in v["nodes"]
                              if n != "_tagged" and not re.match("^[0-9a-f]{3}$", n)]}
        return strip_tagged(v)
    if path == "/metrics/expand":
        r = v["results"]
        if isinstance(r, dict):
            return {"results": {k: strip_tagged(x) for k, x in r.items()}}
        return {"results": strip_tagged(r)}
    if path == "/metrics/index.json":
        return strip_tagged(v)
    if path == "/tags":
        return [{k: x for k, x in t.items() if k != "id"} for t in v]
    if path.startswith("/tags/") and not path.startswith(("/tags/autoComplete", "/tags/find")):
        if isinstance(v, dict):
            v = {k: x for k, x in v.items() if k != "id"}
            v["values"] = [{k: x for k, x in t.items() if k != "id"} for t in v["values"]]
        return v
    return v


def label(path, params):
    return path + "?" + "&".join(
        "%s=%s" % (k, x) for k, v in sorted(params.items())
        for x in (v if isinstance(v, list) else [v]))


# ---------------------------------------------------------------- render answers

def same_value(a, b):
    if a is None or b is None:
        return a is None and b is None
    if a == b:
        return True
    if a != a and b != b:
        return True
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def num(s):
    if s in ("", "None"):
        return None
    return float(s)


def parse_csv(text):
    import csv
    import io
    return [(r[0], r[1], num(r[2])) for r in csv.reader(io.StringIO(text))]


def diff_csv(want, got):
    w, g = parse_csv(want), parse_csv(got)
    if len(w) != len(g):
        return "csv: graphite-web %d rows, tsgate %d" % (len(w), len(g))
    for a, b in zip(w, g):
        if a[0] != b[0] or a[1] != b[1] or not same_value(a[2], b[2]):
            return "csv row: graphite-web %r, tsgate %r" % (a, b)
    return None


def parse_raw(text):
    out = []
    for line in text.splitlines():
        head, _, vals = line.rpartition("|")
        name, start, end, step = head.rsplit(",", 3)
        out.append((name, int(start), int(end), int(step),
                    [num(x) for x in vals.split(",")] if vals else []))
    return out


def diff_series_infos(w, g, what):
    if [x[0] for x in w] != [x[0] for x in g]:
        return "%s names: graphite-web %s, tsgate %s" % (what, [x[0] for x in w], [x[0] for x in g])
    for a, b in zip(w, g):
        if a[1:4] != b[1:4]:
            return "%s %s: start/end/step graphite-web %s, tsgate %s" % (what, a[0], a[1:4], b[1:4])
        if len(a[4]) != len(b[4]):
            return "%s %s: %d values, tsgate %d" % (what, a[0], len(a[4]), len(b[4]))
        for i, (x, y) in enumerate(zip(a[4], b[4])):
            if not same_value(x, y):
                return "%s %s value %d: graphite-web %r, tsgate %r" % (what, a[0], i, x, y)
    return None


def diff_raw(want, got):
    return diff_series_infos(parse_raw(want), parse_raw(got), "raw")


def diff_pickle(want, got, w=None, g=None):
    import pickle
    if w is None:
        w, g = pickle.loads(want), pickle.loads(got)

    def rows(v):
        return [(s["name"], s["start"], s["end"], s["step"], s["values"]) for s in v]
    d = diff_series_infos(rows(w), rows(g), "pickle")
    if d:
        return d
    for a, b in zip(w, g):
        for k in ("consolidationFunc", "valuesPerPoint", "xFilesFactor"):
            if a.get(k) != b.get(k):
                return "pickle %s: %s graphite-web %r, tsgate %r" % (a["name"], k, a.get(k), b.get(k))
    return None


def diff_msgpack(want, got):
    import collections
    import collections.abc
    # graphite-web's bundled umsgpack reads collections.Hashable, gone in Python 3.10.
    collections.Hashable = getattr(collections, "Hashable", collections.abc.Hashable)
    from graphite.util import msgpack
    w, g = msgpack.loads(want), msgpack.loads(got)
    return diff_pickle(None, None, w, g)


def diff_dygraph(want, got):
    import json
    w, g = json.loads(want), json.loads(got)
    if w.get("labels") != g.get("labels"):
        return "dygraph labels: graphite-web %s, tsgate %s" % (w.get("labels"), g.get("labels"))
    wd, gd = w.get("data", []), g.get("data", [])
    if len(wd) != len(gd):
        return "dygraph: graphite-web %d rows, tsgate %d" % (len(wd), len(gd))
    for a, b in zip(wd, gd):
        if len(a) != len(b) or a[0] != b[0] or not all(map(same_value, a[1:], b[1:])):
            return "dygraph row: graphite-web %s, tsgate %s" % (a, b)
    return None


def diff_rickshaw(want, got):
    import json
    w, g = json.loads(want), json.loads(got)

    def rows(v):
        return [(s["target"], 0, 0, 0, [p["y"] for p in s["datapoints"]],
                 [p["x"] for p in s["datapoints"]]) for s in v]
    rw, rg = rows(w), rows(g)
    for a, b in zip(rw, rg):
        if a[5] != b[5]:
            return "rickshaw %s: timestamps differ" % a[0]
    return diff_series_infos([r[:5] for r in rw], [r[:5] for r in rg], "rickshaw")
