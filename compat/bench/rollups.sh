#!/usr/bin/env bash
# Rollups benchmark: SERIES series of one metric, DAYS days of a point every STEP seconds,
# imported without rollups, then `tsgate rollup` builds their cells (timed); then a
# 1-day-downsample query over the whole window, over every series, answered from raw data and
# from the rollups (warm, median of REPS runs each), on /api/query (`1d-avg`, `rollup_raw` vs
# the default) and PromQL (`avg_over_time(...[1d])` at a 1 d step, raw vs
# `max_source_resolution=1d`); the answers are compared; then the logical bytes (keys,
# qualifiers, values) of each table and the store's size before and after the rollups.
#
# usage: compat/bench/rollups.sh [SERIES] [DAYS] [STEP] [REPS]   (defaults 1000 365 10 5: the
#        issue's shape; needs target/release/tsgate or $TSGATE)
# Everything but the timed queries runs under `nice -n 19`.
set -euo pipefail
series=${1:-1000}; days=${2:-365}; step=${3:-10}; reps=${4:-5}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tsgate=${TSGATE:-$root/target/release/tsgate}
tmp=$(mktemp -d)
H=127.0.0.1; P=${PORT:-14342}
trap '[ -n "${srv:-}" ] && kill $srv 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
now=$(date +%s)
end=$((now / 86400 * 86400))          # today 00:00 UTC (exclusive)
start=$((end - days * 86400))
printf '[rollups]\nenabled = true\n' > "$tmp/rollups.toml"
: > "$tmp/plain.toml"
echo "data: $series series x $days days every $step s = $((series * days * 86400 / step)) points"
t0=$(date +%s.%N)
# 5 s past each step: no point on a day's boundary, which PromQL's closed windows would count
# in two days (the raw answer would then differ from the rollup's by construction).
nice -n 19 python3 - "$series" "$start" "$end" "$step" > "$tmp/hist.txt" <<'PY'
import sys
n, start, end, step = (int(x) for x in sys.argv[1:])
out = sys.stdout
for i in range(n):
    out.write("".join(f"bench.m {t} {(t // step * 7 + i) % 100} host=h{i:04d}\n" for t in range(start + 5, end, step)))
PY
nice -n 19 "$tsgate" import --quiet --data-dir "$tmp/data" --config "$tmp/plain.toml" "$tmp/hist.txt"
rm "$tmp/hist.txt"
t1=$(date +%s.%N)
echo "generate + import: $(python3 -c "print(f'{$t1 - $t0:.1f}')") s"
du_store() { du -sb "$tmp/data/store" | cut -f1; }
table_bytes() {
  nice -n 19 "$tsgate" scan --data-dir "$tmp/data" --config "$tmp/rollups.toml" --table "$1" \
    | awk '{q=$3; sub(/^[^:]*:/, "", q); b += (length($2) + length(q) + length($4)) / 2} END {printf "%d", b}'
}
raw_b=$(table_bytes tsdb)   # also opens and closes the store once, as after the backfill
before=$(du_store)
t0=$(date +%s.%N)
nice -n 19 "$tsgate" rollup --quiet --data-dir "$tmp/data" --config "$tmp/rollups.toml" --start "$start" --end "$end"
t1=$(date +%s.%N)
echo "backfill (tsgate rollup): $(python3 -c "print(f'{$t1 - $t0:.1f}')") s"
h_b=$(table_bytes tsdb-rollup-1h); d_b=$(table_bytes tsdb-rollup-1d)
after=$(du_store)
python3 - "$raw_b" "$h_b" "$d_b" "$before" "$after" "$((series * days * 86400 / step))" <<'PY'
import sys
raw, h, d, before, after, points = (int(x) for x in sys.argv[1:])
tot = raw + h + d
print(f"logical bytes: raw {raw:,} ({raw / points:.2f} B/point), 1h {h:,} ({100 * h / tot:.2f} %), 1d {d:,} ({100 * d / tot:.3f} %)")
print(f"store on disk: {before:,} B raw only, {after:,} B with rollups (+{100 * (after - before) / before:.1f} %)")
PY
nice -n 19 "$tsgate" serve --data-dir "$tmp/data" --config "$tmp/rollups.toml" --listen $H:$P \
  --graphite-listen "" --pickle-listen "" --log-level warn >"$tmp/ts.log" 2>&1 &
srv=$!
for _ in $(seq 300); do curl -sf http://$H:$P/api/version >/dev/null && break; sleep 0.2; done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timed() { # name url -> seconds (median), answer in $tmp/name.json
  curl -s -o "$tmp/$1.json" "$2"   # warm
  for _ in $(seq "$reps"); do curl -s -o "$tmp/$1.json" -w '%{time_total}\n' "$2"; done | median
}
tsdb="http://$H:$P/api/query?start=$start&end=$((end - 1))"
pq="http://$H:$P/api/v1/query_range?start=$((start + 86400))&end=$end&step=86400&query=avg_over_time(%7B__name__%3D%22bench.m%22%7D%5B1d%5D)"
t_tr=$(timed tsdb_raw "$tsdb&m=none:1d-avg:rollup_raw:bench.m")
t_tu=$(timed tsdb_rollup "$tsdb&m=none:1d-avg:bench.m")
t_pr=$(timed prom_raw "$pq")
t_pu=$(timed prom_rollup "$pq&max_source_resolution=1d")
python3 - "$tmp" "$t_tr" "$t_tu" "$t_pr" "$t_pu" <<'PY'
import json, sys
d = sys.argv[1]
t_tr, t_tu, t_pr, t_pu = (float(x) for x in sys.argv[2:])
def vals(name):
    j = json.load(open(f"{d}/{name}.json"))
    if isinstance(j, dict):
        j = j["data"]["result"]
        return sorted((tuple(sorted(s["metric"].items())), tuple(float(v) for _, v in s["values"])) for s in j)
    return sorted((tuple(sorted(s["tags"].items())), tuple(s["dps"].values())) for s in j)
def same(a, b):
    return len(a) == len(b) and all(x[0] == y[0] and len(x[1]) == len(y[1]) and all(abs(p - q) <= 1e-9 * max(1, abs(p)) for p, q in zip(x[1], y[1])) for x, y in zip(a, b))
a, b = vals("tsdb_raw"), vals("tsdb_rollup")
c, e = vals("prom_raw"), vals("prom_rollup")
print(f"/api/query 1d-avg over {len(a)} series: raw {t_tr * 1000:.1f} ms, rollup {t_tu * 1000:.1f} ms, {t_tr / t_tu:.0f}x; answers equal: {same(a, b)}")
print(f"PromQL avg_over_time[1d] step 1d over {len(c)} series: raw {t_pr * 1000:.1f} ms, rollup {t_pu * 1000:.1f} ms, {t_pr / t_pu:.0f}x; answers equal: {same(c, e)}")
PY
