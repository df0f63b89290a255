#!/usr/bin/env bash
# The PromQL compliance tester's query set, run our way: a Prometheus 2.42 scrapes three
# stand-in demo service instances (demo_service.py) every 2 s and remote-writes to tsgate and to
# a reference Prometheus (--web.enable-remote-write-receiver); then compliance.py runs the 539
# expanded queries as range queries on both and prints `equal/total`.
# usage: bash compat/prometheus/compliance.sh [seconds of scraping, default 240] [every n-th query, default 1]
#   QUERIES=path/to/promql-test-queries.yml (default: fetched from prometheus/compliance on GitHub)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-240}
every=${2:-1}
TSGATE=${TSGATE:-$root/target/release/tsgate}
for b in prometheus python3 curl; do
  command -v "$b" >/dev/null || { echo "compat/prometheus: $b is missing" >&2; exit 2; }
done
python3 -c 'import yaml' 2>/dev/null || { echo "compat/prometheus: python3-yaml is missing" >&2; exit 2; }
. "$root/compat/lib.sh"
queries=${QUERIES:-}
if [ -z "$queries" ]; then
  queries="$work/promql-test-queries.yml"
  curl -sfL -o "$queries" https://raw.githubusercontent.com/prometheus/compliance/main/promql/promql-test-queries.yml
fi
TS=$(port); REF=$(port); SEND=$(port); D0=$(port); D1=$(port); D2=$(port)
serve_tsgate
python3 "$here/demo_service.py" "$D0" "$D1" "$D2" >"$work/demo.log" 2>&1 & pids+=($!)
serve_ref_prometheus
wait_up "http://127.0.0.1:$TS/api/version"; wait_up "http://127.0.0.1:$D0/metrics"; wait_up "http://127.0.0.1:$REF/-/ready"
rw() { cat <<YML
  - url: http://127.0.0.1:$1/api/v1/write
    queue_config: {capacity: 2500, max_samples_per_send: 500, batch_send_deadline: 1s, min_shards: 2, max_shards: 2}
YML
}
cat >"$work/sender.yml" <<YML
global: {scrape_interval: 2s, scrape_timeout: 2s}
scrape_configs:
  - job_name: demo
    static_configs: [{targets: ['127.0.0.1:$D0', '127.0.0.1:$D1', '127.0.0.1:$D2']}]
remote_write:
$(rw "$TS")
$(rw "$REF")
YML
run_sender "$secs"
sleep 1
demo_queries "$queries" "$work/queries.yml"
python3 "$here/compliance.py" "$work/queries.yml" "http://127.0.0.1:$TS" "http://127.0.0.1:$REF" \
  $((t0 + 30)) $((t1 - 10)) 10 127.0.0.1 "$every"
