#!/usr/bin/env bash
# The config checks of tests/nccl/api232_test on 3 ranks, with tutti's log at info, and what
# their logs must say (src/nccl/config.c): one warning per communicator naming the
# ncclConfig_t fields tutti accepts without effect, minCTAs 3..maxCTAs 4 giving 3 channels, a
# split naming the CTA bounds it cannot apply; each ncclCollConfig_t field named once per
# communicator however many calls carry it.
#   run_api232_config.sh PROGRAM
set -u
prog=$1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
count() { grep -Ec -- "$2" <<<"$1"; }
want() { local c; c=$(count "$1" "$2"); [ "$c" -eq "$3" ] || fail "$4 ($c lines, want $3)"; }

out=$(TUTTI_LOG_LEVEL=info "$prog" comm_config 3 2>&1) || fail "comm_config failed"
want "$out" "communicator 'cfgtest': config fields accepted with no effect in tutti: netName 'IB' \(transport per pair: TUTTI_TRANSPORT\), splitShare 1 .*graphUsageMode 0 .*hostCftMode 2" \
  3 "the init's warning is not one per rank naming every field"
want "$out" "maxCTAs 1 \(a split keeps its parent's channels\)" 3 "the split's CTA bounds were not named"
[ "$(count "$out" "rank [0-9] of 3 ready: .*; 3 channel\(s\)")" -ge 1 ] ||
  fail "minCTAs 3, maxCTAs 4 did not give 3 channels"
want "$out" "config fields accepted with no effect in tutti: minCTAs" 0 "an honoured field was named"

out=$(TUTTI_LOG_LEVEL=info "$prog" coll_config 3 2>&1) || fail "coll_config failed"
want "$out" "ncclCollConfig_t.maxCTAs 2 accepted with no effect" 3 \
  "ncclCollConfig_t.maxCTAs not named exactly once per communicator"
want "$out" "ncclCollConfig_t.userProfilerTag 0x2a accepted with no effect" 3 \
  "userProfilerTag not named once per communicator"
want "$out" "ncclCollConfig_t.algSelection 'ring' accepted with no effect" 3 \
  "an unforced algSelection not named once per communicator"

[ "$fails" -eq 0 ] && echo "2 passed, 0 failed" || echo "$fails failed"
exit $((fails > 0))
