#!/usr/bin/env bash
# README command 2: install what is needed, build, run every test suite, and print one closing
# line that counts the tests of all Criterion suites together.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh || exit 1
bash scripts/build.sh || exit 1
meson test -C build --print-errorlogs --num-processes 1 "$@"
rc=$?
python3 scripts/test-summary.py build/meson-logs/testlog.json
summary_rc=$?
[ $rc -eq 0 ] && [ $summary_rc -eq 0 ]
