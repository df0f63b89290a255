#!/usr/bin/env bash
# Carbon relays as senders: Debian's carbon-c-relay (plaintext over TCP) and carbon's own
# carbon-relay (graphite-carbon; pickle over TCP, as it sends to a carbon-cache's port 2004) each
# relay a plaintext stream to tsgate, and every point must come back through /render with its
# value and time. Ends with a cargo-style `test result:` line.
# usage: bash compat/relays/run.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
TSGATE=${TSGATE:-$root/target/release/tsgate}
for c in carbon-c-relay carbon-relay; do
  command -v "$c" >/dev/null ||
    { echo "compat/relays: $c is missing (tests/run.sh installs carbon-c-relay and graphite-carbon)" >&2; exit 2; }
done
. "$root/compat/lib.sh"
TS=$(port); GP=$(port); PP=$(port)

cat >"$work/tsgate.toml" <<TOML
data_dir = "$work/tsgate"
[server]
listen = "127.0.0.1:$TS"
graphite_listen = "127.0.0.1:$GP"
pickle_listen = "127.0.0.1:$PP"
[write]
flush_interval_ms = 200
TOML
"$TSGATE" serve --config "$work/tsgate.toml" >"$work/tsgate.log" 2>&1 & pids+=("$!")
wait_up "http://127.0.0.1:$TS/api/version"

wait_port() {  # PORT PID LOG: until something listens on PORT, or the process died
  for _ in $(seq 150); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    kill -0 "$2" 2>/dev/null || { echo "relay exited:"; tail -20 "$3"; exit 1; }
    sleep 0.1
  done
  echo "relay not listening on $1:"; tail -20 "$3"; exit 1
}

# carbon-c-relay: one cluster, tsgate's plaintext port, everything sent there.
CR=$(port)
cat >"$work/c-relay.conf" <<CONF
cluster tsgate forward 127.0.0.1:$GP proto tcp;
match * send to tsgate stop;
CONF
carbon-c-relay -f "$work/c-relay.conf" -p "$CR" -w 2 >"$work/c-relay.log" 2>&1 & cpid=$!; pids+=("$cpid")
wait_port "$CR" "$cpid" "$work/c-relay.log"

# carbon-relay: relay-rules' default rule to one destination, which gets pickle (tsgate's port).
RL=$(port); RP=$(port)
mkdir -p "$work/relay/log"
cat >"$work/relay/carbon.conf" <<CONF
[relay]
STORAGE_DIR = $work/relay/
LOCAL_DATA_DIR = $work/relay/whisper/
LOG_DIR = $work/relay/log/
PID_DIR = $work/relay/
CONF_DIR = $work/relay/
USER =
LINE_RECEIVER_INTERFACE = 127.0.0.1
LINE_RECEIVER_PORT = $RL
PICKLE_RECEIVER_INTERFACE = 127.0.0.1
PICKLE_RECEIVER_PORT = $RP
ENABLE_UDP_LISTENER = False
RELAY_METHOD = rules
DESTINATIONS = 127.0.0.1:$PP
MAX_QUEUE_SIZE = 100000
MAX_DATAPOINTS_PER_MESSAGE = 500
CONF
# carbon's start-up insists on a storage-schemas.conf, even for a relay.
printf '[all]\npattern = .*\nretentions = 10s:1d\n' >"$work/relay/storage-schemas.conf"
cat >"$work/relay/relay-rules.conf" <<CONF
[default]
default = true
destinations = 127.0.0.1:$PP
CONF
carbon-relay --config="$work/relay/carbon.conf" --pidfile="$work/relay/relay.pid" --nodaemon \
  --logdir="$work/relay/log" start >"$work/relay.log" 2>&1 & rpid=$!; pids+=("$rpid")
wait_port "$RL" "$rpid" "$work/relay.log"

timeout 120 python3 - "$TS" "$CR" "$RL" <<'PY'
import json, socket, sys, time, urllib.parse, urllib.request
ts, c_relay, relay = (int(a) for a in sys.argv[1:])
base = (int(time.time()) // 60) * 60 - 1800
N = 300
def value(via, host, i):
    return round(i * 0.5 + host * 100 + (7 if via == "py" else 0), 2)
checks = failed = 0
sent = {}
for via, p in (("c", c_relay), ("py", relay)):
    lines = []
    for host in range(3):
        for i in range(N):
            lines.append("relay.%s.h%d.load %r %d\n" % (via, host, value(via, host, i), base + i * 5))
    with socket.create_connection(("127.0.0.1", p)) as s:
        s.sendall("".join(lines).encode())
    sent[via] = len(lines)
def render(target):
    q = urllib.parse.urlencode({"target": target, "from": base - 10, "until": base + N * 5, "format": "json"})
    with urllib.request.urlopen("http://127.0.0.1:%d/render?%s" % (ts, q), timeout=10) as r:
        return json.loads(r.read())
for via, name in (("c", "carbon-c-relay"), ("py", "carbon-relay (pickle)")):
    got = []
    for _ in range(300):
        got = render("relay.%s.*.load" % via)
        if sum(1 for s in got for v, _ in s["datapoints"] if v is not None) >= sent[via]:
            break
        time.sleep(0.2)
    points = {(s["target"], t): v for s in got for v, t in s["datapoints"] if v is not None}
    want = {("relay.%s.h%d.load" % (via, h), base + i * 5): value(via, h, i) for h in range(3) for i in range(N)}
    checks += 1
    if points == want:
        print("ok       %s: %d points relayed, every value and time as sent" % (name, len(want)))
    else:
        failed += 1
        missing = sorted(set(want) - set(points))[:3]
        wrong = [(k, points[k], want[k]) for k in want if k in points and points[k] != want[k]][:3]
        print("MISMATCH %s: %d of %d points; missing e.g. %s; wrong e.g. %s" % (name, len(points), len(want), missing, wrong))
print("test result: %s. %d passed; %d failed" % ("ok" if failed == 0 else "FAILED", checks - failed, failed))
sys.exit(1 if failed else 0)
PY
