#!/usr/bin/env bash
# Run the test suites under sanitizers, each in its own build directory.
#   scripts/sanitize.sh asan [meson test args]   build-asan: AddressSanitizer + UBSan (gcc),
#                                                 every finding fails its test
#   scripts/sanitize.sh tsan [meson test args]   build-tsan: ThreadSanitizer; Criterion test
#                                                 binaries abort under it (Criterion issue
#                                                 #274): use --suite example
#   scripts/sanitize.sh valgrind                  memcheck on a short all_reduce_perf run (2
#                                                 forked ranks, small sizes) from ./build
# The suites run with meson's 'sanitize' test setup (tests/meson.build: the sanitizers' options,
# longer timeouts). Last line: the count line of scripts/test-summary.py, or valgrind's verdict.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
shift $(( $# > 0 ? 1 : 0 ))

suites() {  # $1 build dir, $2 b_sanitize value; then meson test arguments
  local build=$1 san=$2
  shift 2
  if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" -Db_sanitize="$san" -Db_lundef=false -Dperf=false \
      -Dc_args=-fno-sanitize-recover=all >"$build.setup.log" 2>&1 ||
      { cat "$build.setup.log"; echo "sanitize: configuring $build failed"; return 1; }
    rm -f "$build.setup.log"
  fi
  ninja -C "$build" >/dev/null || { ninja -C "$build"; echo "sanitize: build failed"; return 1; }
  meson test -C "$build" --setup sanitize --print-errorlogs --num-processes 1 "$@"
  local rc=$?
  python3 scripts/test-summary.py "$build/meson-logs/testlog-sanitize.json"
  local summary_rc=$?
  [ $rc -eq 0 ] && [ $summary_rc -eq 0 ]
}

case "$mode" in
asan)
  suites build-asan address,undefined "$@"
  ;;
tsan)
  suites build-tsan thread "$@"
  ;;
valgrind)
  bash scripts/build.sh >/dev/null || { echo "sanitize: build failed"; exit 1; }
  log=build/valgrind.log
  # Forked ranks stay under valgrind (it follows fork); a definite leak or any invalid access in
  # any process fails the run (tests/valgrind.supp: blocks a rank inherits through fork).
  # Valgrind is ~20x slower: a generous TUTTI_TIMEOUT.
  TUTTI_TIMEOUT=120s valgrind --error-exitcode=99 --leak-check=full \
    --errors-for-leak-kinds=definite --show-leak-kinds=definite --track-fds=no \
    --suppressions=tests/valgrind.supp \
    --log-file="$log.%p" build/perf/all_reduce_perf -N 2 -b 8 -e 64K -f 16 -n 2 -w 1 -c 1
  rc=$?
  errors=$(cat "$log".* | grep -h "ERROR SUMMARY" | awk '{s += $4} END {print s + 0}')
  nproc=$(ls "$log".* | wc -l)
  grep -h -B2 -A12 "Invalid\|uninitialised\|definitely lost in" "$log".* | head -60
  rm -f "$log".*
  echo "valgrind: all_reduce_perf -N 2 exit $rc, $errors errors in $nproc processes"
  [ $rc -eq 0 ] && [ "$errors" -eq 0 ]
  ;;
*)
  echo "usage: scripts/sanitize.sh asan|tsan|valgrind [meson test arguments]" >&2
  exit 2
  ;;
esac
