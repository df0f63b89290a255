#!/usr/bin/env python3
"""A randomised differential of tsgate's PromQL against Prometheus 2.42 over the same data.

usage: random_compare.py TSGATE REFERENCE T0 T1 [--count N] [--seed S] [--only I[,I...]] [-v]
  REFERENCE  a Prometheus answering over the same samples (run.sh's remote-reading `reader`)
  T0 T1      when the sending Prometheus started and stopped (s)

A seeded generator (expression i is drawn from Random(f"{seed}:{i}"), so `--only i` replays one)
writes PromQL over the series run.sh's sender scrapes: selectors with = != =~ !~ matchers,
offsets and @ modifiers, ranges and subqueries, every function 2.42 has (and a few it has not,
which must be refused alike), aggregations with by/without and parameters, binary operators
with bool, on/ignoring, group_left/right and set operators, unary minus, precedence without
brackets, NaN/Inf and number spellings (0x1f, 1e3, 010), durations like 1h30m, nested a few
levels. Each expression runs as a range query and as an instant query on both servers; they must
agree on HTTP status, errorType, resultType, label sets, timestamps and values (1e-9 relative,
NaN == NaN). Order counts only where Prometheus defines it (the value order of sort, sort_desc
and of topk/bottomk without grouping); elsewhere results are compared sorted by labels. A
difference fails the run unless its expression matches an entry of SKIP (with the reason).
Prints each difference and `random compare: E/N expressions equal (K skipped, seed S)`.
"""
import json, math, random, re, sys, time, urllib.error, urllib.parse, urllib.request

import promhttp

# Differences understood and accepted: (regex over the expression, regex every difference of
# it must match, reason). Keep it short.
SKIP = [
    (r"\{__name__=~", r"status 200 None '' vs 422 execution 'vector cannot contain metrics with the same labelset'",
     "tsgate lets an aggregation take a function's output whose series collide once their names are dropped "
     "(sum(count_over_time({__name__=~\".+\"}[1h])), the ingest bench's point count, src/README); 2.42 refuses it"),
]

# ---------------------------------------------------------------------------------------------
# What run.sh's sender scrapes, grouped in families whose series share labels (so that binary
# operators between two expressions of one family match something).
JOBS = ["prometheus", "node", "intermittent", "demo0", "demo1", "demo2"]
FAMILIES = {
    "target": {
        "metrics": ["up", "scrape_duration_seconds", "scrape_samples_scraped", "scrape_series_added",
                    "scrape_samples_post_metric_relabeling"],
        "labels": {"job": JOBS},
    },
    "process": {
        "metrics": ["process_resident_memory_bytes", "process_cpu_seconds_total", "process_open_fds",
                    "go_goroutines", "go_memstats_alloc_bytes", "process_start_time_seconds"],
        "labels": {"job": ["prometheus", "node"]},
    },
    "cpu": {
        "metrics": ["node_cpu_seconds_total"],
        "labels": {"cpu": ["0", "1"], "mode": ["idle", "user", "system", "iowait", "irq", "softirq", "steal", "nice"]},
        "counter": True,
    },
    "demo_cpu": {
        "metrics": ["demo_cpu_usage_seconds_total"],
        "labels": {"mode": ["idle", "user", "system"], "job": ["demo0", "demo1", "demo2"]},
        "counter": True,
    },
    "demo_gauge": {
        "metrics": ["demo_memory_usage_bytes", "demo_num_cpus", "demo_disk_usage_bytes", "demo_disk_total_bytes",
                    "demo_batch_last_success_timestamp_seconds", "demo_intermittent_metric"],
        "labels": {"type": ["free", "used", "buffers", "cached"], "job": ["demo0", "demo1", "demo2"]},
    },
    "demo_hist": {
        "metrics": ["demo_api_request_duration_seconds_bucket"],
        "labels": {"method": ["GET", "POST"], "path": ["/api/foo", "/api/bar", "/api/nonexistent"],
                   "status": ["200", "503", "404"], "le": ["0.0001", "0.001", "0.005", "0.01", "0.1", "1", "+Inf"],
                   "job": ["demo0", "demo1", "demo2"]},
        "counter": True, "hist": True,
    },
    "demo_summ": {
        "metrics": ["demo_api_request_duration_seconds_count", "demo_api_request_duration_seconds_sum"],
        "labels": {"method": ["GET", "POST"], "path": ["/api/foo", "/api/bar"], "status": ["200", "503", "404"]},
        "counter": True,
    },
    "prom_http": {
        "metrics": ["prometheus_http_requests_total", "prometheus_http_request_duration_seconds_count",
                    "prometheus_http_request_duration_seconds_bucket"],
        "labels": {"handler": ["/api/v1/query", "/api/v1/write", "/metrics", "/-/ready", "/api/v1/read"],
                   "code": ["200", "204", "400"], "le": ["0.1", "0.2", "0.4", "1", "+Inf"]},
        "counter": True,
    },
    "compat": {
        "metrics": ["compat_counter_total", "compat_intermittent"],
        "labels": {"kind": ["a", "b"], "job": ["intermittent"]},
        "counter": True,
    },
    "node": {
        "metrics": ["node_load1", "node_load5", "node_load15", "node_memory_MemFree_bytes", "node_memory_MemTotal_bytes",
                    "node_network_receive_bytes_total", "node_network_transmit_bytes_total"],
        "labels": {"device": ["lo", "eth0"], "job": ["node"]},
    },
}
HIST = {"demo_hist": "demo_api_request_duration_seconds_bucket", "prom_http": "prometheus_http_request_duration_seconds_bucket"}
MATH = ["abs", "ceil", "floor", "exp", "sqrt", "ln", "log2", "log10", "sgn", "acos", "acosh", "asin", "asinh",
        "atan", "atanh", "cos", "cosh", "sin", "sinh", "tan", "tanh", "deg", "rad"]
DATE = ["day_of_month", "day_of_week", "day_of_year", "days_in_month", "hour", "minute", "month", "year"]
RANGE_FN = ["rate", "irate", "increase", "delta", "idelta", "deriv", "resets", "changes", "avg_over_time",
            "min_over_time", "max_over_time", "sum_over_time", "count_over_time", "stddev_over_time",
            "stdvar_over_time", "last_over_time", "present_over_time", "absent_over_time"]
# Known to the parser tsgate uses (3.x), unknown to 2.42: must be refused as 2.42 refuses them.
NOT_242 = ["mad_over_time({m}[10s])", "sort_by_label({v}, \"job\")", "sort_by_label_desc({v}, \"job\")",
           "first_over_time({m}[10s])", "ts_of_max_over_time({m}[10s])", "histogram_avg({v})",
           "histogram_stddev({v})", "histogram_stdvar({v})", "limitk(2, {v})", "limit_ratio(0.5, {v})",
           "info({v})", "double_exponential_smoothing({m}[10s], 0.5, 0.5)", "xrate({m}[10s])",
           "start_timestamp({v})", "integral({m}[10s])", "histogram_quantiles({v}, \"q\", 0.5)"]
# Corners of the syntax and of the semantics, each with a random selector {s} (no modifier) or
# vector expression {v} filled in: both servers must answer them alike, refusals included.
PROBES = [
    "{s} offset 0s", "{s}[0s]", "({v})[1m:0s]", "{s}[30m1h]", "{s}[1h30m]", "{s}[5m5m]", "{s}[1.5m]", "{s}[1d]",
    "{s}[1w] offset 1y", "{s}[5]", "{s} offset 5", "{s}[5M]", "1 > 2", "1 == 1", "1 > bool 2", "{s} + on(job) 1",
    "1 + on(job) {s}", "{s} and on(job) group_left {s}", "{s} @ 100 @ 200", "{s} offset 5s offset 1s",
    "sum({s}) offset 5s", "sum({s}) @ 100", "time() @ 100", "vector(1) offset 1s", "({s})[5m]", "{s}[1m:10s][5m:1m]",
    "rate({s}[1m:10s][5m:1m])", "-{s}[5m]", "+{s}", "+\"a\"", "-(\"a\")", "{s}[5m] + 1", "sum({s}) by (job) without (job)",
    "{s} == bool {s}", "{s} @ -100", "{s} @ 1e9", "topk(2, {s}) by (job)", "count_values(\"a b\", {s})",
    "quantile(2, {s})", "label_replace({s}, \"d\", \"$1\", \"s\")", "label_join({s}, \"d\")", "round({s}, 1, 2)",
    "histogram_quantile({s}, {s})", "absent_over_time({s})", "absent({s}[5m])", "scalar({s}[5m])", "vector({s})",
    "timestamp({s}[5m])", "sort_desc({s}[1m])", "year({s}, {s})", "days_in_month()", "time(1)", "pi(1)",
    "rate({s}[5m], 1)", "predict_linear({s}[5m])", "clamp({s}, 1)", "holt_winters({s}[5m], 0.5)", "{s}{job=\"x\"}",
    "{__name__=\"up\", __name__=\"scrape_duration_seconds\"}", "up{__name__=\"up\"}",
    "{__name__=~\"up|scrape_duration_seconds\"}", "{job=~\".*\"}", "{job!=\"\"}", "{job=\"\"}", "{nolabel=~\".*\"}",
    "{job=~\"node\", job=~\"no.*\"}", "up{job=\"node\",job=\"node\"}", "absent(up{job=\"a\",job!=\"b\"})",
    "absent(up{job!=\"b\",job=\"a\"})", "absent(nonexistent{job=\"\"})", "absent(nonexistent{job=\"a\",job=\"a\"})",
    "absent(nonexistent{job=\"a\",job=~\"b\"})", "absent(nonexistent{job!=\"b\",job=\"a\",x=\"y\"})",
    "absent_over_time(nonexistent{job=\"a\", job=~\"b\", k=\"v\"}[5s])", "up{job=~\"\\\\w+\"}", "up{job=~\"no\\\\de\"}",
    "up{job=~\"(?i)NODE\"}", "up{job=~\"node|\"}", "{__name__=~\"UP\"}", "Up", "sum(up) BY (job)", "SUM(up)",
    "Sum by (job) (up)", "up AND up", "up Unless up", "up OFFSET 5s", "abs(Up)", "ABS(up)", "1e3 + 0x1f", "0X1F",
    "010 + 0", "09", "0e3", "007", "1_000", "0x1.8", "1e", ".5e1", "5.e1", "NaN != NaN", "vector(NaN) == NaN",
    "NaN == bool NaN", "Inf", "-Inf", "+Inf", "InF", "Infinity", "{s} / 0", "-{s} / 0", "0 / 0", "{s} % 0", "{s} ^ 0.5",
    "(-1) ^ 0.5", "-1 ^ 0.5", "2 ^ 3 ^ 2", "-2 ^ 2", "2 - 3 - 4", "2 / 3 * 4", "1 + 2 * 3 % 2", "1 < bool 2 == bool 1",
    "{s} > 0 < 1e12", "count({s}) by (job) > bool 1", "atan2(1, 2)", "1 atan2 2", "{s} atan2 {s}", "'single'", "`raw\\n`",
    "\"esc\\x41\\u00e9\\n\\\"\"", "\"\\q\"", "label_replace({s}, \"x\", \"$$1$1\", \"job\", \"(.*)\")",
    "label_replace({s}, \"x\", \"$1x\", \"job\", \"(.*)\")", "label_replace({s}, \"x\", \"${1}x\", \"job\", \"(.*)\")",
    "label_replace({s}, \"__name__\", \"renamed\", \"__name__\", \".*\")", "label_replace({s}, \"job\", \"\", \"job\", \".*\")",
    "label_join({s}, \"x\", \"-\", \"1bad\")", "label_join({s}, \"job\", \"\", \"nolabel\")",
    "count_values without (job) (\"job\", {s})", "count_values by (job) (\"job\", {s})", "count_values(\"__name__\", {s})",
    "count_values without (instance) (\"instance\", {s})", "topk(NaN, {s})", "bottomk(1e19, {s})", "topk(-Inf, {s})",
    "topk(0.5, {s})", "topk(2.9, {s})", "stddev(vector(Inf))", "stdvar(-{s} / 0)", "stddev(vector(NaN))",
    "stddev by (job) ({s} / 0)", "clamp_max({s}, NaN)", "clamp_min({s}, NaN)", "clamp({s}, NaN, 1)", "clamp({s}, 1, NaN)",
    "clamp(-{s} / 0, 0, Inf)", "clamp_min(vector(NaN), Inf)", "clamp_max(vector(NaN), -Inf)", "clamp({s}, 2, 1)",
    "sort(vector(NaN) or {s})", "sort_desc({s} / 0 or vector(1))", "sort(-{s} / 0)", "year(vector(NaN))",
    "month(vector(Inf))", "day_of_week(vector(-Inf))", "hour(vector(-1.5))", "minute(vector(1e19))",
    "days_in_month(vector(1e19))", "day_of_year(vector(-62135596801))", "year(vector(253402300800))", "day_of_month(vector(0.9))",
    "timestamp({s} @ 1 offset 5s)", "timestamp({s} @ end() offset 10s)", "timestamp({s} offset -5s)", "timestamp(timestamp({s}))",
    "timestamp(-{s})", "timestamp(vector(1))", "histogram_quantile(0.5, {__name__=~\".*_bucket\"})",
    "histogram_quantile(0.5, label_replace(demo_api_request_duration_seconds_bucket, \"le\", \"x\", \"le\", \"0.1\"))",
    "histogram_quantile(0.9, demo_api_request_duration_seconds_bucket{le=~\"0.1|1\"})", "histogram_quantile(NaN, {s})",
    "rate({s}[1m:1s]) / irate({s}[10s:1s])", "max_over_time({s}[30s:7s] offset 3s @ end())", "quantile_over_time(0.5, {s}[1m:]) ",
    "sum_over_time({s}[1m:999ms])", "last_over_time({s}[10s:3s] @ start())", "present_over_time({s}[5s] offset -5s)",
    "avg_over_time(({s} > 0)[20s:1s])", "deriv({s}[5s]) * 0", "predict_linear({s}[30s], time())",
    "holt_winters({s}[30s], 0, 0.5)", "holt_winters({s}[30s], NaN, 0.5)", "holt_winters(nonexistent[30s], 0, 0)",
    "resets(-{s}[20s:1s])", "changes(({s} > bool 0)[30s:1s])", "irate({s}[1s])", "idelta({s}[2s])", "increase({s}[1m] @ 0)",
    "{s} @ start() - {s} @ end()", "scalar({s}) * {s}", "vector(time()) - timestamp({s})", "{s} unless {s}", "{s} or {s}",
    "{s} and ignoring(instance) {s}", "{s} or on() vector(1)", "vector(1) or vector(2)", "{s} * on(instance, job) group_left() {s}",
    "{s} / ignoring(nolabel) group_right(job) {s}", "sum({s}) + sum({s})", "-sum(-{s})", "- -{s}", "-(-1)", "- - 1",
]
AGG = ["sum", "avg", "min", "max", "count", "group", "stddev", "stdvar"]
ARITH = ["+", "-", "*", "/", "%", "^", "atan2"]
CMP = ["==", "!=", ">", "<", ">=", "<="]
SETOP = ["and", "or", "unless"]
NUMBERS = ["1", "2", "0.5", "3", "10", "100", "0", "0.25", "1e3", "1E-2", "0x1f", "0X0A", ".5", "5.", "1e+2",
           "010", "09", "Inf", "+Inf", "-Inf", "NaN", "nan", "inf", "1.5", "7", "0.1", "1e-7", "2.5e21"]
RANGES = ["1s", "2s", "3s", "5s", "7s", "10s", "15s", "20s", "30s", "1m", "1m30s", "2500ms", "1h", "45s", "4s"]
SUBQ = ["[10s:1s]", "[20s:2s]", "[30s:3s]", "[15s:]", "[1m:5s]", "[9s:1500ms]", "[20s:4s]", "[1m:10s]", "[30s:7s]"]


class Gen:
    def __init__(self, rng, t0, t1):
        self.r, self.t0, self.t1 = rng, t0, t1
        self.fam = rng.choice(list(FAMILIES))

    def p(self, x):
        return self.r.random() < x

    def ch(self, xs):
        return self.r.choice(xs)

    def kw(self, w):
        """Keywords are case-insensitive in PromQL."""
        return w.upper() if self.p(0.05) else w

    # -- leaves --------------------------------------------------------------------------------
    def number(self):
        return self.ch(NUMBERS)

    def at(self):
        r = self.r.random()
        if r < 0.3:
            return "@ start()"
        if r < 0.55:
            return "@ end()"
        t = self.t0 + self.r.randint(5, max(6, self.t1 - self.t0 + 10))
        if self.p(0.3):
            return f"@ {t}.{self.r.randint(0, 999):03d}"
        return f"@ {t}"

    def offset(self):
        return f"{self.kw('offset')} " + self.ch(["5s", "1s", "10s", "-3s", "-10s", "1500ms", "0s", "1m", "1h30m", "2s", "-1m"])

    def modifiers(self):
        mods = []
        if self.p(0.15):
            mods.append(self.offset())
        if self.p(0.12):
            mods.append(self.at())
        if len(mods) == 2 and self.p(0.5):
            mods.reverse()
        return (" " + " ".join(mods)) if mods else ""

    def matcher(self, fam):
        labels = FAMILIES[fam]["labels"]
        r = self.r.random()
        if r < 0.12:
            return self.ch(['instance=~"127.0.0.1:.*"', 'instance!~"x.*"', 'nolabel=""', 'nolabel!=""', 'job=~""',
                            'instance=~".+"', 'job!~"demo.*"', 'job=~"(?i)NODE|prom.*"', 'job=~"demo[0-9]"'])
        name = self.ch(list(labels))
        vals = labels[name]
        op = self.ch(["=", "=", "!=", "=~", "!~"])
        if op in ("=", "!="):
            v = self.ch(vals)
        else:
            k = self.r.random()
            if k < 0.4:
                v = "|".join(self.r.sample(vals, min(len(vals), self.r.randint(1, 3))))
            elif k < 0.6:
                v = self.ch(vals)[:2] + ".*"
            else:
                v = self.ch([".*", ".+", "", "a|", "[a-z]+", "\\\\d+", "(.*)", ".*e.*", "[^x]*"])
        return f'{name}{op}"{v}"'

    def selector(self, fam=None, name=True):
        fam = fam or self.fam
        metric = self.ch(FAMILIES[fam]["metrics"])
        r = self.r.random()
        ms = [self.matcher(fam) for _ in range(self.ch([0, 0, 1, 1, 2]))]
        if r < 0.08:
            ms = [f'__name__="{metric}"'] + ms
            return "{" + ", ".join(ms) + "}"
        if r < 0.12:
            return '{__name__=~"' + metric[:6] + '.*"' + "".join(", " + m for m in ms) + "}"
        if r < 0.14 and ms:
            return "{" + ", ".join(ms + ['job=~"demo.*"']) + "}"
        if not ms:
            return metric + ("{}" if self.p(0.05) else "")
        return metric + "{" + ", ".join(ms) + ("," if self.p(0.05) else "") + "}"

    def counter_selector(self):
        fams = [f for f in FAMILIES if FAMILIES[f].get("counter")]
        fam = self.fam if self.fam in fams and self.p(0.7) else self.ch(fams)
        return self.selector(fam)

    # -- typed generators ----------------------------------------------------------------------
    def matrix(self, d):
        r = self.r.random()
        if r < 0.7 or d <= 0:
            sel = self.counter_selector() if self.p(0.5) else self.selector()
            return f"{sel}[{self.ch(RANGES)}]" + self.modifiers()
        inner = self.vector(d - 1)
        if not inner.endswith(")") or self.p(0.3):
            inner = f"({inner})"
        return f"{inner}{self.ch(SUBQ)}" + self.modifiers()

    def scalar(self, d):
        r = self.r.random()
        if d <= 0 or r < 0.45:
            n = self.number()
            return n
        if r < 0.55:
            return self.ch(["time()", "pi()"])
        if r < 0.72:
            return f"scalar({self.vector(d - 1)})"
        if r < 0.85:
            op = self.ch(ARITH[:-1] + ["atan2"] + [c + " bool" for c in CMP])
            return f"{self.scalar(d - 1)} {op} {self.scalar(d - 1)}"
        if r < 0.93:
            return f"-{self.scalar(d - 1)}"
        return f"({self.scalar(d - 1)})"

    def grouping(self, fam=None):
        labels = list(FAMILIES[fam or self.fam]["labels"]) + ["job", "instance", "nolabel", "__name__", "le"]
        ls = self.r.sample(labels, self.ch([0, 1, 1, 2, 3]))
        return f"{self.kw(self.ch(['by', 'by', 'without']))} ({', '.join(ls)})"

    def aggregation(self, d):
        op = self.ch(AGG + ["topk", "bottomk", "quantile", "count_values"])
        inner = self.vector(d - 1)
        param = ""
        if op in ("topk", "bottomk"):
            param = self.ch(["1", "2", "3", "5", "0", "-1", "1.5", "NaN", "scalar(vector(2))", "1e3"]) + ", "
        elif op == "quantile":
            param = self.ch(["0.5", "0.9", "0", "1", "-0.5", "1.5", "NaN", "0.99", "0.25"]) + ", "
        elif op == "count_values":
            param = self.ch(['"value"', '"job"', '"le"', '"v"', '"mode"', '"__name__"']) + ", "
        grp = self.grouping() if self.p(0.6) else ""
        op = self.kw(op)
        if grp and self.p(0.3):
            return f"{op}({param}{inner}) {grp}"
        return f"{op} {grp} ({param}{inner})" if grp else f"{op}({param}{inner})"

    def matching(self, set_op=False):
        if not self.p(0.4):
            return ""
        labels = list(FAMILIES[self.fam]["labels"]) + ["job", "instance", "nolabel"]
        on = self.kw(self.ch(["on", "ignoring"]))
        s = f" {on}({', '.join(self.r.sample(labels, self.ch([0, 1, 1, 2])))})"
        if not set_op and self.p(0.35):
            g = self.ch(["group_left", "group_right"])
            extra = self.r.sample(labels, self.ch([0, 0, 1]))
            s += f" {g}" + (f"({', '.join(extra)})" if extra or self.p(0.3) else "")
        return s

    def binary(self, d):
        r = self.r.random()
        if r < 0.3:  # vector op scalar / scalar op vector
            op = self.ch(ARITH + CMP + [c + " bool" for c in CMP])
            v, s = self.vector(d - 1), self.scalar(d - 1)
            return f"{v} {op} {s}" if self.p(0.6) else f"{s} {op} {v}"
        if r < 0.45:
            op = self.kw(self.ch(SETOP))
            return f"{self.vector(d - 1)} {op}{self.matching(True)} {self.vector(d - 1)}"
        op = self.ch(ARITH + CMP + [c + " bool" for c in CMP])
        lhs, rhs = self.vector(d - 1), self.vector(d - 1)
        if self.p(0.25):  # precedence: a third operand, no brackets
            op2 = self.ch(ARITH + CMP + ["and", "or", "unless"])
            return f"{lhs} {op} {rhs} {op2} {self.vector(d - 1) if self.p(0.5) else self.scalar(0)}"
        return f"{lhs} {op}{self.matching()} {rhs}"

    def call(self, d):
        r = self.r.random()
        v = lambda: self.vector(d - 1)
        s = lambda: self.scalar(d - 1)
        if r < 0.28:
            fn = self.ch(RANGE_FN)
            return f"{fn}({self.matrix(d - 1)})"
        if r < 0.34:
            k = self.ch(["quantile_over_time", "predict_linear", "holt_winters"])
            if k == "quantile_over_time":
                return f"quantile_over_time({self.ch(['0.5', '0.9', '0', '1', '1.5', '-1', 'NaN'])}, {self.matrix(d - 1)})"
            if k == "predict_linear":
                return f"predict_linear({self.matrix(d - 1)}, {self.ch(['60', '0', '-30', '3600', '1.5'])})"
            return f"holt_winters({self.matrix(d - 1)}, {self.ch(['0.5', '0.1', '0.9', '1', '0'])}, {self.ch(['0.5', '0.3', '0.8'])})"
        if r < 0.44:
            return f"{self.ch(MATH)}({v()})"
        if r < 0.48:
            return f"round({v()}" + (f", {self.ch(['0.1', '5', '0.001', '10', '-1', '0', '0.3'])})" if self.p(0.6) else ")")
        if r < 0.53:
            k = self.ch(["clamp", "clamp_min", "clamp_max"])
            if k == "clamp":
                return f"clamp({v()}, {self.ch(['0', '0.5', '-1', 'NaN', '10'])}, {self.ch(['1', '0.2', '100', 'NaN', '-Inf'])})"
            return f"{k}({v()}, {self.ch(['0', '0.5', '1e3', 'NaN', '-1'])})"
        if r < 0.57:
            return f"{self.ch(DATE)}({v() if self.p(0.6) else ''})"
        if r < 0.61:
            return f"timestamp({v()})"
        if r < 0.65:
            return f"{self.ch(['sort', 'sort_desc'])}({v()})"
        if r < 0.69:
            return f"{self.ch(['absent', 'absent'])}({self.selector() if self.p(0.6) else v()})"
        if r < 0.74:
            dst = self.ch(['"new"', '"job"', '"__name__"', '"le"', '"instance"', '"x_y"', '"1bad"'])
            repl = self.ch(['"$1"', '"${1}-x"', '"x"', '""', '"$2$1"', '"$name"', '"${2}"'])
            src = self.ch(['"job"', '"instance"', '"mode"', '"__name__"', '"nolabel"', '"le"'])
            rx = self.ch(['"(.*)"', '"(.*):(.*)"', '"(.+)"', '"(d)emo(.*)"', '""', '".*(e).*"', '"(?P<name>.)(.*)"', '"("'])
            return f"label_replace({v()}, {dst}, {repl}, {src}, {rx})"
        if r < 0.78:
            dst = self.ch(['"new"', '"job"', '"__name__"', '"x"'])
            sep = self.ch(['"-"', '""', '","'])
            srcs = self.r.sample(['"job"', '"instance"', '"mode"', '"__name__"', '"nolabel"', '"le"'], self.ch([0, 1, 2, 3]))
            return f"label_join({v()}, {dst}, {sep}{''.join(', ' + x for x in srcs)})"
        if r < 0.86:
            fam = self.ch(list(HIST))
            b = HIST[fam]
            ms = f'{{{self.matcher(fam)}}}' if self.p(0.3) else ""
            q = self.ch(["0.5", "0.9", "0.99", "0", "1", "-1", "1.5", "NaN", "0.25"])
            inner = self.ch([f"rate({b}{ms}[{self.ch(RANGES)}])", f"sum by (le) (rate({b}{ms}[{self.ch(RANGES)}]))",
                             f"{b}{ms}", f"sum by (le, job) (increase({b}{ms}[20s]))", f"sum without (le) ({b}{ms})",
                             f"max by (le, method) (irate({b}{ms}[10s]))"])
            return f"histogram_quantile({q}, {inner})"
        if r < 0.90:
            return f"vector({s()})"
        if r < 0.92:
            return f"{self.ch(['histogram_count', 'histogram_sum'])}({v()})"
        if r < 0.94:
            return f"histogram_fraction(0, 0.1, {v()})"
        return self.ch(NOT_242).format(m=self.selector(), v=v())

    def vector(self, d):
        r = self.r.random()
        if d <= 0 or r < 0.22:
            return self.selector() + self.modifiers()
        if r < 0.5:
            return self.call(d)
        if r < 0.66:
            return self.aggregation(d)
        if r < 0.86:
            return self.binary(d)
        if r < 0.91:
            return f"-{self.vector(d - 1)}" if self.p(0.8) else f"+{self.vector(d - 1)}"
        return f"({self.vector(d - 1)})"

    def top(self):
        if self.p(0.12):
            return self.ch(PROBES).replace("{s}", self.selector()).replace("{v}", self.vector(1))
        r = self.r.random()
        d = self.ch([1, 2, 2, 3, 3, 4])
        if r < 0.8:
            e = self.vector(d)
        elif r < 0.9:
            e = self.scalar(d)
        elif r < 0.95:
            e = self.matrix(d - 1)  # an instant query answers a matrix; a range query refuses it
        elif r < 0.97:
            e = self.ch(['"a string"', "'x'", "`raw`"])
        else:  # malformed: both must refuse it the same way
            e = self.vector(d)
            e = self.ch([e + " +", e[:-1] if len(e) > 2 else e, e + ")", "sum(" + e, e + " offset", e + "[5]", e + "[5m] [1m]",
                         "1 > 2", "up[0s]", "rate(" + e + ")", "sum(" + self.matrix(0) + ")"])
        if self.p(0.03):
            e = e.replace(" ", "\n  ", 1) + " # comment"
        return e


# ---------------------------------------------------------------------------------------------
def call(base, path, params):
    try:
        return promhttp.call(base, path, params, raw_max=200)
    except Exception as e:  # a connection error or a timeout: reported as a difference
        return 0, {"error": repr(e)}


def same(a, b):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b)) or abs(a - b) < 1e-300


def key(s):
    return sorted(s["metric"].items())


def ordered(expr):
    """Whether Prometheus defines the order of the expression's instant result: sort, sort_desc,
    and topk/bottomk without grouping (outermost)."""
    e = expr.strip()
    while e.startswith("(") and e.endswith(")") and balanced(e[1:-1]):
        e = e[1:-1].strip()
    m = re.match(r"(sort|sort_desc|topk|bottomk)\s*\(", e, re.I)
    if not m or not balanced_call(e, m.end() - 1):
        return False
    if m.group(1).lower() in ("topk", "bottomk"):
        return not re.search(r"\)\s*(by|without)\s*\(", e, re.I)
    return True


def balanced(s):
    d = 0
    for c in s:
        d += c in "([{"
        d -= c in ")]}"
        if d < 0:
            return False
    return d == 0


def balanced_call(e, open_at):
    """The call opened at open_at closes at the end of e."""
    d = 0
    for i in range(open_at, len(e)):
        d += e[i] in "([{"
        d -= e[i] in ")]}"
        if d == 0:
            return e[i + 1:].strip() == "" or re.fullmatch(r"\s*(by|without)\s*\([^)]*\)\s*", e[i + 1:], re.I) is not None
    return False


def diff_values(x, y, what):
    if x[0] != y[0]:
        return f"{what}: timestamp {x[0]} vs {y[0]}"
    a, b = float(x[1]), float(y[1])
    if not same(a, b):
        return f"{what}: value {x[1]} vs {y[1]}"
    # The same float must be written the same way (Go's strconv: `1e+21`, `-0`, `+Inf`).
    if (a == b or (math.isnan(a) and math.isnan(b))) and math.copysign(1, a) == math.copysign(1, b) and x[1] != y[1]:
        return f"{what}: value written {x[1]!r} vs {y[1]!r}"
    return None


def diff_result(kind, a, b, order):
    if kind in ("scalar", "string"):
        if kind == "string":
            return None if a == b else f"{a} vs {b}"
        return diff_values(a, b, "scalar")
    if kind == "vector" and order:
        # Values in the same order; among equal values any order.
        va, vb = [float(s["value"][1]) for s in a], [float(s["value"][1]) for s in b]
        if len(va) != len(vb) or not all(same(p, q) for p, q in zip(va, vb)):
            return f"ordered values {[s['value'][1] for s in a][:6]} vs {[s['value'][1] for s in b][:6]}"
    xs, ys = sorted(a, key=key), sorted(b, key=key)
    if [s["metric"] for s in xs] != [s["metric"] for s in ys]:
        ma, mb = [s["metric"] for s in xs], [s["metric"] for s in ys]
        only_a = [m for m in ma if m not in mb][:2]
        only_b = [m for m in mb if m not in ma][:2]
        return f"series differ ({len(xs)} vs {len(ys)}): tsgate only {only_a}, prometheus only {only_b}"
    for s, t in zip(xs, ys):
        if kind == "vector":
            d = diff_values(s["value"], t["value"], str(s["metric"]))
        else:
            pa, pb = s["values"], t["values"]
            if [p[0] for p in pa] != [p[0] for p in pb]:
                return f"{s['metric']}: timestamps ({len(pa)} vs {len(pb)}) {[p[0] for p in pa][:4]} vs {[p[0] for p in pb][:4]}"
            d = next((e for e in (diff_values(p, q, str(s["metric"])) for p, q in zip(pa, pb)) if e), None)
        if d:
            return d
    return None


def values_by_time(kind, result):
    """Each timestamp's values, sorted (NaN as a string so that it sorts and compares)."""
    out = {}
    for s in result:
        for t, v in ([s["value"]] if kind == "vector" else s["values"]):
            out.setdefault(t, []).append(v if v == "NaN" else float(v))
    return {t: sorted(vs, key=lambda v: (isinstance(v, str), v if not isinstance(v, str) else 0)) for t, vs in out.items()}


def compare(ts, ref, path, params, order):
    c1, a = call(ts, path, params)
    c2, b = call(ref, path, params)
    if b.get("warnings"):
        return f"reference warned (remote read failed?): {b['warnings']}"
    if c1 != c2 or a.get("errorType") != b.get("errorType"):
        return f"status {c1} {a.get('errorType')} {a.get('error', '')!r} vs {c2} {b.get('errorType')} {b.get('error', '')!r}"
    if c1 != 200:
        return None
    ka, kb = a["data"]["resultType"], b["data"]["resultType"]
    if ka != kb:
        return f"resultType {ka} vs {kb}"
    d = diff_result(ka, a["data"]["result"], b["data"]["result"], order and path.endswith("/query"))
    # Which of equal values topk/bottomk keep depends on their input's order, which 2.42 leaves
    # to a Go map's iteration inside range evaluations (subqueries): ties are equal answers.
    if d and ka in ("vector", "matrix") and re.search(r"\b(topk|bottomk)\b", params["query"], re.I):
        va, vb = values_by_time(ka, a["data"]["result"]), values_by_time(ka, b["data"]["result"])
        if va.keys() == vb.keys() and all(len(va[t]) == len(vb[t]) and all(
                x == y if isinstance(x, str) or isinstance(y, str) else same(x, y) for x, y in zip(va[t], vb[t])) for t in va):
            return None
    return d


def main():
    args = sys.argv[1:]
    opts = {"--count": "300", "--seed": "1", "--only": ""}
    verbose = "-v" in args
    args = [a for a in args if a != "-v"]
    pos = []
    i = 0
    while i < len(args):
        if args[i] in opts:
            opts[args[i]] = args[i + 1]
            i += 2
        else:
            pos.append(args[i])
            i += 1
    ts, ref, t0, t1 = pos[0], pos[1], int(pos[2]), int(pos[3])
    seed, count = opts["--seed"], int(opts["--count"])
    only = [int(x) for x in opts["--only"].split(",") if x]
    began = time.time()
    equal = skipped = failed = 0
    for i in (only or range(count)):
        rng = random.Random(f"{seed}:{i}")
        expr = Gen(rng, t0, t1).top()
        # Query times: the window where the sender's data is, fractional now and then.
        start = t0 + rng.randint(8, 25) + (rng.randint(0, 999) / 1000 if rng.random() < 0.2 else 0)
        end = start + rng.choice([0, 4, 10, 16, 24])
        step = rng.choice(["1", "2", "3", "5", "0.5", "1.5", "7"])
        at = t0 + rng.randint(3, max(4, t1 - t0 + 8)) + (rng.randint(0, 999) / 1000 if rng.random() < 0.3 else 0)
        order = ordered(expr)
        problems = []
        for path, params in (("/api/v1/query_range", {"query": expr, "start": start, "end": end, "step": step}),
                             ("/api/v1/query", {"query": expr, "time": at})):
            d = compare(ts, ref, path, params, order)
            if d:
                problems.append(f"{path.rsplit('/', 1)[1]} {params}: {d}")
        if not problems:
            equal += 1
            if verbose:
                print(f"ok   #{i} {expr}")
            continue
        why = next((r for p, d, r in SKIP if re.search(p, expr) and all(re.search(d, x) for x in problems)), None)
        if why:
            skipped += 1
            if verbose:
                print(f"skip #{i} {expr}: {why}")
            continue
        failed += 1
        print(f"DIFF #{i} {expr!r}\n     " + "\n     ".join(problems), flush=True)
    n = len(only) if only else count
    print(f"random compare: {equal}/{n} expressions equal ({skipped} skipped, {failed} differ, seed {seed}, {time.time() - began:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
