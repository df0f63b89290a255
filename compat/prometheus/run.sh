#!/usr/bin/env bash
# Debian's real Prometheus 2.42 against tsgate, on loopback, in about a minute:
#   sender    scrapes itself and prometheus-node-exporter every 1 s; remote_write to tsgate
#             and to `ref`
#   ref       a Prometheus with --web.enable-remote-write-receiver (same stream: storage check)
#   reader    a Prometheus with no local data and remote_read from tsgate (reference PromQL)
# Then compare.py checks tsgate's /api/v1/query_range against reader and ref for a list of
# queries, that tsgate stored every sample ref stored, and replays Grafana's requests;
# random_compare.py then runs seeded random expressions on tsgate and reader.
# Last, a fourth Prometheus scrapes tsgate's own /metrics (scrape_check.py).
# usage: bash compat/prometheus/run.sh [seconds of scraping, default 40]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-40}
TSGATE=${TSGATE:-$root/target/release/tsgate}
for b in prometheus prometheus-node-exporter python3 curl; do
  command -v "$b" >/dev/null || { echo "compat/prometheus: $b is missing (tests/run.sh installs it)" >&2; exit 2; }
done
. "$root/compat/lib.sh"
TS=$(port); NE=$(port); SEND=$(port); REF=$(port); READ=$(port); IM=$(port); D0=$(port); D1=$(port); D2=$(port)

serve_tsgate
prometheus-node-exporter --web.listen-address=127.0.0.1:$NE >"$work/ne.log" 2>&1 & pids+=($!)
python3 "$here/intermittent.py" "$IM" >"$work/im.log" 2>&1 & pids+=($!)
# Stand-ins for the demo service the PromQL compliance query set reads (compliance.py below).
python3 "$here/demo_service.py" "$D0" "$D1" "$D2" >"$work/demo.log" 2>&1 & pids+=($!)
serve_ref_prometheus
wait_up "http://127.0.0.1:$TS/api/version"; wait_up "http://127.0.0.1:$NE/metrics"; wait_up "http://127.0.0.1:$IM/metrics"; wait_up "http://127.0.0.1:$REF/-/ready"

rw() { cat <<YML
  - url: http://127.0.0.1:$1/api/v1/write
    queue_config: {capacity: 2500, max_samples_per_send: 500, batch_send_deadline: 1s, min_shards: 2, max_shards: 2, min_backoff: 30ms, max_backoff: 1s}
    metadata_config: {send: true, send_interval: 5s}
YML
}
cat >"$work/sender.yml" <<YML
global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1m}
scrape_configs:
  - job_name: prometheus
    static_configs: [{targets: ['127.0.0.1:$SEND']}]
  - job_name: node
    static_configs: [{targets: ['127.0.0.1:$NE']}]
  - job_name: intermittent
    static_configs: [{targets: ['127.0.0.1:$IM']}]
  # One job per demo instance: compare.py's 'up == on(job) group_left(instance) up' needs one
  # 'up' per job. (No backticks here: this is an unquoted heredoc.)
  - job_name: demo0
    static_configs: [{targets: ['127.0.0.1:$D0']}]
  - job_name: demo1
    static_configs: [{targets: ['127.0.0.1:$D1']}]
  - job_name: demo2
    static_configs: [{targets: ['127.0.0.1:$D2']}]
remote_write:
$(rw "$TS")
$(rw "$REF")
YML
run_sender "$secs"

cat >"$work/reader.yml" <<YML
global: {evaluation_interval: 1m}
remote_read:
  - url: http://127.0.0.1:$TS/api/v1/read
    read_recent: true
    remote_timeout: 1m
YML
prometheus --config.file="$work/reader.yml" --storage.tsdb.path="$work/reader" --web.listen-address=127.0.0.1:$READ \
  >"$work/reader.log" 2>&1 & pids+=($!)
wait_up "http://127.0.0.1:$READ/-/ready"
sleep 1
status=0
START_C=$((t0 + 20))
python3 "$here/compare.py" "http://127.0.0.1:$TS" "http://127.0.0.1:$READ" "http://127.0.0.1:$REF" "$t0" "$t1" || status=$?
# Randomised differential: seeded PromQL expressions, range and instant queries, tsgate vs the
# reader (RANDOM_COUNT, RANDOM_SEED to vary; `random_compare.py --only N` replays one).
python3 "$here/random_compare.py" "http://127.0.0.1:$TS" "http://127.0.0.1:$READ" "$t0" "$t1" \
  --count "${RANDOM_COUNT:-300}" --seed "${RANDOM_SEED:-1}" || status=1

# A short variant of the PromQL compliance query set (every 7th of its 539 queries; the whole
# set, against the reference receiver's own storage, is compliance.sh) against the reader (2.42's
# engine on tsgate's data), when the set and python3-yaml are at hand.
queries=${QUERIES:-$work/promql-test-queries.yml}
[ -f "$queries" ] || curl -sfL -o "$queries" https://raw.githubusercontent.com/prometheus/compliance/main/promql/promql-test-queries.yml || true
if [ -f "$queries" ] && python3 -c 'import yaml' 2>/dev/null; then
  demo_queries "$queries" "$work/queries.yml"
  python3 "$here/compliance.py" "$work/queries.yml" "http://127.0.0.1:$TS" "http://127.0.0.1:$READ" \
    "$START_C" "$((t1 - 5))" 2 127.0.0.1 7 || status=1
else
  echo "compat/prometheus: compliance query set skipped (no promql-test-queries.yml or python3-yaml)"
fi

# Migration in: a second tsgate, empty, imports the reference Prometheus' data through its
# remote-read API (`tsgate import --from prometheus`); the same comparison must then hold for it.
IMP=$(port)
cat >"$work/imported.toml" <<TOML
data_dir = "$work/imported"
[server]
listen = "127.0.0.1:$IMP"
graphite_listen = ""
pickle_listen = ""
TOML
if "$TSGATE" import --config "$work/imported.toml" --from prometheus --quiet \
    --url "http://127.0.0.1:$REF" --start $((t0 - 60)) --end $((t1 + 60)) >"$work/import.log" 2>&1; then
  "$TSGATE" serve --config "$work/imported.toml" >"$work/imported.log" 2>&1 & pids+=($!)
  wait_up "http://127.0.0.1:$IMP/api/version"
  echo "compat/prometheus: the same queries on a tsgate that imported the reference Prometheus (remote read)"
  python3 "$here/compare.py" "http://127.0.0.1:$IMP" "http://127.0.0.1:$READ" "http://127.0.0.1:$REF" "$t0" "$t1" imported || status=$?
else
  echo "compat/prometheus: tsgate import --from prometheus failed:"; cat "$work/import.log"; status=1
fi

# tsgate's own /metrics, scraped by the real Prometheus.
SCRAPE=$(port)
cat >"$work/scraper.yml" <<YML
global: {scrape_interval: 500ms, scrape_timeout: 500ms}
scrape_configs:
  - job_name: tsgate
    metrics_path: /metrics
    static_configs: [{targets: ['127.0.0.1:$TS']}]
YML
prometheus --config.file="$work/scraper.yml" --storage.tsdb.path="$work/scraper" --web.listen-address=127.0.0.1:$SCRAPE \
  >"$work/scraper.log" 2>&1 & pids+=($!)
wait_up "http://127.0.0.1:$SCRAPE/-/ready"
python3 "$here/scrape_check.py" "http://127.0.0.1:$TS" "http://127.0.0.1:$SCRAPE" || status=1
if [ $status -ne 0 ]; then tail -n 20 "$work/tsgate.log" "$work/reader.log" "$work/scraper.log" >&2 || true; fi
exit $status
