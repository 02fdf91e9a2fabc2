#!/usr/bin/env bash
# Build the libFuzzer harnesses (tests/fuzz/fuzz_*.c) with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer in ./build-fuzz, and run each for a bounded time.
#   tests/fuzz/run.sh [seconds] [harness...]    seconds per harness: $1, else FUZZ_SECONDS, else 60
# New inputs go to build-fuzz/fuzz-corpus/<harness> (the seeds in tests/fuzz/corpus stay as
# they are). A crash or a failed invariant keeps its input in build-fuzz/fuzz-crashes/ and
# makes the script exit non-zero. build-fuzz/fuzz-results.txt gets one "fuzz_<harness> ok|failed"
# line each (scripts/test.sh counts them). Last line: "fuzz: N harnesses, N executions, N crashed".
# fuzz_topo forks a probe per input (topology/xml_probe.c); a probe that hwloc crashes prints
# the sanitizer's report and may leave a crash-/oom- file here although the harness goes on:
# only a harness's exit status counts, and the input named is the last one written.
set -uo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-${FUZZ_SECONDS:-60}}
shift $(( $# > 0 ? 1 : 0 ))
build=${FUZZ_BUILD:-build-fuzz}
if [ ! -f "$build/build.ninja" ]; then
  CC=clang meson setup "$build" -Dfuzz=true -Dtests=false -Dperf=false \
    -Db_sanitize=address,undefined -Db_lundef=false >"$build.setup.log" 2>&1 ||
    { cat "$build.setup.log"; echo "fuzz: configuring $build failed"; exit 1; }
  rm -f "$build.setup.log"
fi
if ! ninja -C "$build" >/dev/null; then
  ninja -C "$build"
  echo "fuzz_build failed" >"$build/fuzz-results.txt"
  echo "fuzz: build failed"
  exit 1
fi

harnesses=("$@")
if [ ${#harnesses[@]} -eq 0 ]; then
  for f in tests/fuzz/fuzz_*.c; do h=$(basename "$f" .c); harnesses+=("${h#fuzz_}"); done
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/fuzz/lsan.supp}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
total=0
crashed=0
results="$build/fuzz-results.txt"
: >"$results"
for h in "${harnesses[@]}"; do
  exe="$build/tests/fuzz/fuzz_$h"
  work="$build/fuzz-corpus/$h"
  crashes="$build/fuzz-crashes"
  log="$build/fuzz-$h.log"
  mkdir -p "$work" "$crashes"
  start=$(date +%s)
  "$exe" -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 -max_len=4096 \
    -print_final_stats=1 -artifact_prefix="$crashes/$h-" "$work" "tests/fuzz/corpus/$h" \
    >"$log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  runs=${runs:-0}
  total=$((total + runs))
  took=$(( $(date +%s) - start ))
  if [ $rc -eq 0 ]; then
    echo "fuzz_$h: $runs executions in ${took}s, corpus $(ls "$work" | wc -l) inputs, ok"
    echo "fuzz_$h ok" >>"$results"
  else
    crashed=$((crashed + 1))
    kept=$(sed -n 's/.*Test unit written to //p' "$log" | tail -1)
    echo "fuzz_$h: CRASHED after $runs executions (exit $rc); input kept: ${kept:-see $log}"
    grep -aE "invariant failed|ERROR: |runtime error" "$log" | head -5 | sed 's/^/  /'
    echo "fuzz_$h failed" >>"$results"
  fi
done
echo "fuzz: ${#harnesses[@]} harnesses, $total executions, $crashed crashed"
[ $crashed -eq 0 ]
