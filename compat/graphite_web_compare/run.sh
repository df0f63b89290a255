#!/usr/bin/env bash
# Debian's graphite-web 1.1.8 (run in-process through Django's test client, on whisper files
# written with python3-whisper) against tsgate's /render (the same points sent as carbon
# plaintext): 32 target expressions over one fixed window must give the same series names,
# timestamps and values (1e-9 relative). Ends with a summary and a cargo-style `test result:` line.
# With `whisper`, tsgate gets the points from the whisper files themselves (`tsgate import --from
# whisper`, before it starts) instead of as carbon plaintext.
# usage: bash compat/graphite_web_compare/run.sh [whisper]
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
fi
"$TSGATE" serve --config "$work/tsgate.toml" >"$work/tsgate.log" 2>&1 & pid=$!; pids+=("$pid")
wait_up "http://127.0.0.1:$TS/api/version"

status=0
timeout 120 "$PY" "$here/compare.py" "$work" "$TS" "$GP" "$mode" || status=$?
if [ "$status" -ne 0 ]; then
  echo "--- tsgate log (tail)"; tail -20 "$work/tsgate.log"
fi
exit "$status"
