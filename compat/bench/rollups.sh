#!/usr/bin/env bash
# Rollups benchmark: SERIES series of one metric, DAYS days of a point every STEP seconds.
#
#  1. The history is generated once, as VictoriaMetrics' JSON lines, and streamed at the same
#     time into `tsgate import` (rollups off) and, when $VM runs, into VictoriaMetrics'
#     /api/v1/import: both hold the same raw points.
#  2. `tsgate rollup` builds the rollup cells of that store (timed); the logical bytes (keys,
#     qualifiers, values) of each table and the store's size on disk are reported before
#     (rollups off) and after (on).
#  3. With ON_IMPORT=1 (the default) the same history is imported again into a second store
#     with [rollups] on, so the compactor builds the cells as hours close (timed): its raw table's
#     bytes per raw point against the first store's, and the rollup tables' share of its disk.
#  4. A 1-day-step query over the whole window and every series, warm, median of REPS runs:
#     /api/query `none:1d-avg` from raw data (`rollup_raw`) and from the rollups; PromQL
#     `avg_over_time({__name__="bench.m"}[1d])` at a 1 d step from raw data and with
#     `max_source_resolution=1d`; and VictoriaMetrics' time for the same PromQL on its raw
#     data. The answers are compared (tsgate raw vs rollup, tsgate vs VictoriaMetrics).
#
# usage: compat/bench/rollups.sh [SERIES] [DAYS] [STEP] [REPS]   (defaults 1000 365 10 5: the
#        issue's shape; needs target/release/tsgate or $TSGATE)
# env:   TSGATE (binary), VM (victoria-metrics binary; default Debian's `victoria-metrics`,
#        VM=none skips it), ON_IMPORT (0 skips step 3), PORT, VM_PORT, KEEP=1 (keep the stores
#        and answers in the temporary directory it prints, e.g. to profile a query), REUSE=DIR
#        (a directory KEEP=1 or an interrupted run left, same arguments: step 1 is skipped, its
#        stores are used as they are, and it is kept).
# Everything but the timed queries runs under `nice -n 19`.
set -euo pipefail
series=${1:-1000}; days=${2:-365}; step=${3:-10}; reps=${4:-5}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tsgate=${TSGATE:-$root/target/release/tsgate}
vm=${VM:-victoria-metrics}
on_import=${ON_IMPORT:-1}
tmp=${REUSE:-$(mktemp -d)}
H=127.0.0.1; P=${PORT:-14342}; VP=${VM_PORT:-18428}
if [ $((86400 % step)) -ne 0 ] || [ "$step" -le 5 ]; then
  echo "STEP must divide a day and exceed 5 s" >&2; exit 2
fi
cleanup() {
  [ -n "${srv:-}" ] && kill "$srv" 2>/dev/null
  [ -n "${vmpid:-}" ] && kill "$vmpid" 2>/dev/null
  wait 2>/dev/null
  if [ "${KEEP:-0}" = 1 ] || [ -n "${REUSE:-}" ]; then echo "kept: $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
now=$(date +%s)
end=$((now / 86400 * 86400))          # today 00:00 UTC (exclusive)
start=$((end - days * 86400))
points=$((series * days * 86400 / step))
# /api/query's raw read counts every point against query.max_points (315 M for 100 series,
# 3.15 G for 1,000; 50 M by default), so it is raised to twice the points, and
# prometheus.max_samples with it (PromQL reads the steps in slices, a day at a time here, and
# needs no more than its default). VictoriaMetrics is started with 1e11 below.
limit=$(( points * 2 > 1000000000 ? points * 2 : 1000000000 ))
printf '[rollups]\nenabled = true\n[prometheus]\nmax_samples = %s\n[query]\ntimeout_ms = 3600000\nmax_points = %s\n' "$limit" "$limit" > "$tmp/rollups.toml"
printf '[rollups]\nenabled = true\n\n[write]\ncompaction_delay_ms = 200\n' > "$tmp/rollups_on_import.toml"
: > "$tmp/plain.toml"
echo "data: $series series x $days days every $step s = $points points"
secs() { python3 -c "print(f'{$2 - $1:.1f}')"; }

if [ "$vm" != none ] && command -v "$vm" >/dev/null; then
  nice -n 19 "$vm" -storageDataPath "$tmp/vm" -httpListenAddr "$H:$VP" -retentionPeriod 100y \
    -search.disableCache -search.maxSamplesPerQuery 100000000000 \
    -search.maxSamplesPerSeries 100000000 -search.maxQueryDuration 1h \
    -search.maxPointsPerTimeseries 100000 -loggerLevel WARN >"$tmp/vm.log" 2>&1 &
  vmpid=$!
  for _ in $(seq 300); do curl -sf "http://$H:$VP/health" >/dev/null && break; sleep 0.2; done
  curl -sf "http://$H:$VP/health" >/dev/null || { echo "victoria-metrics did not start" >&2; cat "$tmp/vm.log" >&2; exit 1; }
else
  vm=none
  echo "VictoriaMetrics: not run (VM=$vm; Debian package victoria-metrics)"
fi

# One JSON line per series and day. 5 s past each step: no point on a day's boundary, which
# PromQL's closed windows would count in two days (the raw answer would then differ from the
# rollup's by construction). A value is (t / STEP * 7 + series) % 100: a day's values are one
# of 100 rotations, so each is built once.
generate() {
  nice -n 19 python3 - "$series" "$start" "$end" "$step" <<'PY'
import sys
n, start, end, step = (int(x) for x in sys.argv[1:])
out = sys.stdout
for day in range(start, end, 86400):
    ts = range(day + 5, day + 86400, step)
    stamps = ",".join(str(t * 1000) for t in ts)
    k0 = (day + 5) // step
    rot = {}
    for i in range(n):
        r = (k0 * 7 + i) % 100
        vals = rot.get(r)
        if vals is None:
            vals = rot[r] = ",".join(str((r + 7 * j) % 100) for j in range(len(ts)))
        out.write(f'{{"metric":{{"__name__":"bench.m","host":"h{i:04d}"}},"values":[{vals}],"timestamps":[{stamps}]}}\n')
PY
}
import_into() { # data-dir config
  nice -n 19 "$tsgate" import --quiet --from vm --data-dir "$1" --config "$2" /dev/stdin
}

t0=$(date +%s.%N)
if [ -n "${REUSE:-}" ]; then
  echo "generate + import: skipped (REUSE=$REUSE)"
elif [ "$vm" != none ]; then
  mkfifo "$tmp/vm.fifo"
  curl -sf -X POST -T - "http://$H:$VP/api/v1/import" <"$tmp/vm.fifo" >"$tmp/vm_import.log" &
  cpid=$!
  generate | tee "$tmp/vm.fifo" | import_into "$tmp/data" "$tmp/plain.toml"
  wait "$cpid"
  echo "generate + import (rollups off; VictoriaMetrics's import in parallel): $(secs "$t0" "$(date +%s.%N)") s"
else
  generate | import_into "$tmp/data" "$tmp/plain.toml"
  echo "generate + import (rollups off): $(secs "$t0" "$(date +%s.%N)") s"
fi
if [ "$vm" != none ]; then
  curl -sf "http://$H:$VP/internal/force_flush" >/dev/null || true
  got=0
  for _ in $(seq 300); do
    got=$(curl -s "http://$H:$VP/api/v1/query" --data-urlencode "query=sum(count_over_time({__name__=\"bench.m\"}[$((days + 1))d]))" \
      --data-urlencode "time=$end" | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')
    [ "$got" = "$points" ] && break; sleep 1
  done
  echo "VictoriaMetrics holds $got samples (expected $points)"
  vm_disk=$(du -sb "$tmp/vm" | cut -f1)
fi

du_store() { du -sb "$1/store" | cut -f1; }
table_bytes() { # data-dir table
  nice -n 19 "$tsgate" scan --data-dir "$1" --config "$tmp/rollups.toml" --table "$2" \
    | awk '{q=$3; sub(/^[^:]*:/, "", q); b += (length($2) + length(q) + length($4)) / 2} END {printf "%.0f", b}'
}
raw_b=$(table_bytes "$tmp/data" tsdb)   # also opens and closes the store once, as after the backfill
before=$(du_store "$tmp/data")
t0=$(date +%s.%N)
nice -n 19 "$tsgate" rollup --quiet --data-dir "$tmp/data" --config "$tmp/rollups.toml" --start "$start" --end "$end"
t1=$(date +%s.%N)
echo "backfill (tsgate rollup): $(secs "$t0" "$t1") s"
raw_after=$(table_bytes "$tmp/data" tsdb)
h_b=$(table_bytes "$tmp/data" tsdb-rollup-1h); d_b=$(table_bytes "$tmp/data" tsdb-rollup-1d)
after=$(du_store "$tmp/data")
python3 - "$raw_b" "$raw_after" "$h_b" "$d_b" "$before" "$after" "$points" <<'PY'
import sys
raw, raw2, h, d, before, after, points = (int(x) for x in sys.argv[1:])
tot = raw2 + h + d
print(f"logical bytes: raw {raw:,} ({raw / points:.3f} B/raw point; after the backfill {raw2 / points:.3f}), 1h {h:,} ({100 * h / tot:.2f} %), 1d {d:,} ({100 * d / tot:.3f} %)")
print(f"store on disk: {before:,} B rollups off ({before / points:.3f} B/raw point), {after:,} B with rollups ({after / points:.3f} B/raw point, +{100 * (after - before) / before:.1f} %: the rollup tables' share {100 * (after - before) / after:.1f} %)")
PY

serve_dir=$tmp/data
if [ "$on_import" = 1 ]; then
  t0=$(date +%s.%N)
  generate | import_into "$tmp/data_on" "$tmp/rollups_on_import.toml"
  t1=$(date +%s.%N)
  echo "generate + import with rollups on (built by the compactor): $(secs "$t0" "$t1") s"
  raw_on=$(table_bytes "$tmp/data_on" tsdb)
  h_on=$(table_bytes "$tmp/data_on" tsdb-rollup-1h); d_on=$(table_bytes "$tmp/data_on" tsdb-rollup-1d)
  disk_on=$(du_store "$tmp/data_on")
  python3 - "$raw_b" "$raw_on" "$h_on" "$d_on" "$before" "$disk_on" "$points" <<'PY'
import sys
raw_off, raw_on, h, d, disk_off, disk_on, points = (int(x) for x in sys.argv[1:])
print(f"raw table, logical: {raw_off / points:.3f} B/raw point rollups off, {raw_on / points:.3f} rollups on ({100 * (raw_on - raw_off) / raw_off:+.2f} %)")
print(f"store on disk: {disk_off / points:.3f} B/raw point rollups off, {disk_on / points:.3f} rollups on; rollup tables {100 * (h + d) / (raw_on + h + d):.2f} % of the logical bytes (1h {h:,}, 1d {d:,})")
PY
  serve_dir=$tmp/data_on
fi

nice -n 19 "$tsgate" serve --data-dir "$serve_dir" --config "$tmp/rollups.toml" --listen $H:$P \
  --graphite-listen "" --pickle-listen "" --log-level warn >"$tmp/ts.log" 2>&1 &
srv=$!
for _ in $(seq 300); do curl -sf http://$H:$P/api/version >/dev/null && break; sleep 0.2; done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timed() { # name url -> seconds (median), answer in $tmp/name.json
  curl -s -o "$tmp/$1.json" "$2"   # warm
  for _ in $(seq "$reps"); do curl -s -o "$tmp/$1.json" -w '%{time_total}\n' "$2"; done | median
}
tsdb="http://$H:$P/api/query?start=$start&end=$((end - 1))"
promq="start=$((start + 86400))&end=$end&step=86400&query=avg_over_time(%7B__name__%3D%22bench.m%22%7D%5B1d%5D)"
t_tr=$(timed tsdb_raw "$tsdb&m=none:1d-avg:rollup_raw:bench.m")
t_tu=$(timed tsdb_rollup "$tsdb&m=none:1d-avg:bench.m")
t_pr=$(timed prom_raw "http://$H:$P/api/v1/query_range?$promq")
t_pu=$(timed prom_rollup "http://$H:$P/api/v1/query_range?$promq&max_source_resolution=1d")
t_vm=0
[ "$vm" != none ] && t_vm=$(timed vm_raw "http://$H:$VP/api/v1/query_range?$promq")
python3 - "$tmp" "$t_tr" "$t_tu" "$t_pr" "$t_pu" "$t_vm" "${vm_disk:-0}" "$points" <<'PY'
import json, os, sys
d = sys.argv[1]
t_tr, t_tu, t_pr, t_pu, t_vm = (float(x) for x in sys.argv[2:7])
vm_disk, points = int(sys.argv[7]), int(sys.argv[8])
def vals(name):
    j = json.load(open(f"{d}/{name}.json"))
    if isinstance(j, dict):
        if "data" not in j:
            sys.exit(f"{name}: no answer: {json.dumps(j)[:300]}")
        j = j["data"]["result"]
        # VictoriaMetrics keeps __name__ on this *_over_time where Prometheus drops it.
        return sorted((tuple(sorted((k, x) for k, x in s["metric"].items() if k != "__name__")), tuple(float(v) for _, v in s["values"])) for s in j)
    return sorted((tuple(sorted(s["tags"].items())), tuple(s["dps"].values())) for s in j)
def same(a, b):
    return len(a) == len(b) and all(x[0] == y[0] and len(x[1]) == len(y[1]) and all(abs(p - q) <= 1e-9 * max(1, abs(p)) for p, q in zip(x[1], y[1])) for x, y in zip(a, b))
a, b = vals("tsdb_raw"), vals("tsdb_rollup")
c, e = vals("prom_raw"), vals("prom_rollup")
ms = lambda t: f"{t * 1000:.1f} ms"
print(f"/api/query none:1d-avg, {len(a)} series: tsgate-raw {ms(t_tr)}, tsgate-rollup {ms(t_tu)}: {t_tr / t_tu:.1f}x; answers equal: {same(a, b)}")
print(f"PromQL avg_over_time[1d] step 1d, {len(c)} series: tsgate-raw {ms(t_pr)}, tsgate-rollup {ms(t_pu)}: {t_pr / t_pu:.1f}x; answers equal: {same(c, e)}")
if t_vm > 0:
    v = vals("vm_raw")
    print(f"PromQL, same query on VictoriaMetrics (raw), {len(v)} series: {ms(t_vm)}; tsgate-rollup {t_vm / t_pu:.1f}x faster, tsgate-raw {t_vm / t_pr:.2f}x; answers equal to tsgate's: {same(v, c)}")
    print(f"VictoriaMetrics on disk: {vm_disk:,} B ({vm_disk / points:.3f} B/raw point)")
    if not same(v, c):
        for x, y in zip(v, c):
            if x != y:
                print(f"  first difference: VictoriaMetrics {x[0]} {x[1][:4]}... ({len(x[1])} points), tsgate {y[0]} {y[1][:4]}... ({len(y[1])} points)")
                break
PY
