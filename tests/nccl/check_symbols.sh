#!/usr/bin/env bash
# The shim's exported host API against the real NCCL's: every symbol NVIDIA's libnccl.so.2
# exports must be exported by ours, and ours exports NCCL names only (nccl*, pnccl*).
# Skips (77) where the real library is not installed.
#   check_symbols.sh SHIM [REAL]
set -euo pipefail
shim=$1 real=${2:-/usr/local/cuda/lib64/libnccl.so.2}
if [ ! -e "$real" ]; then
  echo "SKIP: no real NCCL at $real to compare with"
  exit 77
fi
syms() { nm -D --defined-only "$1" | awk '{ print $NF }' | sed 's/@.*//' | sort -u; }
ours=$(syms "$shim") theirs=$(syms "$real")
missing=$(comm -23 <(echo "$theirs") <(echo "$ours"))
foreign=$(echo "$ours" | grep -v -E '^p?nccl' || true)
echo "real NCCL ($real): $(echo "$theirs" | wc -l) symbols; shim: $(echo "$ours" | wc -l)"
rc=0
if [ -n "$missing" ]; then
  echo "FAIL: missing from the shim:"; echo "$missing" | sed 's/^/  /'; rc=1
fi
if [ -n "$foreign" ]; then
  echo "FAIL: the shim exports non-NCCL names:"; echo "$foreign" | sed 's/^/  /'; rc=1
fi
extra=$(comm -13 <(echo "$theirs") <(echo "$ours"))
[ -z "$extra" ] || { echo "exported by the shim only:"; echo "$extra" | sed 's/^/  /'; }
[ $rc -ne 0 ] || echo "every host entry point of the real library is exported"
exit $rc
