#!/usr/bin/env bash
# The real InfluxDB and OpenTelemetry client libraries against tsgate on loopback (about 10 s):
# InfluxData's influxdb-client and the OpenTelemetry Python SDK's OTLP/HTTP exporter write, and
# every point is read back through PromQL, /api/query and /render (compat/senders/clients.py).
# Installs the two libraries with pip when they are missing. Ends with a cargo-style
# `test result:` line.
# usage: bash compat/senders/run.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
TSGATE=${TSGATE:-$root/target/release/tsgate}
if ! python3 -c 'import influxdb_client, opentelemetry.sdk, opentelemetry.exporter.otlp.proto.http' 2>/dev/null; then
  python3 -m pip install -q influxdb-client opentelemetry-sdk opentelemetry-exporter-otlp-proto-http \
    || python3 -m pip install -q --break-system-packages influxdb-client opentelemetry-sdk opentelemetry-exporter-otlp-proto-http
fi
. "$root/compat/lib.sh"
TS=$(port)
serve_tsgate
wait_up "http://127.0.0.1:$TS/api/version"
python3 "$here/clients.py" "http://127.0.0.1:$TS" || { cat "$work/tsgate.log" >&2; exit 1; }
