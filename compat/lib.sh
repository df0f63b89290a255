# Shared scaffolding for the compat suites (sourced, not run): a temp work dir, the processes
# started in it (append their pids to `pids`), cleanup of both on exit, and free loopback ports.
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
# Waits until URL answers 2xx (extra curl arguments after it, e.g. --cacert); fails the suite with
# every log in the work dir when it does not within 30 s.
wait_up() {
  local url=$1; shift
  for _ in $(seq 150); do curl -sf "$@" "$url" >/dev/null && return 0; sleep 0.2; done
  echo "not up: $url" >&2; cat "$work"/*.log >&2; exit 1
}
# Starts "$TSGATE" serve with its HTTP API on 127.0.0.1:$TS (Graphite's listeners off, data in
# $work/tsgate, 200 ms flushes; config $work/tsgate.toml, log $work/tsgate.log), with the TOML
# tables in $1 added to its config. It does not wait: wait_up "http://127.0.0.1:$TS/api/version"
# does, once the rest is started too.
serve_tsgate() {
  cat >"$work/tsgate.toml" <<TOML
data_dir = "$work/tsgate"
[server]
listen = "127.0.0.1:$TS"
graphite_listen = ""
pickle_listen = ""
[write]
flush_interval_ms = 200
${1:-}
TOML
  "$TSGATE" serve --config "$work/tsgate.toml" >"$work/tsgate.log" 2>&1 & pids+=($!)
}
# The Prometheus suites' reference: a Prometheus on 127.0.0.1:$REF that only receives remote
# writes (--web.enable-remote-write-receiver; storage $work/ref, log $work/ref.log).
serve_ref_prometheus() {
  echo "global: {}" >"$work/empty.yml"
  prometheus --config.file="$work/empty.yml" --storage.tsdb.path="$work/ref" --web.listen-address=127.0.0.1:$REF \
    --web.enable-remote-write-receiver >"$work/ref.log" 2>&1 & pids+=($!)
}
# Runs the sending Prometheus ($work/sender.yml, on 127.0.0.1:$SEND) for $1 seconds, then stops
# it, which flushes its remote-write queues: afterwards its receivers hold the same data. Sets
# t0 and t1 to when it started and stopped (s).
run_sender() {
  t0=$(date +%s)
  prometheus --config.file="$work/sender.yml" --storage.tsdb.path="$work/sender" --web.listen-address=127.0.0.1:$SEND \
    >"$work/sender.log" 2>&1 & sender=$!; pids+=($sender)
  wait_up "http://127.0.0.1:$SEND/-/ready"
  sleep "$1"
  kill -TERM $sender; wait $sender 2>/dev/null || true
  t1=$(date +%s)
}
# The PromQL compliance query set $1 written to $2 for the stand-in demo instances
# (demo_service.py) on loopback ports $D0 $D1 $D2: demo.promlabs.com:1000N becomes 127.0.0.1:<DN>.
demo_queries() {
  sed -e "s/demo.promlabs.com:10000/127.0.0.1:$D0/g; s/demo.promlabs.com:10001/127.0.0.1:$D1/g; s/demo.promlabs.com:10002/127.0.0.1:$D2/g" \
    "$1" >"$2"
}
