#!/usr/bin/env bash
# Builds every cargo-fuzz target and runs each for SECONDS from its seed corpus
# (tests/fuzz/corpus/<target>); a crash, panic, leak of memory past 2 GiB or a 10 s input is a
# failure, its input saved under tests/fuzz/artifacts/<target>/.
# Usage: bash tests/fuzz/run.sh [SECONDS (default 10)] [TARGET…]
# Ends with one cargo-style line, `test result: ok. N passed; M failed; …`, and exits non-zero
# when a target failed (tests/run.sh folds it into the run's status).
set -uo pipefail
cd "$(dirname "$0")"
secs=${1:-10}
shift || true

if ! command -v cargo-fuzz >/dev/null; then
  echo "fuzz: installing cargo-fuzz"
  cargo install cargo-fuzz --locked || exit 1
fi
# libFuzzer's instrumentation needs nightly flags: the nightly toolchain when rustup has one,
# else the stable compiler told to accept them.
if command -v rustup >/dev/null && rustup toolchain list | grep -q '^nightly'; then
  fuzz=(cargo +nightly fuzz)
else
  export RUSTC_BOOTSTRAP=1
  fuzz=(cargo fuzz)
fi
# Safe Rust: what we hunt is panics, aborts, unbounded memory and time, which need no
# sanitizer; `none` also builds much faster on 2 cores.
common=(--fuzz-dir . --sanitizer none)

if (($#)); then
  targets=("$@")
else
  mapfile -t targets < <("${fuzz[@]}" list --fuzz-dir .)
fi

start=$(date +%s)
echo "fuzz: building ${#targets[@]} targets"
blog=$(mktemp)
trap 'rm -f "$blog"' EXIT
if ! "${fuzz[@]}" build "${common[@]}" >"$blog" 2>&1; then
  tail -30 "$blog"
  echo "test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in $(($(date +%s) - start))s"
  exit 1
fi

# Longest input per target: text grammars are short; protobuf and pickle bodies need room.
max_len() {
  case $1 in
    prom_* | graphite_pickle | schema_columns | graphite_name_rules) echo 4096 ;;
    opentsdb_put_json | opentsdb_query_json | graphite_plaintext | opentsdb_telnet | opentsdb_import) echo 2048 ;;
    *) echo 512 ;;
  esac
}

passed=0
failed=0
failures=()
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "corpus-run/$t" "artifacts/$t"
  log="artifacts/$t/last-run.log"
  # The first directory receives what libFuzzer finds; the committed seeds stay as they are.
  "${fuzz[@]}" run "${common[@]}" "$t" "corpus-run/$t" "corpus/$t" -- \
    -max_total_time="$secs" -max_len="$(max_len "$t")" -rss_limit_mb=2048 -malloc_limit_mb=2048 \
    -timeout=10 -print_final_stats=1 >"$log" 2>&1
  rc=$?
  execs=$(awk '$1 == "stat::number_of_executed_units:" { print $2 }' "$log" | tail -1)
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
    echo "fuzz $t ... ok (${execs:-?} runs in ${secs}s)"
  else
    failed=$((failed + 1))
    failures+=("$t")
    echo "fuzz $t ... FAILED (exit $rc); input and log in tests/fuzz/artifacts/$t/"
    # The first lines of what went wrong (cargo-fuzz repeats the log as one long line: cut it).
    grep -m1 -A1 -E "panicked at|ERROR: libFuzzer" "$log" | cut -c1-300 | sed 's/^/    /'
    ls artifacts/"$t"/ | grep -v last-run.log | head -3 | sed "s|^|    input: tests/fuzz/artifacts/$t/|"
  fi
done

elapsed=$(($(date +%s) - start))
if ((failed)); then
  echo "fuzz failures: ${failures[*]}"
  echo "test result: FAILED. $passed passed; $failed failed; 0 ignored; 0 measured; 0 filtered out; finished in ${elapsed}s"
  exit 1
fi
echo "test result: ok. $passed passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in ${elapsed}s"
