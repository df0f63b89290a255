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
