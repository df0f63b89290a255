#!/usr/bin/env bash
# Debian's real Prometheus remote-writing to tsgate over HTTPS with basic_auth, in about 15 s:
#   good      remote_write with a user holding the write right, trusting tsgate's CA (ca_file)
#   readonly  the same with a bearer token holding only the read right: tsgate answers 403
#   reader    remote_read with a read token (Prometheus' PromQL over tsgate's data)
# Checks: good's samples are in tsgate, readonly's are not and its failure counter rose, and the
# reader sees good's series through remote read.
# usage: bash compat/prometheus/auth.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
TSGATE=${TSGATE:-$root/target/release/tsgate}
for b in prometheus python3 curl openssl; do
  command -v "$b" >/dev/null || { echo "compat/prometheus/auth: $b is missing (tests/run.sh installs it)" >&2; exit 2; }
done
. "$root/compat/lib.sh"
TS=$(port); GOOD=$(port); RO=$(port); READ=$(port)

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
READ_TOKEN=$("$TSGATE" auth new-token | sed -n 's/^token: //p')
printf '%s\n' "$READ_TOKEN" >"$work/read.token"
serve_tsgate "$(cat <<TOML
[server.tls]
cert = "$work/cert.pem"
key = "$work/key.pem"
[auth]
enabled = true
[[auth.users]]
name = "prom"
password_hash = "$(printf '%s\n' 'prom-secret' | "$TSGATE" auth hash-password)"
rights = ["write"]
[[auth.tokens]]
name = "reader"
token_file = "$work/read.token"
rights = ["read"]
TOML
)"
wait_up "https://127.0.0.1:$TS/api/version" --cacert "$work/cert.pem"

sender() { # name port auth-yaml
  cat >"$work/$1.yml" <<YML
global: {scrape_interval: 1s, scrape_timeout: 1s, external_labels: {sender: $1}}
scrape_configs:
  - job_name: prometheus
    static_configs: [{targets: ['127.0.0.1:$2']}]
remote_write:
  - url: https://127.0.0.1:$TS/api/v1/write
    queue_config: {batch_send_deadline: 1s, min_backoff: 30ms, max_backoff: 100ms}
    tls_config: {ca_file: $work/cert.pem}
$3
YML
  prometheus --config.file="$work/$1.yml" --storage.tsdb.path="$work/$1" --web.listen-address=127.0.0.1:$2 \
    >"$work/$1.log" 2>&1 & pids+=($!)
}
sender good "$GOOD" "    basic_auth: {username: prom, password: prom-secret}"
sender readonly "$RO" "    authorization: {credentials_file: $work/read.token}"
for p in $GOOD $RO; do wait_up "http://127.0.0.1:$p/-/ready"; done

cat >"$work/reader.yml" <<YML
global: {evaluation_interval: 1m}
remote_read:
  - url: https://127.0.0.1:$TS/api/v1/read
    read_recent: true
    authorization: {credentials_file: $work/read.token}
    tls_config: {ca_file: $work/cert.pem}
YML
prometheus --config.file="$work/reader.yml" --storage.tsdb.path="$work/reader" --web.listen-address=127.0.0.1:$READ \
  >"$work/reader.log" 2>&1 & pids+=($!)
wait_up "http://127.0.0.1:$READ/-/ready"

passed=0; failed=0
check() { # name command…
  if "${@:2}"; then passed=$((passed + 1)); echo "test auth::$1 ... ok"; else failed=$((failed + 1)); echo "test auth::$1 ... FAILED"; fi
}
# A PromQL count from tsgate (read token) or from a Prometheus; prints the number or 0.
count_tsgate() { curl -s --cacert "$work/cert.pem" -H "Authorization: Bearer $READ_TOKEN" \
  --data-urlencode "query=$1" "https://127.0.0.1:$TS/api/v1/query" | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)'; }
count_prom() { curl -s --data-urlencode "query=$2" "http://127.0.0.1:$1/api/v1/query" | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)'; }
gt0() { python3 -c "import sys; sys.exit(0 if float('$1' or 0) > 0 else 1)" 2>/dev/null; }
# A sender's remote write starts only once its WAL watcher has caught up (about 6 s after
# start, and much later on a loaded machine; its first request then waits for argon2), so a
# fixed sleep before one look raced it: each check waits up to 60 s for what it looks for.
eventually() { # command…
  local end=$((SECONDS + 60))
  until "$@"; do [ $SECONDS -lt $end ] || return 1; sleep 1; done
}
good_landed() { gt0 "$(count_tsgate 'count(count_over_time(up{sender="good"}[1m]))' 2>/dev/null)"; }
readonly_refused() { gt0 "$(count_prom "$RO" 'sum(prometheus_remote_storage_samples_failed_total)' 2>/dev/null)"; }
reader_sees_good() { gt0 "$(count_prom "$READ" 'count(prometheus_build_info{sender="good"})' 2>/dev/null)"; }

check basic_auth_writes_land eventually good_landed
check readonly_sender_saw_refusals eventually readonly_refused
# Asked once readonly's writes were refused (so it has tried), and good's have landed.
check read_token_cannot_write [ "$(count_tsgate 'count(count_over_time(up{sender="readonly"}[1m]))')" = 0 ]
check good_sender_saw_no_refusals [ "$(count_prom "$GOOD" 'sum(prometheus_remote_storage_samples_failed_total)')" = 0 ]
check remote_read_with_token eventually reader_sees_good

echo "test result: $([ $failed = 0 ] && echo ok || echo FAILED). $passed passed; $failed failed"
if [ $failed -ne 0 ]; then tail -n 20 "$work/tsgate.log" "$work/readonly.log" "$work/good.log" "$work/reader.log" >&2 || true; exit 1; fi
