#!/usr/bin/env bash
# Debian's collectd (write_graphite plugin, carbon plaintext over TCP) against tsgate, on
# loopback, in about 10 s: cpu, memory and load every second, with a private config and
# BaseDir. Checks that the series arrive under collectd's own Graphite names (a name rule maps
# the cpu ones to metric + tags, the rest keep their whole dotted path), and ends with a
# cargo-style `test result:` line.
# usage: bash compat/graphite/run.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
TSGATE=${TSGATE:-$root/target/release/tsgate}
COLLECTD=${COLLECTD:-/usr/sbin/collectd}
[ -x "$COLLECTD" ] || { echo "compat/graphite: collectd is missing (tests/run.sh installs collectd-core)" >&2; exit 2; }
. "$root/compat/lib.sh"
TS=$(port); GP=$(port)
host=tsgatecompat

cat >"$work/tsgate.toml" <<TOML
data_dir = "$work/tsgate"
[server]
listen = "127.0.0.1:$TS"
graphite_listen = "127.0.0.1:$GP"
pickle_listen = ""
[write]
flush_interval_ms = 200
[[graphite.rules]]
name = "collectd-cpu"
match = "collectd.{host}.cpu-{cpu}.cpu-{state}"
metric = "collectd.cpu"
tags = { host = "{host}", cpu = "{cpu}", state = "{state}" }
TOML
"$TSGATE" serve --config "$work/tsgate.toml" >"$work/tsgate.log" 2>&1 & pids+=($!)
wait_up "http://127.0.0.1:$TS/api/version"

mkdir -p "$work/collectd"
cat >"$work/collectd.conf" <<CONF
Hostname "$host"
FQDNLookup false
BaseDir "$work/collectd"
PIDFile "$work/collectd/collectd.pid"
PluginDir "/usr/lib/collectd"
TypesDB "/usr/share/collectd/types.db"
Interval 1
LoadPlugin logfile
<Plugin logfile>
  File "$work/collectd.log"
  LogLevel info
</Plugin>
LoadPlugin cpu
LoadPlugin memory
LoadPlugin load
LoadPlugin write_graphite
<Plugin write_graphite>
  <Node "tsgate">
    Host "127.0.0.1"
    Port "$GP"
    Protocol "tcp"
    Prefix "collectd."
    StoreRates true
    AlwaysAppendDS false
    EscapeCharacter "_"
  </Node>
</Plugin>
CONF
"$COLLECTD" -f -C "$work/collectd.conf" >"$work/collectd.out" 2>&1 & pids+=($!)

# cpu values are rates: the first needs two readings. Poll for up to 15 s.
python3 - "$TS" "$host" <<'PY' || { echo "--- tsgate.log"; tail -20 "$work/tsgate.log"; echo "--- collectd.log"; tail -20 "$work/collectd.log" 2>/dev/null; cat "$work/collectd.out"; exit 1; }
import json, sys, time, urllib.parse, urllib.request
port, host = sys.argv[1], sys.argv[2]
def q(expr):
    u = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    return json.load(urllib.request.urlopen(u, timeout=5))["data"]["result"]
cpu = f'{{__name__="collectd.cpu", host="{host}", cpu="0", state="idle"}}'
deadline = time.time() + 15
passed = failed = 0
pending = {
    "memory (whole dotted path)": f'{{__name__="collectd.{host}.memory.memory-used"}}',
    "load (whole path; a multi-DS type gets the DS name)": f'{{__name__="collectd.{host}.load.load.shortterm"}}',
    "cpu (rule: metric collectd.cpu + host/cpu/state tags)": cpu,
}
while pending and time.time() < deadline:
    for k, e in list(pending.items()):
        if q(e):
            print(f"test collectd {k} ... ok")
            passed += 1
            del pending[k]
    time.sleep(0.5)
for k in pending:
    print(f"test collectd {k} ... FAILED")
    failed += 1
# Nothing collectd sent was left unnamed or refused, and names are collectd's.
names = sorted({r["metric"]["__name__"] for r in q('{__name__=~"collectd.+"}')})
bad = [n for n in names if not (n == "collectd.cpu" or n.startswith(f"collectd.{host}."))]
if bad or not names:
    print(f"test collectd naming ... FAILED {bad or names}")
    failed += 1
else:
    print(f"test collectd naming ... ok ({len(names)} metrics, e.g. {names[:3]})")
    passed += 1
st = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/stats"))
errs = [int(r["value"]) for r in st if r["metric"] == "tsd.graphite.errors" and r["tags"].get("type") == "plaintext"]
if errs != [0]:
    print(f"test collectd no rejected lines ... FAILED {errs}")
    failed += 1
else:
    print("test collectd no rejected lines ... ok")
    passed += 1
print(f"test result: {'ok' if not failed else 'FAILED'}. {passed} passed; {failed} failed; 0 ignored")
sys.exit(1 if failed else 0)
PY
