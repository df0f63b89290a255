#!/usr/bin/env bash
# Debian's graphite-web 1.1.8 (run in-process through Django's test client, on whisper files
# written with python3-whisper) against tsgate's /render (the same points sent as carbon
# plaintext): 705 target expressions (compare.py) must give the same series names, timestamps,
# values (1e-9 relative) and tags, but for the few on its skip list, each with its reason. Ends
# with a summary and a cargo-style `test result:` line.
# With `whisper`, tsgate gets the points from the whisper files themselves (`tsgate import --from
# whisper`, before it starts) instead of as carbon plaintext. With `carbon-cache`, Debian's real
# carbon-cache (graphite-carbon) writes the whisper files from the carbon plaintext stream, and
# tsgate imports that tree.
# usage: bash compat/graphite_web_compare/run.sh [whisper|carbon-cache]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
TSGATE=${TSGATE:-$root/target/release/tsgate}
# Debian's own Python: graphite-web and whisper live in its dist-packages (a python3 first on PATH,
# e.g. pyenv's, does not see them).
PY=${GRAPHITE_PYTHON:-/usr/bin/python3}
"$PY" -c 'import graphite.render, whisper' 2>/dev/null ||
  { echo "compat/graphite_web_compare: graphite-web is missing (tests/run.sh installs graphite-web python3-whisper)" >&2; exit 2; }
. "$root/compat/lib.sh"
TS=$(port); GP=$(port)

cat >"$work/tsgate.toml" <<TOML
data_dir = "$work/tsgate"
[server]
listen = "127.0.0.1:$TS"
graphite_listen = "127.0.0.1:$GP"
pickle_listen = ""
[write]
flush_interval_ms = 200
TOML
mode=carbon
if [ "${1:-}" = whisper ]; then
  mode=imported
  "$PY" "$here/compare.py" "$work" "$TS" "$GP" write
  "$TSGATE" import --config "$work/tsgate.toml" --from whisper --quiet "$work/whisper"
elif [ "${1:-}" = carbon-cache ]; then
  mode=imported
  command -v carbon-cache >/dev/null ||
    { echo "compat/graphite_web_compare: carbon-cache is missing (tests/run.sh installs graphite-carbon)" >&2; exit 2; }
  CP=$(port); CPP=$(port); CQ=$(port)
  mkdir -p "$work/carbon" "$work/whisper"
  # One 10 s archive of 3 d (120 s for w.slow, written every 120 s), averaged, xFilesFactor 0:
  # what compare.py's own files hold.
  cat >"$work/carbon/storage-schemas.conf" <<CONF
[slow]
pattern = ^w\\.slow$
retentions = 120s:3d
[all]
pattern = .*
retentions = 10s:3d
CONF
  cat >"$work/carbon/storage-aggregation.conf" <<CONF
[all]
pattern = .*
xFilesFactor = 0
aggregationMethod = average
CONF
  cat >"$work/carbon/carbon.conf" <<CONF
[cache]
STORAGE_DIR = $work/carbon/
LOCAL_DATA_DIR = $work/whisper/
WHITELISTS_DIR = $work/carbon/lists/
CONF_DIR = $work/carbon/
LOG_DIR = $work/carbon/log/
PID_DIR = $work/carbon/
ENABLE_LOGROTATION = False
USER =
MAX_CACHE_SIZE = inf
MAX_UPDATES_PER_SECOND = 100000
MAX_CREATES_PER_MINUTE = inf
LINE_RECEIVER_INTERFACE = 127.0.0.1
LINE_RECEIVER_PORT = $CP
ENABLE_UDP_LISTENER = False
PICKLE_RECEIVER_INTERFACE = 127.0.0.1
PICKLE_RECEIVER_PORT = $CPP
CACHE_QUERY_INTERFACE = 127.0.0.1
CACHE_QUERY_PORT = $CQ
WHISPER_AUTOFLUSH = True
# Tagged series under their names (_tagged/xxx/yyy/disk_DOT_used;dc=east.wsp), not under the
# hash of them (carbon's default), so that tsgate's import can tell what a file holds without
# carbon's tag database.
TAG_HASH_FILENAMES = False
CONF
  carbon-cache --config="$work/carbon/carbon.conf" --pidfile="$work/carbon/carbon.pid" --nodaemon \
    --logdir="$work/carbon/log" start >"$work/carbon.log" 2>&1 & cpid=$!; pids+=("$cpid")
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$CP") 2>/dev/null && break
    kill -0 "$cpid" 2>/dev/null || { echo "carbon-cache did not start:"; tail -20 "$work/carbon.log"; exit 1; }
    sleep 0.1
  done
  "$PY" "$here/compare.py" "$work" "$TS" "$CP" send
  kill "$cpid"; wait "$cpid" 2>/dev/null || true
  "$TSGATE" import --config "$work/tsgate.toml" --from whisper --quiet "$work/whisper"
fi
"$TSGATE" serve --config "$work/tsgate.toml" >"$work/tsgate.log" 2>&1 & pid=$!; pids+=("$pid")
wait_up "http://127.0.0.1:$TS/api/version"

status=0
timeout 600 "$PY" "$here/compare.py" "$work" "$TS" "$GP" "$mode" || status=$?
if [ "$status" -ne 0 ]; then
  echo "--- tsgate log (tail)"; tail -20 "$work/tsgate.log"
fi
exit "$status"
