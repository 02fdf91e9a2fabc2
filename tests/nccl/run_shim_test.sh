#!/usr/bin/env bash
# Run tests/nccl/shim_test.c's program the way a program built for NCCL meets the shim: check
# first, with ldd, that the dynamic loader resolves its libnccl.so.2 to the shim (the system's
# ld.so.cache names the real NCCL under /usr/local/cuda; the program's RUNPATH must win), then
# run it. Skips (77) where NVIDIA's nccl.h was missing at build time.
#   run_shim_test.sh PROGRAM SHIM NRANKS
set -euo pipefail
prog=$1 shim=$2 n=$3
if [ "$prog" = none ]; then
  echo "SKIP: /usr/local/cuda/include/nccl.h is not installed: nothing to build a program for NCCL with"
  exit 77
fi
resolved=$(ldd "$prog" | awk '$1 == "libnccl.so.2" { print $3 }')
echo "ldd: libnccl.so.2 => $resolved"
if [ "$(readlink -f "$resolved")" != "$(readlink -f "$shim")" ]; then
  echo "FAIL: the loader picks $resolved, not the shim $shim"
  exit 1
fi
if ldconfig -p | grep -q 'libnccl.so.2 '; then
  echo "(the system's cache also knows: $(ldconfig -p | awk '/libnccl.so.2 / { print $NF; exit }'))"
fi
exec "$prog" "$shim" "$n"
