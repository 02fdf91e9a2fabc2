#!/usr/bin/env bash
# NCCL's environment variables under the shim (src/nccl/nccl_env.c), through tests/nccl's
# program on 3 ranks: NCCL_DEBUG / NCCL_DEBUG_SUBSYS set tutti's level and subsystems, rank 0
# says which library answers, NCCL_SOCKET_IFNAME picks the interface, NCCL_SHM_DISABLE=1 means
# TCP between every pair, a TUTTI_* variable wins over its NCCL_* one, and an NCCL_* variable
# without an equivalent is named in a warning. Skips (77) where NVIDIA's nccl.h was missing.
#   run_shim_env.sh PROGRAM SHIM
set -u
prog=$1 shim=$2
if [ "$prog" = none ]; then
  echo "SKIP: /usr/local/cuda/include/nccl.h is not installed: nothing to build a program for NCCL with"
  exit 77
fi
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
has() { grep -Eq -- "$2" <<<"$1" || fail "$3"; }
lacks() { ! grep -Eq -- "$2" <<<"$1" || fail "$3"; }

out=$(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET NCCL_SOCKET_IFNAME=lo NCCL_SHM_DISABLE=1 \
  NCCL_PROTO=Simple "$prog" "$shim" 3 2>&1) || fail "the program failed under NCCL_* settings"
has "$out" "INIT NCCL version 2\.[0-9]+\.[0-9]+: tutti [0-9.]+ behind NCCL's interface" \
  "NCCL_DEBUG=INFO: no version line"
has "$out" "INFO/INIT tutti [0-9.]+: rank 0 of 3 ready: .*transports attached: tcp;" \
  "NCCL_SHM_DISABLE=1 did not leave TCP alone"
has "$out" "INFO/NET tcp: rank 0 listens on 127\.0\.0\.1:" "NCCL_SOCKET_IFNAME=lo was not used"
lacks "$out" "INFO/BOOT" "NCCL_DEBUG_SUBSYS=INIT,NET let bootstrap lines through"
has "$out" "WARN NCCL_PROTO is not read by tutti's NCCL shim" "NCCL_PROTO was not named"
lacks "$out" "NCCL_(DEBUG|DEBUG_SUBSYS|SOCKET_IFNAME|SHM_DISABLE) is not read" \
  "a variable the shim reads was called unknown"

out=$(NCCL_DEBUG=WARN NCCL_SHM_DISABLE=1 TUTTI_TRANSPORT=auto TUTTI_LOG_LEVEL=info \
  "$prog" "$shim" 3 2>&1) || fail "the program failed with TUTTI_TRANSPORT=auto"
has "$out" "rank 0 of 3 ready: .*transports attached: shm" \
  "TUTTI_TRANSPORT did not win over NCCL_SHM_DISABLE"

out=$(NCCL_DEBUG=WARN "$prog" "$shim" 3 2>&1) || fail "the program failed with NCCL_DEBUG=WARN"
lacks "$out" "NCCL version" "NCCL_DEBUG=WARN printed the version line"
lacks "$out" "INFO/" "NCCL_DEBUG=WARN let info lines through"

[ "$fails" -eq 0 ] && echo "run_shim_env: NCCL_* variables honoured"
exit $((fails > 0))
