#!/bin/bash
# Perf sanity: 10k series (1000 hosts x 10 metrics), 60 points each at 10 s, via carbon plaintext.
set -e
D=${TMPDIR:-/tmp}/gwperf; rm -rf $D/data; mkdir -p $D/data
cat > $D/cfg.toml <<'C'
[server]
listen = "127.0.0.1:14242"
graphite_listen = "127.0.0.1:12003"
pickle_listen = ""
[[graphite.rules]]
name = "fleet"
match = "{dc}.{host}.cpu.{metric}"
metric = "cpu.{metric}"
tags = { dc = "{dc}", host = "{host}" }
C
"$(dirname "$0")/../../target/release/tsgate" serve --config $D/cfg.toml --data-dir $D/data --log-level warn & PID=$!
echo $PID > $D/pid
sleep 2
python3 - <<'P'
import socket,time
end=int(time.time())//10*10
M=["usage_user","usage_system","usage_idle","usage_nice","usage_iowait","usage_irq","usage_softirq","usage_steal","usage_guest","usage_guest_nice"]
s=socket.create_connection(("127.0.0.1",12003))
buf=[]
for h in range(1000):
  for m in M:
    for i in range(60):
      buf.append(f"dc{h%3}.host_{h}.cpu.{m} {h%7+i} {end-590+i*10}\n")
  if len(buf)>50000:
    s.sendall("".join(buf).encode()); buf=[]
s.sendall("".join(buf).encode()); s.close()
P
sleep 3
t(){ local s=$(date +%s.%N); curl -s -o $D/out -w "%{http_code} %{size_download}B" "$@"; echo " $(echo "$(date +%s.%N) - $s" | bc)s  $*"; }
t 'http://127.0.0.1:14242/metrics/find?query=*'
t 'http://127.0.0.1:14242/metrics/find?query=dc0.*'
t 'http://127.0.0.1:14242/metrics/find?query=dc0.host_3.cpu.*'
t 'http://127.0.0.1:14242/render?target=sumSeries(dc0.*.cpu.usage_user)&from=-15min&format=json&maxDataPoints=300'
t 'http://127.0.0.1:14242/render?target=groupByNode(*.*.cpu.usage_idle,0,%27avg%27)&from=-15min&format=json&maxDataPoints=300'
t 'http://127.0.0.1:14242/render?target=dc1.host_1.cpu.*&from=-15min&format=json'
head -c 300 $D/out; echo
kill -INT $PID; wait $PID || true
