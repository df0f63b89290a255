#!/usr/bin/env bash
# Runs the whole test suite from a fresh clone: installs what the tests need, builds, tests.
# Usage: bash tests/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# System packages the suites use (curl for HTTP examples, netcat for telnet examples).
need=()
command -v curl >/dev/null || need+=(curl)
command -v nc >/dev/null || need+=(netcat-openbsd)
# The Prometheus peer suite (compat/prometheus) runs Debian's real Prometheus 2.42.
command -v prometheus >/dev/null || need+=(prometheus)
command -v prometheus-node-exporter >/dev/null || need+=(prometheus-node-exporter)
command -v python3 >/dev/null || need+=(python3)
# tests/migrate.rs compares export/import with Debian's VictoriaMetrics and reads whisper files
# written by python3-whisper's tools.
command -v victoria-metrics >/dev/null || need+=(victoria-metrics)
command -v whisper-create >/dev/null || need+=(python3-whisper)
# compat/prometheus/auth.sh makes a self-signed certificate for Prometheus' tls_config.
command -v openssl >/dev/null || need+=(openssl)
# compat/relays relays through Debian's carbon-c-relay (and carbon's own carbon-relay, below).
command -v carbon-c-relay >/dev/null || need+=(carbon-c-relay)
# tests/ui.rs drives the web UI in Debian's headless Chromium (it fails under CI without it).
command -v chromium >/dev/null || need+=(chromium)
# The Graphite peer suite (compat/graphite) runs Debian's collectd with write_graphite.
# collectd-core carries every plugin it needs; without recommends it pulls in nothing big
# (collectd itself would add rrdtool, perl and friends).
need_collectd=0
[ -x /usr/sbin/collectd ] || need_collectd=1
# The graphite-web peer suite (compat/graphite_web_compare) runs Debian's graphite-web 1.1.8
# in-process on whisper files; its Depends (Django, whisper, cairo) are all it needs.
need_graphite_web=0
/usr/bin/python3 -c 'import graphite.render, whisper' 2>/dev/null || need_graphite_web=1
# ... and Debian's carbon-cache writes whisper files for `tsgate import --from whisper`.
command -v carbon-cache >/dev/null || need_graphite_web=1
if ((${#need[@]})) || ((need_collectd)) || ((need_graphite_web)); then
  if [ "$(id -u)" = 0 ]; then
    sudo=""
  else
    sudo=sudo
  fi
  $sudo apt-get update -qq
  if ((${#need[@]})); then
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
  if ((need_collectd)); then
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends collectd-core >/dev/null
  fi
  if ((need_graphite_web)); then
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends graphite-web graphite-carbon python3-whisper >/dev/null
  fi
fi

# Disk: a CI machine may have little room. The test build leaves out debug info (as the release
# profile does; the `profiling` profile has it), and the fuzz build
# runs first and is deleted before the main build, so the two never take space at once.
export CARGO_PROFILE_RELEASE_DEBUG=0
# Time: the release profile's link-time optimisation (a minute or two per link here) would run
# again for each of some twenty test binaries; the tests check behaviour, which it leaves alone.
export CARGO_PROFILE_RELEASE_LTO=false
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
status=0
# Every decoder and parser under libFuzzer for a few seconds each (tests/fuzz/run.sh SECONDS).
echo "tests/fuzz: each cargo-fuzz target for 3 s, after building them (a few minutes)"
bash tests/fuzz/run.sh 3 2>&1 | tee "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
rm -rf tests/fuzz/target
cargo build --release --workspace 2>&1 | tee -a "$log"
if [ "${PIPESTATUS[0]}" -ne 0 ]; then
  # Nothing below can run without the build (the peer suites would take a stale binary).
  echo "tests: the build failed"
  exit 1
fi
# Code hygiene: formatting, lints, and layers that only point down (no import circle among
# any crate's top-level modules; .ci/layers.py prints the graph with --graph).
echo "tests/hygiene: cargo fmt --check, cargo clippy (no warnings), .ci/layers.py"
cargo fmt --all -- --check >/dev/null 2>&1 || { echo "tests: cargo fmt --all -- --check found unformatted code"; status=1; }
cargo clippy --workspace --all-targets --quiet -- -D warnings 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
python3 .ci/layers.py 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
cargo test --release --workspace 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
# Peer suites against real programs; each closes with a cargo-style `test result:` line.
echo "compat/prometheus: Debian's Prometheus 2.42 against tsgate (about a minute)"
bash compat/prometheus/run.sh 30 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
echo "compat/prometheus/auth: Debian's Prometheus remote-writing over HTTPS with basic_auth and tokens (about 15 s)"
bash compat/prometheus/auth.sh 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
echo "compat/graphite: Debian's collectd (write_graphite) against tsgate (about 10 s)"
bash compat/graphite/run.sh 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
echo "compat/graphite_web_compare: Debian's graphite-web 1.1.8 /render against tsgate, 705 targets (about 20 s)"
bash compat/graphite_web_compare/run.sh 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
echo "compat/graphite_web_compare whisper: the same, tsgate fed by tsgate import --from whisper (about 20 s)"
bash compat/graphite_web_compare/run.sh whisper 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
echo "compat/relays: carbon-c-relay and carbon-relay (pickle) relaying to tsgate (about 10 s)"
bash compat/relays/run.sh 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
echo "compat/graphite_web_compare carbon-cache: the same, on whisper files Debian's carbon-cache wrote from the plaintext stream, imported (about 25 s)"
bash compat/graphite_web_compare/run.sh carbon-cache 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
echo "compat/senders: influxdb-client and the OpenTelemetry SDK's OTLP/HTTP exporter against tsgate (about 10 s; pip-installs them if missing)"
bash compat/senders/run.sh 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
echo "compat/package: cargo deb, dpkg -i, the unit's ExecStart serving from /var/lib/tsgate, dpkg --purge (about 20 s; cargo-installs cargo-deb if missing)"
if [ "$(id -u)" = 0 ]; then
  bash compat/package/run.sh 2>&1 | tee -a "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
else
  echo "compat/package: skipped (dpkg -i needs root)"
fi
set -e
# One closing line for the whole run, summed over every test binary.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($i ~ /^passed/) p += $(i-1); if ($i ~ /^failed/) f += $(i-1) } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
