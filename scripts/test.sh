#!/usr/bin/env bash
# README command 2: install what is needed, build, run every test suite, and print one closing
# line that counts the tests of all Criterion suites together.
# Then the hardening checks (skipped with HARDENING=0): every fuzz harness for
# FUZZ_SECONDS (default 20), the unit suites again under ASan + UBSan (scripts/sanitize.sh
# asan) and valgrind on a short perf run; their results are in the same closing line.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh || exit 1
bash scripts/build.sh || exit 1
meson test -C build --print-errorlogs --num-processes 1 "$@"
rc=$?
logs=(build/meson-logs/testlog.json)
if [ "${HARDENING:-1}" != 0 ]; then
  start=$SECONDS
  bash tests/fuzz/run.sh "${FUZZ_SECONDS:-20}" || rc=1
  echo "test.sh: fuzzing took $((SECONDS - start)) s"
  start=$SECONDS
  # Not the integration suites: they fork ranks from a process whose other threads allocate,
  # and gcc 12's ASan allocator lock, taken by such a thread at the fork, stays taken in the
  # child, which then hangs on its first allocation (a runtime limitation; run them with
  # scripts/sanitize.sh asan --suite integ on a newer toolchain).
  bash scripts/sanitize.sh asan --suite unit --suite example --suite build "$@" || rc=1
  echo "test.sh: the ASan + UBSan suites took $((SECONDS - start)) s"
  vg=failed
  bash scripts/sanitize.sh valgrind && vg=ok
  echo "valgrind_all_reduce_perf $vg" >build/valgrind-result.txt
  logs+=(build-asan/meson-logs/testlog-sanitize.json --plain build-fuzz/fuzz-results.txt
         --plain build/valgrind-result.txt)
fi
python3 scripts/test-summary.py "${logs[@]}"
summary_rc=$?
[ $rc -eq 0 ] && [ $summary_rc -eq 0 ]
