#!/usr/bin/env bash
# Scale check of issue 7: 1,000,000 series (gen.py with 100,000 hosts, 60 s at 10 s steps:
# 6 points each) sent to tsgate and to VictoriaMetrics, one after the other. Prints points/s
# until queryable, peak RSS, RSS before and after, and memory per active series
# ((RSS after - RSS idle) / series); says so, with the numbers, when a server stalls or dies.
#
# usage: compat/bench/scale.sh [DATADIR] [HOSTS]
#   DATADIR defaults to /tmp/bench/scale (made with gen.py DIR HOSTS 60 10 when missing, about
#   1.5 GiB and a few minutes); HOSTS defaults to 100000. Env: PROTOS (default "telnet";
#   "telnet rw" adds remote write), TARGETS (default "tsgate vm"), LIMIT_S (default 900: the
#   longest wait for one ingest to become queryable).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
d=${1:-/tmp/bench/scale}
hosts=${2:-100000}
bench=${SHARED_BENCH:-$root/../shared/bench}
tsgate=${TSGATE:-$root/target/release/tsgate}
limit=${LIMIT_S:-900}
source "$root/compat/lib.sh"   # $work, pids+cleanup on exit, port()
log() { echo "[$(date +%T)] $*" >&2; }

if [ ! -f "$d/meta.json" ]; then
  python3 -c 'import cramjam' 2>/dev/null || pip install -q cramjam
  log "generating $hosts hosts x 10 metrics x 6 points in $d"
  python3 "$bench/gen.py" "$d" "$hosts" 60 10
fi
[ -x "$tsgate" ] || (cd "$root" && cargo build --release -q)
meta() { python3 -c "import json;print(json.load(open('$d/meta.json'))['$1'])"; }
pts=$(meta points); series=$(meta series); end=$(meta end)
last=$(python3 -c "import json;print(json.load(open('$d/meta.json'))['metrics'][-1])")
want=$((pts / 10))   # points of the last metric: every line of the set ends with it
rss() { awk '/^VmRSS/{print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }   # KiB
hwm() { awk '/^VmHWM/{print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
H=127.0.0.1

one() {  # TARGET PROTO
  local target=$1 proto=$2 http tel pid dir=$work/$1-$2
  http=$(port); tel=$(port)
  mkdir -p "$dir"
  case $target in
    vm) victoria-metrics -storageDataPath="$dir/data" -retentionPeriod=100y -httpListenAddr=$H:$http \
          -opentsdbListenAddr=$H:$tel -search.latencyOffset=0s -loggerLevel=ERROR >"$dir/log" 2>&1 &
        pid=$!; local health=/health name=cpu.$last
        [ "$proto" = rw ] && name=cpu_$last ;;
    tsgate) "$tsgate" serve --data-dir "$dir/data" --listen $H:$http --graphite-listen "" --pickle-listen "" \
              --log-level warn >"$dir/log" 2>&1 &
        pid=$!; tel=$http; local health=/api/version name=cpu.$last
        [ "$proto" = rw ] && name=cpu_$last ;;
  esac
  pids+=("$pid")
  for _ in $(seq 150); do curl -sf "http://$H:$http$health" >/dev/null && break; sleep 0.2; done
  sleep 2
  local idle; idle=$(rss "$pid")
  local t0 t1 t2 n=0 status=ok
  t0=$(date +%s.%N)
  case $proto in
    telnet) timeout "$limit" socat -u FILE:"$d/telnet.txt" TCP:$H:"$tel" || status="sender failed ($?)" ;;
    rw) timeout "$limit" "$bench/post.py" "http://$H:$http/api/v1/write" 4 Content-Encoding:snappy \
          Content-Type:application/x-protobuf X-Prometheus-Remote-Write-Version:0.1.0 -- "$d"/rw-*.bin \
          >"$dir/post.log" 2>&1 || status="sender failed ($?)" ;;
  esac
  t1=$(date +%s.%N)
  # queryable: every point of the last metric counted through PromQL
  while kill -0 "$pid" 2>/dev/null; do
    [ "$target" = vm ] && curl -s "http://$H:$http/internal/force_flush" >/dev/null
    n=$(curl -s --max-time 120 --data-urlencode "query=sum(count_over_time({__name__=\"$name\"}[1h]))" \
          --data-urlencode "time=$((end + 1))" "http://$H:$http/api/v1/query" |
        python3 -c "import json,sys
try: print(int(float(json.load(sys.stdin)['data']['result'][0]['value'][1])))
except Exception: print(0)")
    [ "$n" -ge "$want" ] && break
    if [ "$(python3 -c "print(int($(date +%s.%N) - $t0))")" -ge "$limit" ]; then
      s="stalled: not queryable after ${limit}s"
      if [ "$status" = ok ]; then status=$s; else status="$status, $s"; fi
      break
    fi
    sleep 1
  done
  t2=$(date +%s.%N)
  kill -0 "$pid" 2>/dev/null || status="died ($(tail -c 300 "$dir/log" | tr '\n' ' '))"
  local peak after
  peak=$(hwm "$pid")
  sleep 10   # after the flush and compaction that follow the last write
  after=$(rss "$pid")
  local warns; warns=$(grep -ciE 'warn|error' "$dir/log" || true)
  kill -INT "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
  python3 - "$status" <<PY
import sys
send, q = $t1 - $t0, $t2 - $t0
idle, peak, after = $idle / 1024, $peak / 1024, $after / 1024
print(f"| $target | $proto | $n of $want | {send:.1f} | {q:.1f} | {$n * $pts / $want / q:,.0f} | {peak:,.0f} | {idle:,.0f} | "
      f"{after:,.0f} | {(after - idle) * 1048576 / $series:,.0f} | $warns | {sys.argv[1]} |")
PY
}

echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "Data: $pts points, $series series ($d). Points counted: those of cpu.$last, the last metric of every host;"
echo "points/s = points made queryable (counted x 10 metrics) / seconds until queryable or the limit."
echo "MiB; bytes/series = (RSS after - RSS idle) / series; log lines = warnings and errors in the server's log."
echo
echo "| target | protocol | points counted | send s | queryable s | points/s | peak RSS | RSS idle | RSS after | bytes/series | log lines | status |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for p in ${PROTOS:-telnet}; do
  for t in ${TARGETS:-tsgate vm}; do
    log "$t $p"
    one "$t" "$p"
  done
done
