"""The real client libraries against a running tsgate: InfluxData's `influxdb-client` (2.x write
API, gzip and not, several precisions), a Telegraf-style 1.x `/write` body, and the
OpenTelemetry Python SDK's OTLP/HTTP metric exporter (protobuf, gzip). Every point is then read
back through PromQL, OpenTSDB's /api/query and graphite-web's /render under the documented
names, and bad payloads must get 400 with the reason while the rest is kept.
Prints one `ok`/`FAIL` line per check and a cargo-style `test result:` line; exits 1 on failure.
usage: python3 clients.py http://127.0.0.1:PORT
"""
import gzip
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

base = sys.argv[1]
passed = failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name}: {detail}")


def http(method, path, body=None, headers=None):
    req = urllib.request.Request(base + path, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def promql(q, t, want=1):
    """Instant query at t, retried until `want` series answer (the flush is asynchronous)."""
    deadline = time.time() + 20
    while True:
        code, body = http("GET", "/api/v1/query?" + urllib.parse.urlencode({"query": q, "time": t}))
        res = json.loads(body)["data"]["result"] if code == 200 else []
        if len(res) >= want or time.time() > deadline:
            return res
        time.sleep(0.2)


def opentsdb(m, t):
    q = urllib.parse.urlencode({"start": t - 1, "end": t + 1, "m": m})
    code, body = http("GET", "/api/query?" + q)
    return json.loads(body) if code == 200 else []


def render(target, t):
    """graphite-web's JSON for target around t, retried until a series answers."""
    q = urllib.parse.urlencode({"target": target, "from": t - 600, "until": t + 60, "format": "json"})
    deadline = time.time() + 20
    while True:
        code, body = http("GET", "/render?" + q)
        res = json.loads(body) if code == 200 else []
        if res or time.time() > deadline:
            return res
        time.sleep(0.2)


def labels(series):
    return {k: v for k, v in series["metric"].items()}


t = int(time.time()) - 60

# --- influxdb-client: the 2.x write API --------------------------------------------------------
from influxdb_client import InfluxDBClient, Point, WritePrecision
from influxdb_client.client.write_api import SYNCHRONOUS
from influxdb_client.rest import ApiException

for gz in (False, True):
    with InfluxDBClient(url=base, token="unused", org="org", enable_gzip=gz) as client:
        w = client.write_api(write_options=SYNCHRONOUS)
        host = f"gz{int(gz)}"
        w.write("bucket", record=Point("weather").tag("host", host).tag("city", "São Paulo")
                .field("temp", 21.5).field("humidity", 40).field("note", "sunny")
                .time(t, WritePrecision.S), write_precision=WritePrecision.S)
        w.write("bucket", record=Point("weather").tag("host", host).field("temp", 22.25)
                .time(t * 1000 + 1000, WritePrecision.MS), write_precision=WritePrecision.MS)
        w.write("bucket", record=f"weather,host={host} pressure=1013.5 {(t + 2) * 10**9}")

r = promql('weather_temp{host="gz1"}', t)
check("influxdb-client: weather_temp labels", r and labels(r[0]) ==
      {"__name__": "weather_temp", "host": "gz1", "city": "São Paulo"}, r)
check("influxdb-client: weather_temp value", r and r[0]["value"][1] == "21.5", r)
r = promql('weather_temp{host="gz0",city=""}', t + 1)
check("influxdb-client: ms precision point", r and r[0]["value"][1] == "22.25", r)
r = promql('weather_humidity{host="gz0"}', t)
check("influxdb-client: integer field", r and r[0]["value"][1] == "40", r)
r = promql('weather_pressure{host="gz1"}', t + 2)
check("influxdb-client: ns line protocol", r and r[0]["value"][1] == "1013.5", r)
check("influxdb-client: string field not stored", promql("weather_note", t, want=0) == [])
o = opentsdb("sum:weather_temp{host=gz0}", t)
check("influxdb-client: /api/query", o and o[0]["dps"].get(str(t)) == 21.5, o)
g = render("seriesByTag('name=weather_humidity','host=gz1')", t)
check("influxdb-client: /render seriesByTag",
      g and any(p[0] == 40 for p in g[0]["datapoints"]), g)

# A bad line among good ones: 400 in 2.x's shape, the good line kept.
with InfluxDBClient(url=base, token="unused", org="org") as client:
    w = client.write_api(write_options=SYNCHRONOUS)
    try:
        w.write("bucket", record=[f"partial,host=a v=7 {t}", "partial,host=a v=oops"],
                write_precision=WritePrecision.S)
        check("influxdb-client: bad line refused", False, "no exception")
    except ApiException as e:
        body = json.loads(e.body)
        check("influxdb-client: bad line refused", e.status == 400 and body.get("code") == "invalid"
              and "unable to parse 'partial,host=a v=oops'" in body.get("message", ""), (e.status, e.body))
r = promql('partial_v', t)
check("influxdb-client: good line of a partial write kept", r and r[0]["value"][1] == "7", r)

# --- Telegraf's 1.x output: /write?db=telegraf, gzip -------------------------------------------
body = (f"cpu,cpu=cpu-total,host=tg usage_idle=97.5,usage_user=1.25 {t}000000000\n"
        f"system,host=tg load1=0.5,n_cpus=2i,uptime=12345u {t}000000000\n").encode()
code, resp = http("POST", "/write?db=telegraf", gzip.compress(body), {"Content-Encoding": "gzip"})
check("telegraf 1.x: 204", code == 204, (code, resp))
r = promql('cpu_usage_idle{host="tg"}', t)
check("telegraf 1.x: db label", r and labels(r[0]) ==
      {"__name__": "cpu_usage_idle", "cpu": "cpu-total", "host": "tg", "db": "telegraf"}, r)
r = promql('system_uptime{host="tg"}', t)
check("telegraf 1.x: unsigned field", r and r[0]["value"][1] == "12345", r)
code, resp = http("POST", "/write?precision=fortnight", b"m f=1")
check("telegraf 1.x: bad precision is 400 {error}", code == 400 and "error" in json.loads(resp), (code, resp))

# --- OpenTelemetry SDK, OTLP/HTTP protobuf ----------------------------------------------------
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.metrics import Observation
from opentelemetry.sdk.metrics import Counter, MeterProvider
from opentelemetry.sdk.metrics.export import AggregationTemporality, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource

resource = Resource.create({"service.name": "shop", "service.namespace": "retail",
                            "service.instance.id": "pod-7", "deployment.environment": "test"})


def provider(path, **kw):
    exporter = OTLPMetricExporter(endpoint=base + path, compression=Compression.Gzip, **kw)
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)
    return MeterProvider(resource=resource, metric_readers=[reader]), exporter


mp, _ = provider("/v1/metrics")
meter = mp.get_meter("compat")
orders = meter.create_counter("orders.placed", unit="{order}", description="orders")
orders.add(3, {"payment": "card"})
orders.add(2, {"payment": "card"})
latency = meter.create_histogram("checkout.latency", unit="ms")
for v in (3, 30, 300):
    latency.record(v, {"route": "/pay"})
queue = meter.create_up_down_counter("queue.depth")
queue.add(5)
queue.add(-2)
meter.create_observable_gauge("cpu.utilization", unit="1",
                              callbacks=[lambda _o: [Observation(0.25, {"core": "0"})]])
sent_at = time.time()
check("otel sdk: flush", mp.force_flush(10_000))
mp.shutdown()
now = int(sent_at) + 1
job = {"job": "retail/shop", "instance": "pod-7"}
r = promql("orders_placed_total", now)
check("otel sdk: counter name and labels", r and labels(r[0]) ==
      {"__name__": "orders_placed_total", "payment": "card", **job}, r)
check("otel sdk: counter value", r and r[0]["value"][1] == "5", r)
r = promql('checkout_latency_milliseconds_bucket{le="+Inf"}', now)
check("otel sdk: histogram +Inf bucket", r and r[0]["value"][1] == "3", r)
r = promql('checkout_latency_milliseconds_bucket{le="50"}', now)
check("otel sdk: histogram le=50 bucket (cumulative)", r and r[0]["value"][1] == "2", r)
r = promql("checkout_latency_milliseconds_sum", now)
check("otel sdk: histogram sum", r and r[0]["value"][1] == "333", r)
r = promql("queue_depth", now)
check("otel sdk: up-down counter, no _total", r and r[0]["value"][1] == "3", r)
r = promql("cpu_utilization_ratio", now)
check("otel sdk: gauge of unit 1 gets _ratio", r and r[0]["value"][1] == "0.25", r)
r = promql("target_info", now)
check("otel sdk: target_info", r and labels(r[0]).get("deployment_environment") == "test"
      and labels(r[0]).get("job") == "retail/shop", r)
o = [s for s in (opentsdb("sum:orders_placed_total{job=retail/shop}", now - 1) +
                 opentsdb("sum:orders_placed_total{job=retail/shop}", now)) if s["dps"]]
check("otel sdk: /api/query", o and 5 in o[0]["dps"].values(), o)
g = render("seriesByTag('name=queue_depth')", now)
check("otel sdk: /render seriesByTag", g and any(p[0] == 3 for p in g[0]["datapoints"]), g)

# Delta temporality: refused (partial success), not stored; Prometheus' path.
mp, _ = provider("/api/v1/otlp/v1/metrics", preferred_temporality={Counter: AggregationTemporality.DELTA})
mp.get_meter("compat").create_counter("delta.things").add(1)
mp.force_flush(10_000)
mp.shutdown()
check("otel sdk: delta counter not stored", promql('{__name__=~"delta_things.*"}', int(time.time()), want=0) == [])

# Bad payloads: 400 with the reason.
code, resp = http("POST", "/v1/metrics", b"\x0a\xff\xff", {"Content-Type": "application/x-protobuf"})
check("otlp: undecodable protobuf is 400 with the reason", code == 400 and "cannot decode" in resp, (code, resp))
code, resp = http("POST", "/v1/metrics", b"{", {"Content-Type": "application/json"})
check("otlp: bad JSON is 400 with the reason", code == 400 and "JSON" in resp, (code, resp))

print(f"test result: {'ok' if failed == 0 else 'FAILED'}. {passed} passed; {failed} failed")
sys.exit(1 if failed else 0)
