#!/usr/bin/env bash
# Query benchmark: a 1-hour, 1m-avg downsampled query grouped by dc over the 10,000 series of
# ../shared/bench/gen.py's set, on tsgate (/api/query) and VictoriaMetrics (the equivalent PromQL
# on /api/v1/query_range), both loaded with the same /api/put files, warm, median of REPS runs.
#
# usage: compat/bench/query_vs_vm.sh DATADIR [REPS]     (DATADIR made by gen.py; needs
#        Debian's victoria-metrics and target/release/tsgate)
set -euo pipefail
d=$1; reps=${2:-15}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bench=${SHARED_BENCH:-$root/../shared/bench}
tsgate=${TSGATE:-$root/target/release/tsgate}
meta() { python3 -c "import json;print(json.load(open('$d/meta.json'))['$1'])"; }
start=$(meta start); pts=$(meta points)
tmp=$(mktemp -d)
H=127.0.0.1
victoria-metrics -storageDataPath="$tmp/vm" -retentionPeriod=100y -httpListenAddr=$H:18428 \
  -opentsdbHTTPListenAddr=$H:14243 -search.latencyOffset=0s -loggerLevel=ERROR >"$tmp/vm.log" 2>&1 &
vm=$!
"$tsgate" serve --data-dir "$tmp/ts" --listen $H:14242 --log-level warn >"$tmp/ts.log" 2>&1 &
ts=$!
trap 'kill $vm $ts 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do curl -sf http://$H:18428/health >/dev/null && curl -sf http://$H:14242/api/version >/dev/null && break; sleep 0.2; done
"$bench/post.py" http://$H:14243/api/put 4 Content-Type:application/json -- "$d"/http-*.json
"$bench/post.py" "http://$H:14242/api/put?sync" 4 Content-Type:application/json -- "$d"/http-*.json
curl -s http://$H:18428/internal/force_flush >/dev/null
sleep 2
end=$((start + 3600))
ts_body="{\"start\":$start,\"end\":$end,\"queries\":[{\"metric\":\"cpu.usage_user\",\"aggregator\":\"avg\",\"downsample\":\"1m-avg\",\"tags\":{\"dc\":\"*\"}}]}"
promql='avg by (dc) (avg_over_time({__name__="cpu.usage_user"}[1m]))'
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_ts() { curl -s -o "$tmp/ts.json" -w '%{time_total}\n' -X POST -H 'Content-Type: application/json' --data "$ts_body" http://$H:14242/api/query; }
time_vm() { curl -s -o "$tmp/vm.json" -w '%{time_total}\n' --data-urlencode "query=$promql" --data-urlencode "start=$start" \
              --data-urlencode "end=$((end - 60))" --data-urlencode step=60 --data-urlencode nocache=1 http://$H:18428/api/v1/query_range; }
time_ts >/dev/null; time_vm >/dev/null   # warm
t_ts=$(for _ in $(seq "$reps"); do time_ts; done | median)
t_vm=$(for _ in $(seq "$reps"); do time_vm; done | median)
python3 - "$tmp/ts.json" "$tmp/vm.json" "$t_ts" "$t_vm" <<'PY'
import json, sys
ts = json.load(open(sys.argv[1])); vm = json.load(open(sys.argv[2]))["data"]["result"]
t_ts, t_vm = float(sys.argv[3]), float(sys.argv[4])
print(f"groups: tsgate {len(ts)}, VictoriaMetrics {len(vm)}; points per group: tsgate {len(ts[0]['dps'])}, VictoriaMetrics {len(vm[0]['values'])}")
print(f"1h 1m-avg grouped by dc over 10,000 series, warm median: tsgate {t_ts*1000:.1f} ms, "
      f"VictoriaMetrics {t_vm*1000:.1f} ms, ratio {t_vm/t_ts:.2f}x")
PY
