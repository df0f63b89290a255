#!/usr/bin/env bash
# Issue 7's table of ratios, tsgate against VictoriaMetrics on this machine, back to back:
#  - ingest of ../shared/bench/gen.py's default set over graphite, telnet, http and rw, with
#    ../shared/bench/ingest.sh (points/s until queryable, peak RSS, disk bytes/point);
#  - three warm queries (median of REPS runs, taking turns) on the same set: one series for 1 h; avg by dc of
#    one metric over 1,000 hosts at 60 s steps; sum of rate over all 10,000 series. tsgate answers
#    each through PromQL, OpenTSDB /api/query and Graphite /render, VictoriaMetrics through PromQL;
#    /render is also timed on a tsgate without its row cache (storage.row_cache_mb = 0), shown
#    beside the targets.
#
#  - Grafana's variable queries (label values, a series look-up) on the same set, and 24 h of
#    sum by (dc) (rate(...[5m])) over a day set of the same fleet at 60 s steps (DAYDIR);
#  - with SCALE=1, scale.sh's 1,000,000 series (points/s, peak RSS, bytes per active series).
#
# usage: compat/bench/ratios.sh [DATADIR] [REPS]
#   DATADIR defaults to /tmp/bench/data and is made with gen.py when it has no meta.json;
#   DAYDIR (default DATADIR/../day, 14.4 M points) and SCALEDIR (DATADIR/../scale) likewise.
#   Env: SHARED_BENCH (default ../shared/bench beside the checkout), PROTOS (default
#   "graphite telnet http rw"), SKIP_INGEST=1 / SKIP_QUERY=1 to run one half, TSGATE_BIN=PATH
#   to time that binary instead of building this checkout's (a before/after in one sitting).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
d=${1:-/tmp/bench/data}
reps=${2:-15}
bench=${SHARED_BENCH:-$root/../shared/bench}
protos=${PROTOS:-graphite telnet http rw}
export TSGATE=${TSGATE_BIN:-$root/target/release/tsgate}
source "$root/compat/lib.sh"   # $work, pids+cleanup on exit, port()
results=$work/results.tsv      # kind, name, tsgate, vm
: >"$results"
log() { echo "[$(date +%T)] $*" >&2; }

# --- prerequisites ---------------------------------------------------------------------------
need_apt=()
command -v victoria-metrics >/dev/null || need_apt+=(victoria-metrics)
command -v socat >/dev/null || need_apt+=(socat)
if [ ${#need_apt[@]} -gt 0 ]; then
  log "installing ${need_apt[*]}"
  sudo_=""; [ "$(id -u)" = 0 ] || sudo_=sudo
  $sudo_ apt-get update -qq && $sudo_ apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
if [ ! -f "$d/meta.json" ]; then
  python3 -c 'import cramjam' 2>/dev/null || pip install -q cramjam
  log "generating the data set in $d (about a minute)"
  python3 "$bench/gen.py" "$d"
fi
if [ -z "${TSGATE_BIN:-}" ]; then
  log "building release"
  cargo build --release -q
fi
meta() { python3 -c "import json;print(json.load(open('$d/meta.json'))['$1'])"; }
start=$(meta start); end=$(meta end); pts=$(meta points); series=$(meta series)

# --- ingest: ingest.sh on both targets, back to back -----------------------------------------
# ingest.sh listens on fixed ports; wait while another run (someone else's) holds them.
ports_free() {
  for p in 14242 14243 12003 18428; do
    [ -z "$(ss -Hltn "sport = :$p" 2>/dev/null)" ] || return 1
  done
}
ingest() {  # TARGET PROTO: appends points/s, peak RSS, bytes/point to $work/ingest.$1.$2
  for _ in $(seq 300); do ports_free && break; sleep 2; done
  # timeout signals ingest.sh's whole process group, so its server goes too
  timeout -k 10 900 bash "$bench/ingest.sh" "$1" "$d" "$2" 2>&1 | tee "$work/ingest.$1.$2.log" >&2 || true
  python3 - "$work/ingest.$1.$2.log" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
m = re.search(r"([\d,]+) points/s; peak RSS (\d+) MiB; disk [\d.]+ MiB = ([\d.]+) bytes/point", t)
ok = re.search(r": (\d+) of (\d+) points", t)
w = re.search(r"send ([\d.]+)s, queryable ([\d.]+)s", t)
if m and ok and ok[1] == ok[2] and w:
    print(m[1].replace(",", ""), m[2], m[3], f"{float(w[2]) - float(w[1]):.2f}")
else:
    print("nan nan nan nan")   # did not finish: shown as failed in the table
PY
}
if [ "${SKIP_INGEST:-0}" != 1 ]; then
  for p in $protos; do
    log "ingest $p: VictoriaMetrics, then tsgate"
    read -r vp vr vd vw < <(ingest vm "$p")
    read -r tp tr td tw < <(ingest tsgate "$p")
    printf 'ingest\t%s points/s\t%s\t%s\n' "$p" "$tp" "$vp" >>"$results"
    printf 'rss\t%s peak RSS MiB\t%s\t%s\n' "$p" "$tr" "$vr" >>"$results"
    printf 'disk\t%s disk bytes/point\t%s\t%s\n' "$p" "$td" "$vd" >>"$results"
    printf 'wait\t%s s from the last point sent to queryable\t%s\t%s\n' "$p" "$tw" "$vw" >>"$results"
  done
fi

# --- queries ---------------------------------------------------------------------------------
# VictoriaMetrics and tsgate get the telnet set (series cpu.usage_*{dc,host,rack}); a second
# tsgate gets the Graphite set, whose dotted paths (dc0.host_0.cpu.usage_user) are stored
# whole by default (README, Name rules), so /render is timed on Graphite's own names without
# doubling the series the PromQL selectors see.
H=127.0.0.1
if [ "${SKIP_QUERY:-0}" != 1 ]; then
  start_vm() {  # NAME HTTP TELNET: a VictoriaMetrics on $work/NAME; its pid in $!
    victoria-metrics -storageDataPath="$work/$1" -retentionPeriod=100y -httpListenAddr=$H:$2 \
      -opentsdbListenAddr=$H:$3 -search.latencyOffset=0s -loggerLevel=ERROR >"$work/$1.log" 2>&1 &
    pids+=($!)
  }
  start_ts() {  # NAME HTTP: a tsgate on $work/NAME taking telnet on its HTTP port; its pid in $!
    "$TSGATE" serve --data-dir "$work/$1" --listen $H:$2 --graphite-listen "" --pickle-listen "" \
      --log-level warn >"$work/$1.log" 2>&1 &
    pids+=($!)
  }
  # until the servers PID... are idle: under 20 ms of CPU between them over a second, for at
  # most 30 s (sets waited, and c0 c1 the ticks of the last second)
  wait_idle() {
    for waited in $(seq 30); do
      c0=$(for p in "$@"; do cat /proc/$p/stat; done | awk '{t += $14 + $15} END {print t}'); sleep 1
      c1=$(for p in "$@"; do cat /proc/$p/stat; done | awk '{t += $14 + $15} END {print t}')
      [ $((c1 - c0)) -lt 2 ] && break
    done
  }
  vm_http=$(port); vm_tel=$(port); ts_http=$(port); gr_http=$(port); gr_carbon=$(port); g0_http=$(port); g0_carbon=$(port)
  start_vm vm $vm_http $vm_tel; vm_pid=$!
  start_ts ts $ts_http; ts_pid=$!
  "$TSGATE" serve --data-dir "$work/gr" --listen $H:$gr_http --graphite-listen $H:$gr_carbon \
    --pickle-listen "" --log-level warn >"$work/gr.log" 2>&1 &
  pids+=($!); gr_pid=$!
  # a third, the Graphite set again without its row cache (storage.row_cache_mb = 0): /render's
  # time on rows it reads from the store each time, shown beside the table's (no target)
  printf '[storage]\nrow_cache_mb = 0\n' >"$work/g0.toml"
  "$TSGATE" serve --config "$work/g0.toml" --data-dir "$work/g0" --listen $H:$g0_http --graphite-listen $H:$g0_carbon \
    --pickle-listen "" --log-level warn >"$work/g0.log" 2>&1 &
  pids+=($!); g0_pid=$!
  for _ in $(seq 150); do
    curl -sf http://$H:$vm_http/health >/dev/null && curl -sf http://$H:$ts_http/api/version >/dev/null &&
      curl -sf http://$H:$gr_http/api/version >/dev/null && curl -sf http://$H:$g0_http/api/version >/dev/null && break
    sleep 0.2
  done
  log "loading the telnet set into VictoriaMetrics and tsgate, the Graphite set into a second and third tsgate"
  timeout 600 socat -u FILE:"$d/telnet.txt" TCP:$H:$vm_tel
  timeout 600 socat -u FILE:"$d/telnet.txt" TCP:$H:$ts_http
  timeout 600 socat -u FILE:"$d/graphite.txt" TCP:$H:$gr_carbon
  timeout 600 socat -u FILE:"$d/graphite.txt" TCP:$H:$g0_carbon
  # queryable when the last metric's points are all counted (lines end with it)
  last=$(python3 -c "import json;print(json.load(open('$d/meta.json'))['metrics'][-1])")
  count_prom() {  # BASE: points of cpu.$last
    curl -s --max-time 60 --data-urlencode "query=sum(count_over_time({__name__=\"cpu.$last\"}[2h]))" \
      --data-urlencode "time=$((end + 1))" "$1/api/v1/query" |
      python3 -c "import json,sys
try: print(int(float(json.load(sys.stdin)['data']['result'][0]['value'][1])))
except Exception: print(0)"
  }
  count_render() {  # PORT
    curl -s --max-time 60 --data-urlencode "target=*.*.cpu.$last" --data-urlencode "from=$((start - 1))" \
      --data-urlencode "until=$((end + 1))" --data-urlencode format=json "http://$H:$1/render" |
      python3 -c "import json,sys
try: print(sum(v is not None for s in json.load(sys.stdin) for v, _ in s['datapoints']))
except Exception: print(0)"
  }
  want=$((pts / $(meta metrics | python3 -c 'import sys,ast;print(len(ast.literal_eval(sys.stdin.read())))')))
  for _ in $(seq 300); do
    curl -s http://$H:$vm_http/internal/force_flush >/dev/null
    [ "$(count_prom http://$H:$vm_http)" -ge "$want" ] && [ "$(count_prom http://$H:$ts_http)" -ge "$want" ] &&
      [ "$(count_render $gr_http)" -ge "$want" ] && [ "$(count_render $g0_http)" -ge "$want" ] && break
    sleep 1
  done
  # "warm": the tsgates have compacted the closed hours (write.compaction_delay_ms after the
  # last write, then ~2 s of work on this set): queries are not timed against that work
  settled() {  # BASE: tsgate's compaction queue is empty
    curl -s "$1/api/stats" | python3 -c "import json,sys
print(sum(int(m['value']) for m in json.load(sys.stdin) if m['metric'] == 'tsd.compaction.queue.size'))"
  }
  for _ in $(seq 120); do
    [ "$(settled http://$H:$ts_http)" = 0 ] && [ "$(settled http://$H:$gr_http)" = 0 ] &&
      [ "$(settled http://$H:$g0_http)" = 0 ] && break
    sleep 0.5
  done
  # then the embedded store's tidy: a second after the last delete, tables of the compacted
  # data are rewritten without their tombstones (about a second of work on this set)
  sleep 3
  # ... and until all four servers are idle (VictoriaMetrics merges its fresh parts in the
  # background for a while after a load; a query timed meanwhile, any server's, shares the
  # two cores with that work)
  wait_idle $vm_pid $ts_pid $gr_pid $g0_pid
  log "servers idle (waited ${waited} s; $(( (c1 - c0) * 10 )) ms of CPU in the last one)"
  end1h=$((start + 3600)); last_step=$((start + 3540))

  # the three queries; PromQL is the same text for tsgate and VictoriaMetrics
  q_name=("one series 1h" "avg by dc, 1000 hosts, 60s" "sum(rate) all $series series, 60s")
  promql=('{__name__="cpu.usage_user",host="host_0"}'
          'avg by (dc) (avg_over_time({__name__="cpu.usage_user"}[1m]))'
          'sum(rate({__name__=~"cpu\\.usage_.*"}[1m]))')
  prom_step=(10 60 60); prom_end=("$end" "$last_step" "$last_step")
  # OpenTSDB: one sub-query per metric for the last one (a query reads one metric), so it
  # answers 10 sums rather than one
  otsdb=("{\"start\":$start,\"end\":$end1h,\"queries\":[{\"metric\":\"cpu.usage_user\",\"aggregator\":\"none\",\"tags\":{\"host\":\"host_0\"}}]}"
         "{\"start\":$start,\"end\":$end1h,\"queries\":[{\"metric\":\"cpu.usage_user\",\"aggregator\":\"avg\",\"downsample\":\"1m-avg\",\"tags\":{\"dc\":\"*\"}}]}"
         "$(python3 -c "import json
m=json.load(open('$d/meta.json'))['metrics']
print(json.dumps({'start':$start,'end':$end1h,'queries':[{'metric':'cpu.'+x,'aggregator':'sum','rate':True,'downsample':'1m-avg'} for x in m]}))")")
  # Graphite: maxDataPoints=60 consolidates by average, as 1m buckets do
  render=("dc0.host_0.cpu.usage_user"
          "groupByNode(*.*.cpu.usage_user,0,'averageSeries')"
          "sumSeries(perSecond(*.*.cpu.*))")
  render_mdp=(360 60 60)

  # microsecond precision: a one-series query takes about a millisecond, where rounding to a
  # tenth made 0.95 against 0.94 ms read as 1.0 against 0.9 (a ratio of 1.11)
  median() { sort -n | awk '{a[NR]=$1} END {if (NR) printf "%.3f\n", a[int((NR+1)/2)] * 1000; else print "nan"}'; }
  timed() {  # OUT CURL-ARGS…: the request's seconds, or nothing when it failed
    local out=$1; shift
    local r; r=$(curl -s --max-time 120 -o "$out" -w '%{http_code} %{time_total}' "$@") || return 0
    [ "${r%% *}" = 200 ] && echo "${r#* }"
  }
  # "series×points" of an answer, so the table shows what each API returned
  shape() {  # KIND FILE
    python3 - "$1" "$2" <<'PY'
import json, sys
kind, f = sys.argv[1], sys.argv[2]
try:
    j = json.load(open(f))
    if kind == "prom":
        r = j["data"]["result"]; n = [len(s["values"]) for s in r]
    elif kind == "values":   # label values or series: how many
        print(len(j["data"])); sys.exit()
    elif kind == "otsdb":
        n = [len(s["dps"]) for s in j]
    else:
        n = [sum(v is not None for v, _ in s["datapoints"]) for s in j]
    print(f"{len(n)}x{max(n) if n else 0}")
except Exception:
    print("error")
PY
  }
  for i in 0 1 2; do
    log "query: ${q_name[$i]}"
    prom_args=(--data-urlencode "query=${promql[$i]}" --data-urlencode "start=$start"
               --data-urlencode "end=${prom_end[$i]}" --data-urlencode "step=${prom_step[$i]}")
    # the five requests take turns, round after round, so that each meets the machine as the
    # others do (a run of one server's requests, then the next's, put seconds between them on
    # a machine whose speed drifts that fast)
    ask() {  # N: request N of the five, its answer to $work/q.N.json; prints its seconds
      case $1 in
        0) timed "$work/q.0.json" "${prom_args[@]}" --data-urlencode nocache=1 http://$H:$vm_http/api/v1/query_range ;;
        1) timed "$work/q.1.json" "${prom_args[@]}" http://$H:$ts_http/api/v1/query_range ;;
        2) timed "$work/q.2.json" -X POST -H 'Content-Type: application/json' --data "${otsdb[$i]}" http://$H:$ts_http/api/query ;;
        3) timed "$work/q.3.json" --data-urlencode "target=${render[$i]}" --data-urlencode "from=$start" \
             --data-urlencode "until=$end1h" --data-urlencode format=json --data-urlencode "maxDataPoints=${render_mdp[$i]}" \
             http://$H:$gr_http/render ;;
        4) timed "$work/q.4.json" --data-urlencode "target=${render[$i]}" --data-urlencode "from=$start" \
             --data-urlencode "until=$end1h" --data-urlencode format=json --data-urlencode "maxDataPoints=${render_mdp[$i]}" \
             http://$H:$g0_http/render ;;
      esac
    }
    for n in 0 1 2 3 4; do ask $n >/dev/null; : >"$work/t.$n"; done   # warm once
    for _ in $(seq "$reps"); do
      for n in 0 1 2 3 4; do ask $n >>"$work/t.$n"; done
    done
    result() {  # N KIND: median ms and the answer's shape
      echo "$(median <"$work/t.$1") $(shape "$2" "$work/q.$1.json")"
    }
    read -r vm_ms vm_shape < <(result 0 prom)
    read -r tp_ms tp_shape < <(result 1 prom)
    read -r to_ms to_shape < <(result 2 otsdb)
    read -r tr_ms tr_shape < <(result 3 graphite)
    read -r t0_ms t0_shape < <(result 4 graphite)
    printf 'query\t%s: PromQL (%s vs %s)\t%s\t%s\n' "${q_name[$i]}" "$tp_shape" "$vm_shape" "$tp_ms" "$vm_ms" >>"$results"
    printf 'query\t%s: /api/query (%s)\t%s\t%s\n' "${q_name[$i]}" "$to_shape" "$to_ms" "$vm_ms" >>"$results"
    printf 'query\t%s: /render (%s)\t%s\t%s\n' "${q_name[$i]}" "$tr_shape" "$tr_ms" "$vm_ms" >>"$results"
    printf 'info\t%s: /render, row cache off (%s)\t%s\t%s\n' "${q_name[$i]}" "$t0_shape" "$t0_ms" "$vm_ms" >>"$results"
  done

  # Grafana's variable queries: label values and a series look-up over the hour, on the same
  # two servers (dc0..dc2 exist: gen.py gives host h the dc h % 3)
  pairs() {  # NAME KIND PATH ARGS…: VictoriaMetrics and tsgate take turns on one GET
    local name=$1 kind=$2 path=$3; shift 3
    : >"$work/t.0"; : >"$work/t.1"
    for r in $(seq 0 "$reps"); do
      for n in 0 1; do
        local base=http://$H:$vm_http; [ $n = 1 ] && base=http://$H:$ts_http
        t=$(timed "$work/q.$n.json" -G "$@" "$base$path")
        [ "$r" = 0 ] || [ -z "$t" ] || echo "$t" >>"$work/t.$n"   # the first round warms
      done
    done
    read -r vm_ms vm_shape < <(result 0 "$kind")
    read -r tp_ms tp_shape < <(result 1 "$kind")
    printf 'query\t%s (%s vs %s)\t%s\t%s\n' "$name" "$tp_shape" "$vm_shape" "$tp_ms" "$vm_ms" >>"$results"
  }
  log "query: label values, series look-up"
  pairs "label values of host, 1h" values /api/v1/label/host/values \
    --data-urlencode "start=$start" --data-urlencode "end=$end"
  pairs 'series of cpu.usage_user{dc="dc2"}, 1h' values /api/v1/series \
    --data-urlencode 'match[]={__name__="cpu.usage_user",dc="dc2"}' --data-urlencode "start=$start" \
    --data-urlencode "end=$end"

  # A day of the same fleet at 60 s steps (gen.py DAYDIR 1000 86400 60: 14.4 M points), on a
  # VictoriaMetrics and a tsgate of their own: 24 h of sum by (dc) (rate(...[5m])) at 60 s
  dd=${DAYDIR:-$(dirname "$d")/day}
  if [ ! -f "$dd/meta.json" ]; then
    log "generating the day set in $dd (about five minutes)"
    python3 "$bench/gen.py" "$dd" 1000 86400 60
  fi
  kill "$gr_pid" "$g0_pid" 2>/dev/null || true   # the Graphite servers are done: room for these
  vd_http=$(port); vd_tel=$(port); td_http=$(port)
  start_vm vmd $vd_http $vd_tel; vd_pid=$!
  start_ts tsd $td_http; td_pid=$!
  for _ in $(seq 150); do
    curl -sf http://$H:$vd_http/health >/dev/null && curl -sf http://$H:$td_http/api/version >/dev/null && break
    sleep 0.2
  done
  log "loading the day set into a third VictoriaMetrics and tsgate pair"
  timeout 900 socat -u FILE:"$dd/telnet.txt" TCP:$H:$vd_tel
  timeout 900 socat -u FILE:"$dd/telnet.txt" TCP:$H:$td_http
  dstart=$(python3 -c "import json;print(json.load(open('$dd/meta.json'))['start'])")
  dend=$(python3 -c "import json;print(json.load(open('$dd/meta.json'))['end'])")
  dwant=$(python3 -c "import json;m=json.load(open('$dd/meta.json'));print(m['points']//len(m['metrics']))")
  count_day() {  # BASE: points of cpu.$last over the day
    curl -s --max-time 120 --data-urlencode "query=sum(count_over_time({__name__=\"cpu.$last\"}[2d]))" \
      --data-urlencode "time=$((dend + 1))" "$1/api/v1/query" |
      python3 -c "import json,sys
try: print(int(float(json.load(sys.stdin)['data']['result'][0]['value'][1])))
except Exception: print(0)"
  }
  for _ in $(seq 300); do
    curl -s http://$H:$vd_http/internal/force_flush >/dev/null
    [ "$(count_day http://$H:$vd_http)" -ge "$dwant" ] && [ "$(count_day http://$H:$td_http)" -ge "$dwant" ] && break
    sleep 1
  done
  for _ in $(seq 240); do [ "$(settled http://$H:$td_http)" = 0 ] && break; sleep 0.5; done
  sleep 3
  wait_idle $vd_pid $td_pid
  log "query: 24h sum by (dc) (rate[5m]) (servers idle after ${waited} s)"
  day_args=(--data-urlencode 'query=sum by (dc) (rate({__name__=~"cpu\\.usage_.*"}[5m]))'
            --data-urlencode "start=$dstart" --data-urlencode "end=$dend" --data-urlencode step=60)
  : >"$work/t.0"; : >"$work/t.1"
  for r in $(seq 0 "$reps"); do
    a=$(timed "$work/q.0.json" "${day_args[@]}" --data-urlencode nocache=1 http://$H:$vd_http/api/v1/query_range)
    b=$(timed "$work/q.1.json" "${day_args[@]}" http://$H:$td_http/api/v1/query_range)
    [ "$r" = 0 ] && continue   # the first round warms
    [ -z "$a" ] || echo "$a" >>"$work/t.0"
    [ -z "$b" ] || echo "$b" >>"$work/t.1"
  done
  read -r vm_ms vm_shape < <(result 0 prom)
  read -r tp_ms tp_shape < <(result 1 prom)
  printf 'query\t%s\t%s\t%s\n' "sum by (dc) (rate[5m]) all $series series, 24h, 60s: PromQL ($tp_shape vs $vm_shape)" "$tp_ms" "$vm_ms" >>"$results"
fi

# --- scale: compat/bench/scale.sh's 1,000,000 series (SCALE=1; about 10 minutes) ------------
if [ "${SCALE:-0}" = 1 ]; then
  log "scale: 1,000,000 series (scale.sh)"
  TSGATE="$TSGATE" bash "$here/scale.sh" "${SCALEDIR:-$(dirname "$d")/scale}" | tee "$work/scale.log" >&2
  python3 - "$work/scale.log" >>"$results" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    f = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(f) == 12 and f[0] in ("tsgate", "vm"):
        num = lambda x: x.replace(",", "")
        ok = f[11] == "ok"
        rows[(f[0], f[1])] = (num(f[5]) if ok else "nan", num(f[6]), num(f[9]))
for proto in sorted({p for _, p in rows}):
    t, v = rows.get(("tsgate", proto)), rows.get(("vm", proto))
    if not (t and v):
        continue
    print(f"scale_ingest\t1M series {proto} points/s\t{t[0]}\t{v[0]}")
    print(f"rss\t1M series {proto} peak RSS MiB\t{t[1]}\t{v[1]}")
    print(f"scale_mem\t1M series {proto} bytes/active series\t{t[2]}\t{v[2]}")
PY
fi

# --- the table -------------------------------------------------------------------------------
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
mem=$(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo)
vmver=$(dpkg-query -W -f '${Version}' victoria-metrics 2>/dev/null || true)
echo
echo "Machine: $(nproc) cores, $cpu, $mem RAM; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "tsgate $(git -C "$root" rev-parse --short HEAD)${TSGATE_BIN:+ (binary $TSGATE_BIN)}, VictoriaMetrics ${vmver:-?}; data: $pts points, $series series ($d)"
echo "Ratios are tsgate / VictoriaMetrics; queries: warm median of $reps, milliseconds (series x points returned)."
echo
python3 - "$results" <<'PY'
import math, sys
# issue 36's targets, as bounds on tsgate / VictoriaMetrics (issue 7's were >= 1.5x ingest,
# <= 2.0x disk, <= 1.0x queries)
target = {"ingest": (">=", 2.5), "rss": ("<=", 1.0), "disk": ("<=", 1.0), "query": ("<=", 0.5),
          "scale_ingest": (">=", 1.5), "scale_mem": ("<=", 0.75),
          "wait": ("<=", 0.5)}  # seconds, tsgate's own: not a ratio
print("| measure | tsgate | VictoriaMetrics | ratio | target | |")
print("|---|---|---|---|---|---|")
met = total = 0
for line in open(sys.argv[1]):
    kind, name, t, v = line.rstrip("\n").split("\t")
    t, v = float(t), float(v)
    if kind == "info":  # shown for comparison, not a target
        ratio = t / v if v and not (math.isnan(t) or math.isnan(v)) else float("nan")
        show = lambda x: "failed" if math.isnan(x) else f"{x:,.2f}"
        print(f"| {name} | {show(t)} | {show(v)} | {ratio:.2f}x | (none) | |")
        continue
    op, bound = target[kind]
    ok = not (math.isnan(t) or math.isnan(v) or v == 0)
    ratio = t / v if ok else float("nan")
    judged = t if kind == "wait" else ratio
    ok = ok and (judged >= bound if op == ">=" else judged <= bound)
    met += ok; total += 1
    fmt = {"ingest": lambda x: f"{x/1000:,.0f} k", "scale_ingest": lambda x: f"{x/1000:,.0f} k",
           "query": lambda x: f"{x:,.2f}", "wait": lambda x: f"{x:,.2f}",
           "scale_mem": lambda x: f"{x:,.0f}"}.get(kind, lambda x: f"{x:,.1f}")
    show = lambda x: "failed" if math.isnan(x) else fmt(x)
    unit = " s" if kind == "wait" else "x"
    print(f"| {name} | {show(t)} | {show(v)} | {ratio:.2f}x | {op} {bound}{unit} | {'met' if ok else 'not met'} |")
print(f"\n{met} of {total} targets met")
PY
