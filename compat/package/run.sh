#!/usr/bin/env bash
# The Debian package, end to end (about 20 s after the release build): builds the .deb with
# cargo-deb from the existing target/release/tsgate (installs cargo-deb when missing), installs it
# with `dpkg -i`, checks what it put where (binary, unit, sample config, the tsgate user, the
# state directory), runs the unit's ExecStart exactly as written, as the unit's User (setpriv
# execs it as systemd does), in its WorkingDirectory, in a private network namespace (so the
# default ports are free), writes and reads a point, checks the store is in /var/lib/tsgate,
# then purges the package and removes the user and directory it made. Needs root (dpkg). Ends with a cargo-style `test result:` line.
# usage: bash compat/package/run.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
[ "$(id -u)" = 0 ] || { echo "compat/package: needs root (dpkg -i)" >&2; exit 2; }
[ -x target/release/tsgate ] || { echo "compat/package: build target/release/tsgate first (cargo build --release)" >&2; exit 2; }
if dpkg -s tsgate >/dev/null 2>&1; then
  echo "compat/package: a tsgate package is already installed here; not touching it" >&2; exit 2
fi
command -v cargo-deb >/dev/null || cargo install --locked cargo-deb
. "$root/compat/lib.sh"

passed=0; failed=0
check() { # name, then a command that must succeed
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"; else failed=$((failed + 1)); echo "FAIL $name"; fi
}
had_user=0; getent passwd tsgate >/dev/null && had_user=1
had_dir=0; [ -e /var/lib/tsgate ] && had_dir=1
undo() {
  dpkg --purge tsgate >/dev/null 2>&1 || true
  ((had_user)) || deluser --system --quiet tsgate >/dev/null 2>&1 || true
  ((had_dir)) || rm -rf /var/lib/tsgate
  rmdir /etc/tsgate 2>/dev/null || true
  cleanup
}
trap undo EXIT

# --fast: lighter compression (the package is thrown away).
deb=$(cargo deb --no-build --fast --output "$work/tsgate.deb" 2>"$work/cargo-deb.log" | tail -1) \
  || { cat "$work/cargo-deb.log" >&2; exit 1; }
check "cargo deb built $(basename "$deb")" test -s "$deb"
dpkg-deb -c "$deb" >"$work/contents"
for f in ./usr/bin/tsgate ./etc/tsgate/tsgate.toml 'lib/systemd/system/tsgate.service' \
    ./usr/share/doc/tsgate/copyright; do
  check "package holds $f" grep -q "$f\$" "$work/contents"
done
DEBIAN_FRONTEND=noninteractive dpkg -i "$deb" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log" >&2; exit 1; }
unit=$(dpkg -L tsgate | grep '/systemd/system/tsgate.service$' | head -1)
check "dpkg -i installed the unit" test -f "$unit"
check "postinst made the tsgate system user" sh -c '[ "$(getent passwd tsgate | cut -d: -f3)" -lt 1000 ]'
check "/var/lib/tsgate belongs to tsgate" sh -c '[ "$(stat -c %U:%G /var/lib/tsgate)" = tsgate:tsgate ]'
check "the config is readable by tsgate only" sh -c '[ "$(stat -c %a:%G /etc/tsgate/tsgate.toml)" = 640:tsgate ]'
if command -v systemd-analyze >/dev/null; then
  check "systemd-analyze verify accepts the unit" systemd-analyze verify "$unit"
fi

exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
user=$(sed -n 's/^User=//p' "$unit")
wd=$(sed -n 's/^WorkingDirectory=//p' "$unit")
check "ExecStart uses the installed config" test "$exec_start" = "/usr/bin/tsgate serve --config /etc/tsgate/tsgate.toml"
# The unit's command, as its user, in its directory, with the default ports of the shipped
# config, in a network namespace of its own (a server already on :4242 here does not matter).
cat >"$work/inside.sh" <<EOF
set -e
ip link set lo up
cd "$wd"
setpriv --reuid="$user" --regid="$user" --init-groups -- $exec_start >"$work/tsgate.log" 2>&1 &
pid=\$!
trap 'kill \$pid 2>/dev/null || true' EXIT
for _ in \$(seq 150); do curl -sf http://127.0.0.1:4242/api/version >/dev/null && break; sleep 0.2; done
curl -sf -X POST http://127.0.0.1:4242/api/put -d '{"metric":"pkg.check","timestamp":1700000000,"value":42,"tags":{"host":"deb"}}'
for _ in \$(seq 50); do
  out=\$(curl -sf 'http://127.0.0.1:4242/api/query?start=1699999999&end=1700000001&m=sum:pkg.check')
  case "\$out" in *'"1700000000":42'*) break;; esac
  sleep 0.2
done
echo "\$out" >"$work/query.json"
kill -TERM \$pid; wait \$pid
EOF
chmod 755 "$work"
check "the unit's command serves, stores and answers" unshare --net bash "$work/inside.sh"
check "the point was read back" grep -q '"1700000000":42' "$work/query.json"
check "the store is in /var/lib/tsgate" test -d /var/lib/tsgate/store -a -d /var/lib/tsgate/wal
check "the store's files belong to tsgate" sh -c '[ -z "$(find /var/lib/tsgate ! -user tsgate)" ]'
check "dpkg --purge removes the package" sh -c 'dpkg --purge tsgate >/dev/null'
check "the binary is gone" test ! -e /usr/bin/tsgate

echo "test result: $([ $failed = 0 ] && echo ok || echo FAILED). $passed passed; $failed failed"
[ $failed = 0 ]
