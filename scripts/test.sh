#!/usr/bin/env bash
# README command 2: install what is needed, build, run every test suite, and print one closing
# line that counts the tests of all Criterion suites together.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh || exit 1
bash scripts/build.sh || exit 1
meson test -C build --print-errorlogs --num-processes 1 "$@"
rc=$?
bash scripts/test-summary.sh build/meson-logs/testlog.txt
summary_rc=$?
[ $rc -eq 0 ] && [ $summary_rc -eq 0 ]
